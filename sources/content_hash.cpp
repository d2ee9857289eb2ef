#include "sources/content_hash.hpp"

#include <openssl/evp.h>
#include <array>

#include "core/stream_name.hpp"

namespace tidings::sources {

std::string lower_hex(const unsigned char* bytes, std::size_t size) {
  std::string out;
  out.reserve(size * 2);
  static constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return lower_hex(digest.data(), size);
}

std::string source_stream_name(std::string_view source_key) {
  return std::string(core::source_stream_prefix) + sha256_hex(source_key).substr(0, 16);
}

}  // namespace tidings::sources
