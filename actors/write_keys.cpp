#include "actors/write_keys.hpp"

#include <cstdint>
#include <cstdio>
#include <random>

namespace tidings::actors {

std::string writer_key_prefix(std::string_view kind) {
  std::random_device rd;
  const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(r));
  return std::string(kind) + "-" + hex + "-";
}

}  // namespace tidings::actors
