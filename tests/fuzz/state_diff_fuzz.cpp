// core/read_extraction.hpp: every upstream read (HTTP, MCP, Kubernetes) goes
// through parse_state_text and diff_states, event-log bodies through
// extract_event_log, and each resulting event through default_notice_line.
// Input: two reads separated by the first NUL byte (without one, the two
// halves). Invariants: a read diffed against itself yields nothing;
// changed_paths is sorted and symmetric; notice lines are one line of valid
// UTF-8; an event log yields increasing seqs after last_seen.

#include <algorithm>
#include <string>
#include <vector>

#include "core/read_extraction.hpp"
#include "fuzz_check.hpp"

using namespace tidings;
using json = nlohmann::json;

namespace {

void check_notice(const json& fields) {
  std::string line = core::default_notice_line(fields);
  FUZZ_CHECK(fuzz::valid_utf8(line));
  FUZZ_CHECK(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos);
}

const json* field(const json& fields, const char* name) {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : &*it;
}

void check_diff(const json& before, const json& after) {
  for (const auto& e : core::diff_states(before, after)) {
    const json* type = field(e.fields, "type");
    FUZZ_CHECK(type != nullptr && type->is_string());
    FUZZ_CHECK(*type == "ADDED" || *type == "MODIFIED" || *type == "DELETED" || *type == "CHANGED");
    FUZZ_CHECK(field(e.fields, "key") != nullptr);
    if (const json* changed = field(e.fields, "changed"))
      FUZZ_CHECK(*type == "MODIFIED" && !changed->empty());
    check_notice(e.fields);
  }
}

void check_event_log(const json& body, std::optional<std::uint64_t> last_seen) {
  core::event_log_read out;
  out.last_seen = 424242;
  if (auto error = core::extract_event_log(body, last_seen, &out)) {
    FUZZ_CHECK(!error->empty());
    FUZZ_CHECK(out.events.empty() && out.last_seen == 424242u);  // untouched
    return;
  }
  if (last_seen && out.last_seen) {
    // Only a reset (the log started over) may move last_seen back.
    const json* reset = out.events.empty() ? nullptr : field(out.events[0].fields, "reset");
    bool was_reset = reset != nullptr && *reset == true;
    FUZZ_CHECK(was_reset || *out.last_seen >= *last_seen);
  }
  std::optional<std::uint64_t> previous;
  for (const auto& e : out.events) {
    check_notice(e.fields);
    const json* seq = field(e.fields, "seq");
    if (seq == nullptr || !seq->is_number_integer()) continue;  // GAP
    auto value = seq->get<std::uint64_t>();
    FUZZ_CHECK(!previous || value > *previous);
    FUZZ_CHECK(!out.last_seen || value <= *out.last_seen);
    previous = value;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto split = text.find('\0');
  std::string_view first = split == std::string_view::npos ? text.substr(0, size / 2) : text.substr(0, split);
  std::string_view second = split == std::string_view::npos ? text.substr(size / 2) : text.substr(split + 1);

  json before = core::parse_state_text(first);
  json after = core::parse_state_text(second);

  check_diff(before, after);
  check_diff(json(), after);  // a first read
  FUZZ_CHECK(core::diff_states(before, before).empty());
  FUZZ_CHECK(core::diff_states(after, after).empty());

  auto paths = core::changed_paths(before, after);
  FUZZ_CHECK(std::is_sorted(paths.begin(), paths.end()));
  FUZZ_CHECK(paths == core::changed_paths(after, before));
  FUZZ_CHECK(core::changed_paths(after, after).empty());

  // The second read as an event-log body, the first (when a number) as the
  // last seq already seen.
  std::optional<std::uint64_t> last_seen;
  if (before.is_number_unsigned()) last_seen = before.get<std::uint64_t>();
  check_event_log(after, last_seen);
  check_event_log(after, std::nullopt);
  check_notice(after);
  return 0;
}
