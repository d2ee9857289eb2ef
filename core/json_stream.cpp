#include "core/json_stream.hpp"

namespace tidings::core {

void json_stream::reset() {
  value_.clear();
  depth_ = 0;
  in_string_ = false;
  escaped_ = false;
}

std::string json_stream::feed(std::string_view data,
                              const std::function<void(std::string_view value)>& on_value) {
  std::size_t i = 0;
  while (i < data.size()) {
    if (depth_ == 0) {
      const char c = data[i++];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (c != '{' && c != '[') {
        reset();
        return std::string("unexpected '") + c + "' between JSON values (only objects and arrays are split)";
      }
      value_.push_back(c);
      depth_ = 1;
      continue;
    }
    // Scan to the end of the current value (or of the data), then copy the
    // whole run at once.
    const std::size_t start = i;
    bool complete = false;
    for (; i < data.size() && !complete; ++i) {
      const char c = data[i];
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        ++depth_;
      } else if (c == '}' || c == ']') {
        if (--depth_ == 0) complete = true;
      }
    }
    if (value_.size() + (i - start) > max_value_bytes_) {
      reset();
      return "a JSON value exceeds " + std::to_string(max_value_bytes_) + " bytes";
    }
    value_.append(data.substr(start, i - start));
    if (complete) {
      on_value(value_);
      value_.clear();
    }
  }
  return {};
}

}  // namespace tidings::core
