#pragma once

// What `watch` prints, kept apart from the I/O so it stays obviously right.

#include <optional>
#include <string>

namespace tidings::cli {

// The data-event JSON as "cursor\tstream\tpath\ttype\t<compact data>";
// nullopt when it is not such an object. A watch's notice (type NOTICE, data
// with a non-empty "lines" array) reads better as its lines:
// "cursor\tstream\t<first line>", then "\n  <line>" for each further line
// (a line holding newlines counts as several). Control characters other than
// tab in the lines print as '?', so a filter cannot drive the terminal.
std::optional<std::string> event_line(const std::string& event_json);

// The "error" text of a JSON error body, else the body itself.
std::string error_message(const std::string& body);

}  // namespace tidings::cli
