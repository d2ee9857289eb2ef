#include "core/sse_parser.hpp"

#include <limits>

namespace tidings::core {

namespace {

std::optional<int> parse_retry(std::string_view value) {
  if (value.empty()) return std::nullopt;
  long long ms = 0;
  for (char ch : value) {
    if (ch < '0' || ch > '9') return std::nullopt;
    ms = ms * 10 + (ch - '0');
    // Too large to be a sensible reconnection time: ignore the field.
    if (ms > std::numeric_limits<int>::max()) return std::nullopt;
  }
  return static_cast<int>(ms);
}

}  // namespace

sse_parser::sse_parser(std::size_t max_message_bytes) : max_bytes_(max_message_bytes) {}

bool sse_parser::feed(std::string_view chunk, const std::function<void(sse_message&&)>& on_message) {
  while (!failed_ && !chunk.empty()) {
    if (last_was_cr_) {
      // The '\n' of a "\r\n" whose '\r' already ended the line.
      last_was_cr_ = false;
      if (chunk.front() == '\n') {
        chunk.remove_prefix(1);
        continue;
      }
    }
    auto brk = chunk.find_first_of("\r\n");
    if (in_comment_ || (line_.empty() && chunk.front() == ':')) {
      // A comment is dropped as it arrives, never buffered: it counts against
      // no limit however long it is and however the reads split it.
      in_comment_ = brk == std::string_view::npos;
      if (in_comment_) break;
      last_was_cr_ = chunk[brk] == '\r';
      chunk.remove_prefix(brk + 1);
      continue;
    }
    if (brk == std::string_view::npos) {
      // An unterminated line counts against the limit too, or one endless
      // line would grow line_ without bound.
      if (line_.size() + chunk.size() + pending_bytes_ > max_bytes_) {
        failed_ = true;
        break;
      }
      line_.append(chunk);
      break;
    }
    last_was_cr_ = chunk[brk] == '\r';
    if (line_.empty()) {
      on_line(chunk.substr(0, brk), on_message);
    } else {
      if (line_.size() + brk + pending_bytes_ > max_bytes_) {
        failed_ = true;
        break;
      }
      line_.append(chunk.substr(0, brk));
      on_line(line_, on_message);
      line_.clear();  // keeps its capacity for the next split line
    }
    chunk.remove_prefix(brk + 1);
  }
  return !failed_;
}

void sse_parser::on_line(std::string_view line, const std::function<void(sse_message&&)>& on_message) {
  if (failed_) return;
  if (line.empty()) {
    if (has_data_ || !pending_.event.empty()) {
      if (!pending_.data.empty()) pending_.data.pop_back();  // the '\n' of the last data line
      sse_message msg = std::move(pending_);
      pending_ = sse_message{};
      has_data_ = false;
      pending_bytes_ = 0;
      on_message(std::move(msg));
    } else {
      pending_ = sse_message{};
      pending_bytes_ = 0;
    }
    return;
  }
  if (line.front() == ':') return;  // comment

  pending_bytes_ += line.size() + 1;
  if (pending_bytes_ > max_bytes_) {
    failed_ = true;
    return;
  }

  std::string_view field = line;
  std::string_view value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    pending_.data.append(value);
    pending_.data += '\n';
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) {
      last_id_ = std::string(value);
      pending_.id = last_id_;
    }
  } else if (field == "retry") {
    if (auto ms = parse_retry(value)) retry_ms_ = ms;
  }
}

}  // namespace tidings::core
