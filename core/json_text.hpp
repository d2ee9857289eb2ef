#pragma once

#include <string>
#include <string_view>

namespace tidings::core {

// Appends `text` as a JSON string literal (with quotes). Control characters,
// '"' and '\\' are escaped; bytes >= 0x80 are copied as they are.
void append_json_string(std::string& out, std::string_view text);
std::string json_string(std::string_view text);

}  // namespace tidings::core
