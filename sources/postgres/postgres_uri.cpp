#include "sources/postgres/postgres_uri.hpp"

namespace tidings::sources::postgres {

namespace {

constexpr std::string_view scheme = "pg://";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int hi = hex_value(text[i + 1]);
    int lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<std::string> fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

}  // namespace

std::string channel_error(std::string_view channel) {
  if (channel.empty()) return "the channel is empty";
  if (channel.size() > max_channel_bytes) {
    return "the channel is longer than " + std::to_string(max_channel_bytes) + " bytes";
  }
  for (char c : channel) {
    auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) return "the channel holds a control character";
  }
  return {};
}

std::optional<std::string> parse_channel_uri(std::string_view name, std::string_view uri,
                                             std::string* error) {
  if (!uri.starts_with(scheme)) return fail(error, "not a pg:// URI");
  auto rest = uri.substr(scheme.size());
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) return fail(error, "expected pg://{name}/{channel}");
  if (rest.substr(0, slash) != name) {
    return fail(error,
                "pg://" + std::string(rest.substr(0, slash)) + " is not database " + std::string(name));
  }
  auto segment = rest.substr(slash + 1);
  if (segment.find_first_of("/?#") != std::string_view::npos) {
    return fail(error, "expected pg://{name}/{channel} with the channel as one segment (encode '/' as %2F)");
  }
  auto channel = percent_decode(segment);
  if (!channel) return fail(error, "malformed percent-encoding in the channel");
  if (auto why = channel_error(*channel); !why.empty()) return fail(error, why);
  return channel;
}

std::string channel_uri(std::string_view name, std::string_view channel) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out(scheme);
  out.append(name);
  out.push_back('/');
  for (char c : channel) {
    auto b = static_cast<unsigned char>(c);
    if (unreserved(b)) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(digits[b >> 4]);
      out.push_back(digits[b & 15]);
    }
  }
  return out;
}

}  // namespace tidings::sources::postgres
