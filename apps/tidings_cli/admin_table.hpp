#pragma once

// What `tidings admin VIEW` prints, kept apart from the I/O like watch_table.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidings::cli {

// The body of GET /admin/v1/VIEW (VIEW: watches, streams, sessions, nodes or
// tenants) as a table: a header line of upper-case column names, then one
// line per row, columns left-aligned and two spaces apart, the last one not
// padded. An empty list is one line ("no sessions"). `now_ms` (wall clock)
// turns times into ages ("12s ago"). nullopt when the body is not the view's
// JSON object.
std::optional<std::string> admin_table(std::string_view view, const std::string& body_json,
                                       std::int64_t now_ms);

}  // namespace tidings::cli
