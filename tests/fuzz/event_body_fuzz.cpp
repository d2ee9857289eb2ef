// core/event_body.hpp: the body of every publish. Invariants: an accepted
// body holds 1 to 1000 events (exactly one for a single object), each with a
// path and type that pass their checks and data that is compact JSON; a
// refused body leaves the output alone; the pre-parse nesting scan is exact
// for valid JSON.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/event_body.hpp"
#include "fuzz_check.hpp"

using namespace tidings;
using json = nlohmann::json;

namespace {

// Depth of a parsed value: 0 for a scalar, 1 for [] or {}, ... Iterative, so
// a deep value cannot overflow the stack here.
std::size_t depth_of(const json& value) {
  std::size_t deepest = 0;
  std::vector<std::pair<const json*, std::size_t>> stack{{&value, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);

  core::event_body body;
  body.single = false;
  body.events.resize(1);
  body.events[0].path = "/untouched";
  auto error = core::parse_event_body(text, body);
  bool shallow = core::json_nesting_within(text, core::max_json_nesting);

  if (error) {
    FUZZ_CHECK(!error->empty());
    FUZZ_CHECK(!body.single && body.events.size() == 1 && body.events[0].path == "/untouched");
    FUZZ_CHECK(shallow || *error == "JSON nests deeper than 128 levels");
  } else {
    FUZZ_CHECK(shallow);
    FUZZ_CHECK(text.find('\0') == std::string_view::npos);
    FUZZ_CHECK(!body.events.empty() && body.events.size() <= core::max_publish_events);
    FUZZ_CHECK(!body.single || body.events.size() == 1);
    for (const core::event& ev : body.events) {
      FUZZ_CHECK(!core::check_event_path(ev.path));
      FUZZ_CHECK(!core::check_event_type(ev.type));
      FUZZ_CHECK(fuzz::valid_utf8(ev.data_json));
      json data = json::parse(ev.data_json, nullptr, false);
      FUZZ_CHECK(!data.is_discarded());
      FUZZ_CHECK(data.dump() == ev.data_json);  // already compact
    }
  }

  // The scan that guards the recursive parser agrees with the parser's depth.
  // (nlohmann stops at a NUL byte; the scan does not.)
  json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_discarded() && text.find('\0') == std::string_view::npos) {
    std::size_t depth = depth_of(parsed);
    FUZZ_CHECK(core::json_nesting_within(text, depth));
    FUZZ_CHECK(depth == 0 || !core::json_nesting_within(text, depth - 1));
  }
  return 0;
}
