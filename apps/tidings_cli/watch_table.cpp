#include "apps/tidings_cli/watch_table.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidings::cli {

namespace {

constexpr std::size_t column_count = 6;
using row = std::array<std::string, column_count>;

// A cell stays on its line: control characters (a newline in an error
// message, an escape sequence in a URI) become spaces.
std::string cell_text(std::string text) {
  for (auto& ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) ch = ' ';
  }
  return text;
}

std::string text_of(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  return cell_text(it->is_string() ? it->get<std::string>()
                                   : it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Width on a terminal, near enough: UTF-8 code points, not bytes.
std::size_t display_width(const std::string& text) {
  std::size_t n = 0;
  for (const char ch : text) {
    if ((static_cast<unsigned char>(ch) & 0xc0) != 0x80) ++n;
  }
  return n;
}

std::string state_cell(const nlohmann::json& w) {
  std::string out = text_of(w, "state");
  const auto restore_failed = w.find("restore_failed");
  if (restore_failed != w.end() && restore_failed->is_boolean() && restore_failed->get<bool>() &&
      out != "restore_failed") {
    out += " (restore failed)";
  }
  const auto filter_errors = w.find("filter_errors");
  if (filter_errors != w.end() && filter_errors->is_number_unsigned() &&
      filter_errors->get<std::uint64_t>() > 0) {
    const auto n = filter_errors->get<std::uint64_t>();
    out += " (" + std::to_string(n) + (n == 1 ? " filter error)" : " filter errors)");
  }
  if (const auto error = text_of(w, "error"); !error.empty()) out += ": " + error;
  return out;
}

}  // namespace

std::optional<std::string> watch_table(const std::string& list_json) {
  const auto list = nlohmann::json::parse(list_json, nullptr, false);
  if (!list.is_array()) return std::nullopt;
  if (list.empty()) return std::string("no watches\n");

  std::vector<row> rows{{"NAME", "URI", "SHAPE", "EVENTS", "NOTICES", "STATE"}};
  for (const auto& w : list) {
    if (!w.is_object()) return std::nullopt;
    rows.push_back({text_of(w, "name"), text_of(w, "uri"), text_of(w, "shape"), text_of(w, "events"),
                    text_of(w, "notices"), state_cell(w)});
  }

  std::array<std::size_t, column_count> widths{};
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < column_count; ++i) widths[i] = std::max(widths[i], display_width(r[i]));
  }
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < column_count; ++i) {
      out += r[i];
      // The last column is not padded, so no line ends in spaces.
      if (i + 1 < column_count) out.append(widths[i] - display_width(r[i]) + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

}  // namespace tidings::cli
