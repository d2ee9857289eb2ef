#include "core/stream_name.hpp"

#include "core/event.hpp"

namespace tidings::core {

namespace {

bool name_start(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}
bool name_char(char ch) {
  return name_start(ch) || ch == '.' || ch == '_' || ch == '-';
}

}  // namespace

bool valid_stream_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || !name_start(name.front())) return false;
  for (char ch : name)
    if (!name_char(ch)) return false;
  return true;
}

// Watch notices go to "watch:<name>" (DESIGN.md) and a source's events to
// "src:<hash>" (issue 4): names publishers cannot use but readers may.
bool readable_stream_name(std::string_view name) {
  for (std::string_view prefix : {watch_stream_prefix, source_stream_prefix}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    break;
  }
  return valid_stream_name(name);
}

std::optional<stream_selector> parse_stream_selector(std::string_view text) {
  stream_selector out;
  auto split = text.find(":/");
  if (split == std::string_view::npos) {
    out.stream = std::string(text);
  } else {
    out.stream = std::string(text.substr(0, split));
    out.prefix = std::string(text.substr(split + 1));
    if (check_event_path(out.prefix)) return std::nullopt;
  }
  if (!readable_stream_name(out.stream)) return std::nullopt;
  return out;
}

}  // namespace tidings::core
