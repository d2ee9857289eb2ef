#pragma once

// The SSE `id:` of a connection that watches several streams carries every
// stream's cursor, in the order the streams were named in the request, so a
// native EventSource reconnect (Last-Event-ID) resumes all of them. One stream:
// the plain cursor. Several: the cursors joined by ','.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cursor.hpp"

namespace tidings::core {

std::string encode_cursor_vector(std::span<const cursor> cursors);
// Empty input, an empty element or any malformed cursor: nullopt.
std::optional<std::vector<cursor>> decode_cursor_vector(std::string_view text);

}  // namespace tidings::core
