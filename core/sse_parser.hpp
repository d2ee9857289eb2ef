#pragma once

// Client side of SSE (the CLI, the load tool, tests, fuzzing): an incremental
// parser following the WHATWG event-stream rules. Lines end in "\r\n", "\r"
// or "\n"; a blank line dispatches; "data" lines join with '\n'; comments
// (":...") are ignored; "retry" is exposed. Bounded: a message over
// max_message_bytes puts the parser into a failed state.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tidings::core {

struct sse_message {
  std::string event;  // empty for unnamed (data) events
  std::string data;
  std::optional<std::string> id;  // set when this message had an id field
};

class sse_parser {
 public:
  explicit sse_parser(std::size_t max_message_bytes = 1 << 20);

  // Feeds bytes; calls `on_message` for each complete message. Returns false
  // once the parser failed (message too large); further input is ignored.
  bool feed(std::string_view chunk, const std::function<void(sse_message&&)>& on_message);

  bool failed() const { return failed_; }
  // The last id seen (the EventSource "last event ID buffer").
  const std::string& last_event_id() const { return last_id_; }
  std::optional<int> retry_ms() const { return retry_ms_; }

 private:
  void on_line(std::string_view line, const std::function<void(sse_message&&)>& on_message);

  std::size_t max_bytes_;
  std::string line_;
  bool last_was_cr_ = false;
  bool in_comment_ = false;  // inside a comment line, which is skipped
  bool failed_ = false;
  sse_message pending_;
  bool has_data_ = false;
  std::size_t pending_bytes_ = 0;
  std::string last_id_;
  std::optional<int> retry_ms_;
};

}  // namespace tidings::core
