#include "tests/deploy/dockerfile_text.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/deploy/compose_file.hpp"

namespace tidings::testing::deploy {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Logical lines: comments dropped, a trailing backslash joins the next line.
std::vector<std::string> logical_lines(std::istream& in) {
  std::vector<std::string> out;
  std::string line, pending;
  while (std::getline(in, line)) {
    auto t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (t.back() == '\\') {
      pending += t.substr(0, t.size() - 1) + " ";
      continue;
    }
    out.push_back(pending + t);
    pending.clear();
  }
  if (!pending.empty()) out.push_back(pending);
  return out;
}

}  // namespace

bool stage::has(const std::string& keyword, const std::string& text) const {
  return std::any_of(instructions.begin(), instructions.end(), [&](const instruction& i) {
    return i.keyword == keyword && i.args.find(text) != std::string::npos;
  });
}

std::vector<stage> dockerfile_stages() {
  std::ifstream in(source_dir() / "Dockerfile");
  if (!in) throw std::runtime_error("cannot read the Dockerfile");
  std::vector<stage> stages;
  for (const auto& line : logical_lines(in)) {
    auto space = line.find_first_of(" \t");
    instruction i{line.substr(0, space), space == std::string::npos ? "" : trim(line.substr(space))};
    std::transform(i.keyword.begin(), i.keyword.end(), i.keyword.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    if (i.keyword == "FROM") {
      std::istringstream words(i.args);
      stage s;
      std::string as;
      while (words >> s.from && s.from.rfind("--", 0) == 0) {
      }  // past flags such as --platform=...
      words >> as >> s.name;
      stages.push_back(std::move(s));
    } else if (stages.empty()) {
      if (i.keyword != "ARG") throw std::runtime_error("Dockerfile: " + i.keyword + " before the first FROM");
    } else {
      stages.back().instructions.push_back(std::move(i));
    }
  }
  return stages;
}

}  // namespace tidings::testing::deploy
