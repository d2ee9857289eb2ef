#pragma once

// pg://{name}/{channel}: the resource URI of one LISTEN channel. The channel
// is one percent-encoded path segment holding any PostgreSQL identifier; it
// is LISTENed to quoted, so it is case-sensitive and may hold characters an
// unquoted identifier may not (pg://app/Order%20Events listens on
// "Order Events"; a NOTIFY must then quote it the same way).

#include <optional>
#include <string>
#include <string_view>

namespace tidings::sources::postgres {

// PostgreSQL truncates longer identifiers (NAMEDATALEN - 1); such a channel
// is refused rather than silently listened to under another name.
inline constexpr std::size_t max_channel_bytes = 63;

// "" when `channel` can be LISTENed to, else why not.
std::string channel_error(std::string_view channel);

// The channel of `uri` when it is pg://{name}/{channel} for this `name` and
// the channel is valid; nullopt with a reason in *error (may be null).
std::optional<std::string> parse_channel_uri(std::string_view name, std::string_view uri, std::string* error);

// The canonical URI of a channel: pg://{name}/ and the channel with every
// byte outside RFC 3986 unreserved characters percent-encoded.
std::string channel_uri(std::string_view name, std::string_view channel);

}  // namespace tidings::sources::postgres
