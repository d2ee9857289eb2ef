#include "persistence/keys.hpp"

namespace tidings::persistence {

void append_be64(std::string& out, std::uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

std::uint64_t read_be64(std::string_view bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string stream_key(std::string_view tenant, std::string_view name) {
  std::string key;
  key.reserve(tenant.size() + 1 + name.size());
  key.append(tenant);
  key += '\0';
  key.append(name);
  return key;
}

std::optional<stream_key_parts> parse_stream_key(std::string_view key) {
  auto nul = key.find('\0');
  if (nul == std::string_view::npos) return std::nullopt;
  return stream_key_parts{std::string(key.substr(0, nul)), std::string(key.substr(nul + 1))};
}

std::string event_key(std::uint64_t stream_id, std::uint64_t seq) {
  std::string key;
  key.reserve(event_key_size);
  append_be64(key, stream_id);
  append_be64(key, seq);
  return key;
}

std::string event_key_prefix(std::uint64_t stream_id) {
  std::string key;
  append_be64(key, stream_id);
  return key;
}

std::string idempotency_key(std::uint64_t stream_id, std::string_view key) {
  std::string out;
  out.reserve(8 + key.size());
  append_be64(out, stream_id);
  out.append(key);
  return out;
}

std::string watch_cursor_key(std::string_view tenant, std::string_view watch, std::string_view stream) {
  auto key = stream_key(tenant, watch);
  key += '\0';
  key.append(stream);
  return key;
}

std::string watch_snapshot_key(std::string_view tenant, std::string_view watch, std::string_view path) {
  std::string key = "watch";
  key += '\0';
  key += stream_key(tenant, watch);
  key += '\0';
  key.append(path);
  return key;
}

std::string source_snapshot_key(std::string_view tenant, std::string_view source_key) {
  std::string key = "source";
  key += '\0';
  key += stream_key(tenant, source_key);
  return key;
}

}  // namespace tidings::persistence
