#include "apps/tidings_load/chunked_decoder.hpp"

#include <algorithm>

#include "core/hex.hpp"

namespace tidings::load {

namespace {}  // namespace

void chunked_decoder::end_size_line() {
  if (digits_ == 0) {
    state_ = state::error;
  } else if (chunk_left_ == 0) {
    state_ = state::trailer_start;
  } else {
    state_ = state::data;
  }
}

chunked_decoder::status chunked_decoder::feed(const char* data, std::size_t size, std::string& out) {
  std::size_t i = 0;
  while (i < size && state_ != state::done && state_ != state::error) {
    const char c = data[i];
    switch (state_) {
      case state::size:
        if (const int v = core::hex_digit_value(c); v >= 0) {
          // 15 hex digits already exceed any sane chunk.
          if (++digits_ > 15) {
            state_ = state::error;
            break;
          }
          chunk_left_ = chunk_left_ * 16 + static_cast<std::uint64_t>(v);
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = state::extension;
        } else if (c == '\r') {
          state_ = state::size_lf;
        } else if (c == '\n') {
          end_size_line();
        } else {
          state_ = state::error;
        }
        ++i;
        break;
      case state::extension:
        if (c == '\r') state_ = state::size_lf;
        if (c == '\n') end_size_line();
        ++i;
        break;
      case state::size_lf:
        if (c == '\n') {
          end_size_line();
        } else {
          state_ = state::error;
        }
        ++i;
        break;
      case state::data: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, size - i));
        out.append(data + i, n);
        i += n;
        chunk_left_ -= n;
        if (chunk_left_ == 0) state_ = state::data_cr;
        break;
      }
      case state::data_cr:
        if (c == '\r') {
          state_ = state::data_lf;
        } else if (c == '\n') {
          state_ = state::size;
          digits_ = 0;
        } else {
          state_ = state::error;
        }
        ++i;
        break;
      case state::data_lf:
        if (c == '\n') {
          state_ = state::size;
          digits_ = 0;
        } else {
          state_ = state::error;
        }
        ++i;
        break;
      case state::trailer_start:
        if (c == '\r') {
          state_ = state::trailer_lf;
        } else if (c == '\n') {
          state_ = state::done;
        } else {
          state_ = state::trailer_line;
        }
        ++i;
        break;
      case state::trailer_line:
        if (c == '\n') state_ = state::trailer_start;
        ++i;
        break;
      case state::trailer_lf:
        state_ = c == '\n' ? state::done : state::error;
        ++i;
        break;
      case state::done:
      case state::error:
        break;
    }
  }
  if (state_ == state::done) return status::done;
  if (state_ == state::error) return status::error;
  return status::more;
}

}  // namespace tidings::load
