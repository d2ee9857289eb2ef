#pragma once

// What `watch-list` prints, kept apart from the I/O like event_line.

#include <optional>
#include <string>

namespace tidings::cli {

// The JSON array of GET /v1/watches as a table: a header line
// "NAME  URI  SHAPE  EVENTS  NOTICES  STATE", then one line per watch, columns
// left-aligned and two spaces apart. STATE also carries what needs a look:
// "running (2 filter errors)", "restore_failed: <error>". An empty array is
// "no watches". Every line ends in '\n'. nullopt when `list_json` is not an
// array of objects.
std::optional<std::string> watch_table(const std::string& list_json);

}  // namespace tidings::cli
