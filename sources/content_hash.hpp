#pragma once

// SHA-256 for change detection (poll bodies, file contents, webhook
// deliveries) and for the short names of source streams.

#include <cstddef>
#include <string>
#include <string_view>

namespace tidings::sources {

// Lowercase hex, 64 digits.
std::string sha256_hex(std::string_view data);

// Bytes (a digest, a MAC) as lowercase hex, two digits each.
std::string lower_hex(const unsigned char* bytes, std::size_t size);

// The stream a source key feeds: "src:" and the first 16 hex digits of the
// key's SHA-256. Long enough that two keys of one node never meet.
std::string source_stream_name(std::string_view source_key);

}  // namespace tidings::sources
