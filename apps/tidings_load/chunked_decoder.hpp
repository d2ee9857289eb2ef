#pragma once

// Incremental HTTP/1.1 chunked-transfer decoder for the load client's hot
// path: a byte-at-a-time state machine only on the framing, memcpy for data.

#include <cstddef>
#include <cstdint>
#include <string>

namespace tidings::load {

class chunked_decoder {
 public:
  enum class status { more, done, error };

  // Appends the de-chunked bytes of [data, data+size) to `out`.
  status feed(const char* data, std::size_t size, std::string& out);

 private:
  enum class state {
    size,
    extension,
    size_lf,
    data,
    data_cr,
    data_lf,
    trailer_start,
    trailer_line,
    trailer_lf,
    done,
    error
  };
  void end_size_line();

  state state_ = state::size;
  std::uint64_t chunk_left_ = 0;
  int digits_ = 0;
};

}  // namespace tidings::load
