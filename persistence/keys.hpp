#pragma once

// Key encoding for the RocksDB families (DESIGN.md "Storage"). Integers are
// big-endian so that byte order is numeric order and range scans follow seq.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidings::persistence {

void append_be64(std::string& out, std::uint64_t value);
// The first 8 bytes of `bytes` (which must hold at least 8).
std::uint64_t read_be64(std::string_view bytes);

// streams family: tenant '\0' name. Tenants never contain '\0'.
std::string stream_key(std::string_view tenant, std::string_view name);
struct stream_key_parts {
  std::string tenant;
  std::string name;
};
std::optional<stream_key_parts> parse_stream_key(std::string_view key);

// events family: be64(stream id) be64(seq).
std::string event_key(std::uint64_t stream_id, std::uint64_t seq);
// Bytes 0..7 of every event key of one stream.
std::string event_key_prefix(std::uint64_t stream_id);
inline constexpr std::size_t event_key_size = 16;

// idempotency family: be64(stream id) followed by the client's key.
std::string idempotency_key(std::uint64_t stream_id, std::string_view key);

// watches family: tenant '\0' watch name (as stream_key).
// cursors family: tenant '\0' watch name '\0' stream; a watch's cursors share
// the prefix tenant '\0' name '\0'.
std::string watch_cursor_key(std::string_view tenant, std::string_view watch, std::string_view stream);
// snapshots family: "watch" '\0' tenant '\0' name '\0' path; a watch's paths
// share the prefix (path "").
std::string watch_snapshot_key(std::string_view tenant, std::string_view watch, std::string_view path);
// snapshots family: "source" '\0' tenant '\0' source key: a source's last read.
std::string source_snapshot_key(std::string_view tenant, std::string_view source_key);

}  // namespace tidings::persistence
