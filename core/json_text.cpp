#include "core/json_text.hpp"

#include "core/utf8.hpp"

namespace tidings::core {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    auto byte = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out += hex[byte >> 4];
          out += hex[byte & 0xf];
        } else if (byte < 0x80) {
          out += ch;
        } else {
          // Whatever we echo (a bad name in an error, say) stays valid JSON:
          // malformed UTF-8 becomes U+FFFD.
          std::uint32_t cp = 0;
          auto len = utf8_sequence(text, i, &cp);
          if (len == 0) {
            out += "\xEF\xBF\xBD";
          } else {
            out.append(text.substr(i, len));
            i += len - 1;
          }
        }
    }
  }
  out += '"';
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

}  // namespace tidings::core
