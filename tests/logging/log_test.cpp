// logging/log.hpp: level specs ("info,source=debug"), the per-subsystem
// level check (a subsystem is an event's prefix before its first dot), and
// which lines write() really emits.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "logging/log.hpp"

namespace {

using namespace tidings::logging;

level_spec parsed(const std::string& text) {
  level_spec spec;
  auto err = parse_level_spec(text, &spec);
  INFO(text << ": " << err.value_or(""));
  REQUIRE_FALSE(err);
  return spec;
}

std::string parse_error(const std::string& text) {
  level_spec spec;
  spec.base = level::error;
  auto err = parse_level_spec(text, &spec);
  INFO(text);
  REQUIRE(err);
  CHECK(spec.base == level::error);  // left unchanged
  return *err;
}

// Restores the default levels when a test ends, whatever it set.
struct levels_reset {
  ~levels_reset() { set_min_level(level::info); }
};

// Everything write() puts on stderr while `body` runs.
template <class F>
std::string captured_stderr(F body) {
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(tmp), STDERR_FILENO);
  body();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

}  // namespace

TEST_CASE("a level spec is a base level and optional per-subsystem levels", "[logging]") {
  CHECK(parsed("info") == level_spec{});
  auto spec = parsed("warn,source=debug, webhook = error");
  CHECK(spec.base == level::warn);
  REQUIRE(spec.overrides.size() == 2);
  CHECK(spec.overrides[0] == std::pair<std::string, level>{"source", level::debug});
  CHECK(spec.overrides[1] == std::pair<std::string, level>{"webhook", level::error});
  CHECK(to_string(spec) == "warn,source=debug,webhook=error");
  CHECK(parsed(to_string(spec)) == spec);
  CHECK(parsed("debug").base == level::debug);
  CHECK(parsed("error").base == level::error);
}

TEST_CASE("a bad level spec says what is wrong", "[logging]") {
  CHECK(parse_error("").find("is not a level") != std::string::npos);
  CHECK(parse_error("loud").find("\"loud\" is not a level") != std::string::npos);
  CHECK(parse_error("INFO").find("is not a level") != std::string::npos);
  CHECK(parse_error("source=debug").find("must start with the level") != std::string::npos);
  CHECK(parse_error("info,source").find("not SUBSYSTEM=LEVEL") != std::string::npos);
  CHECK(parse_error("info,source=loud").find("source=loud: not a level") != std::string::npos);
  CHECK(parse_error("info,sorce=debug").find("unknown subsystem \"sorce\"") != std::string::npos);
  CHECK(parse_error("info,source=debug,source=warn").find("given twice") != std::string::npos);
  CHECK(parse_error("info,").find("not SUBSYSTEM=LEVEL") != std::string::npos);
}

TEST_CASE("an event's subsystem is its prefix before the first dot", "[logging]") {
  CHECK(subsystem_of("source.failed") == "source");
  CHECK(subsystem_of("mcp.server.started") == "mcp");
  CHECK(subsystem_of("nodot") == "nodot");
  for (auto name : subsystems()) CHECK(name.find('.') == std::string_view::npos);
}

TEST_CASE("without overrides the base level decides", "[logging]") {
  levels_reset reset;
  CHECK(current_levels() == level_spec{});
  CHECK_FALSE(enabled(level::debug, "watch.event"));
  CHECK(enabled(level::info, "watch.started"));
  set_min_level(level::warn);
  CHECK_FALSE(enabled(level::info, "node.listening"));
  CHECK(enabled(level::warn, "node.listening"));
  CHECK(enabled(level::error, "x"));
  CHECK_FALSE(enabled(level::info));
  set_min_level(level::debug);
  CHECK(enabled(level::debug, "watch.event"));
  CHECK(enabled(level::debug));
}

TEST_CASE("per-subsystem levels override the base for their events only", "[logging]") {
  levels_reset reset;
  set_levels(parsed("warn,source=debug,webhook=error"));
  CHECK(enabled(level::debug, "source.failed"));
  CHECK(enabled(level::info, "source.started"));
  CHECK_FALSE(enabled(level::warn, "webhook.unknown_token"));
  CHECK(enabled(level::error, "webhook.unknown_token"));
  CHECK_FALSE(enabled(level::info, "node.listening"));
  CHECK(enabled(level::warn, "node.drain_timeout"));
  // A prefix of a subsystem's name is another subsystem.
  CHECK_FALSE(enabled(level::info, "sourcery.x"));
  CHECK_FALSE(enabled(level::info, "sourc.x"));
  // enabled(level) asks whether any subsystem logs at it.
  CHECK(enabled(level::debug));
  CHECK(current_levels() == parsed("warn,source=debug,webhook=error"));

  // Changing the levels again (a reload) replaces them entirely.
  set_levels(parsed("info"));
  CHECK_FALSE(enabled(level::debug, "source.failed"));
  CHECK(enabled(level::info, "node.listening"));
  CHECK(enabled(level::info, "webhook.fired"));
  CHECK_FALSE(enabled(level::debug));
}

TEST_CASE("write() emits only the lines its levels let through", "[logging]") {
  levels_reset reset;
  set_levels(parsed("info,watch=warn,source=debug"));
  auto out = captured_stderr([] {
    debug("source.debug_line");
    debug("node.debug_line");
    info("watch.info_line");
    warn("watch.warn_line", {{"n", std::int64_t{3}}});
    info("node.info_line", {{"ok", true}});
  });
  CHECK(out.find("source.debug_line") != std::string::npos);
  CHECK(out.find("node.debug_line") == std::string::npos);
  CHECK(out.find("watch.info_line") == std::string::npos);
  CHECK(out.find("\"level\":\"warn\",\"event\":\"watch.warn_line\",\"n\":3}") != std::string::npos);
  CHECK(out.find("\"event\":\"node.info_line\",\"ok\":true}") != std::string::npos);
}

// A new event prefix must join the known subsystems, or no level spec could
// name it (a typo in a spec is an error, so the list has to be complete).
TEST_CASE("every event name in the source tree has a known subsystem") {
  namespace fs = std::filesystem;
  const std::regex call(R"(logging::(debug|info|warn|error)\(\s*"([a-z_]+)\.)");
  std::set<std::string> prefixes;
  for (const char* dir : {"actors", "apps", "broker", "filters", "persistence", "relay", "sources"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(TIDINGS_SOURCE_DIR) / dir)) {
      auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it)
        prefixes.insert((*it)[2].str());
    }
  }
  REQUIRE(prefixes.size() > 5);
  auto known = subsystems();
  for (const auto& p : prefixes) {
    INFO(p);
    CHECK(std::find(known.begin(), known.end(), p) != known.end());
  }
}
