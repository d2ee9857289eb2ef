#pragma once

// What `watch` prints, kept apart from the I/O so it stays obviously right.

#include <optional>
#include <string>

namespace tidings::cli {

// The data-event JSON as "cursor\tstream\tpath\ttype\t<compact data>";
// nullopt when it is not such an object.
std::optional<std::string> event_line(const std::string& event_json);

// The "error" text of a JSON error body, else the body itself.
std::string error_message(const std::string& body);

}  // namespace tidings::cli
