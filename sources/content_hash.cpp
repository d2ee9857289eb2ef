#include "sources/content_hash.hpp"

#include <openssl/evp.h>
#include <array>

#include "core/stream_name.hpp"

namespace tidings::sources {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(std::size_t{size} * 2);
  static constexpr char digits[] = "0123456789abcdef";
  for (unsigned int i = 0; i < size; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 0xf];
  }
  return out;
}

std::string source_stream_name(std::string_view source_key) {
  return std::string(core::source_stream_prefix) + sha256_hex(source_key).substr(0, 16);
}

}  // namespace tidings::sources
