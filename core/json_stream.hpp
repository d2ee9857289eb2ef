#pragma once

// An incremental splitter for a byte stream of concatenated JSON values, as
// a Kubernetes watch (or `kubectl get -w -o json`) sends them: values
// separated by optional whitespace, cut into chunks at arbitrary bytes. It
// only finds value boundaries (braces and brackets outside strings, with
// escapes); the caller parses each complete value.
//
// Top-level values must be objects or arrays: a bare scalar has no end
// marker, so a number cut at a chunk boundary could not be told apart.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tidings::core {

class json_stream {
 public:
  // A value longer than this is an error: the buffer stays bounded.
  explicit json_stream(std::size_t max_value_bytes = 8 * 1024 * 1024) : max_value_bytes_(max_value_bytes) {}

  // Consumes `data`, calling on_value with each value completed by it (the
  // view lives during the call). Returns "" or an error; after an error the
  // splitter is reset and later bytes start a fresh value.
  std::string feed(std::string_view data, const std::function<void(std::string_view value)>& on_value);

  // Whether a value is started but not complete (e.g. the stream ended mid-value).
  bool in_value() const { return depth_ > 0; }
  std::size_t buffered() const { return value_.size(); }
  void reset();

 private:
  std::size_t max_value_bytes_;
  std::string value_;
  std::size_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace tidings::core
