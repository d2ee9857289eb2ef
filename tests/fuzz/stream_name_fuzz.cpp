// core/stream_name.hpp and core/event.hpp: stream names and `stream=`
// selectors come from URLs, event paths and types from publish bodies.
// Invariants: the checks agree with their documented grammars, and a selector
// that parses prints back to the same text and parses the same again.

#include <string>

#include "core/event.hpp"
#include "core/stream_name.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

namespace {

// [a-z0-9][a-z0-9._-]{0,127}, written out independently.
bool grammar_stream_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char ch = name[i];
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (!alnum && (i == 0 || (ch != '.' && ch != '_' && ch != '-'))) return false;
  }
  return true;
}

bool grammar_readable(std::string_view name) {
  if (name.starts_with("watch:")) return grammar_stream_name(name.substr(6));
  if (name.starts_with("src:")) return grammar_stream_name(name.substr(4));
  return grammar_stream_name(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);

  bool valid = core::valid_stream_name(text);
  bool readable = core::readable_stream_name(text);
  FUZZ_CHECK(valid == grammar_stream_name(text));
  FUZZ_CHECK(readable == grammar_readable(text));
  FUZZ_CHECK(!valid || readable);

  auto selector = core::parse_stream_selector(text);
  if (readable) {
    // A plain readable name is a selector for every path of that stream.
    FUZZ_CHECK(selector && selector->stream == text && selector->prefix.empty());
  }
  if (selector) {
    FUZZ_CHECK(core::readable_stream_name(selector->stream));
    FUZZ_CHECK(selector->prefix.empty() || !core::check_event_path(selector->prefix));
    std::string printed = selector->stream;
    if (!selector->prefix.empty()) printed += ":" + selector->prefix;
    FUZZ_CHECK(printed == text);
    auto again = core::parse_stream_selector(printed);
    FUZZ_CHECK(again && again->stream == selector->stream && again->prefix == selector->prefix);
  }

  if (!core::check_event_path(text)) {
    FUZZ_CHECK(text.starts_with('/'));
    FUZZ_CHECK(text.size() <= core::max_path_bytes);
    FUZZ_CHECK(fuzz::valid_utf8(text));
    FUZZ_CHECK(text.find('\n') == std::string_view::npos && text.find('\0') == std::string_view::npos);
  }
  if (!core::check_event_type(text)) {
    FUZZ_CHECK(!text.empty() && text.size() <= core::max_type_bytes);
    for (char ch : text)
      FUZZ_CHECK(ch != ':' && ch != '/' && ch != ' ' && static_cast<unsigned char>(ch) < 0x80);
  }
  return 0;
}
