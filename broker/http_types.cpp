#include "broker/http_types.hpp"

#include <algorithm>

#include "core/hex.hpp"
#include "core/json_text.hpp"

namespace tidings::broker {
namespace {

bool percent_decode(std::string_view in, bool plus_is_space, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = core::hex_digit_value(in[i + 1]);
      int lo = core::hex_digit_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return true;
}

}  // namespace

const std::string* http_request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? nullptr : &it->second;
}

std::vector<std::string> http_request::query_all(std::string_view name) const {
  std::vector<std::string> out;
  for (auto& [k, v] : query)
    if (k == name) out.push_back(v);
  return out;
}

const std::string* http_request::query_one(std::string_view name) const {
  for (auto& [k, v] : query)
    if (k == name) return &v;
  return nullptr;
}

http_response error_response(unsigned status, std::string_view message) {
  http_response r;
  r.status = status;
  r.body = "{\"error\":" + core::json_string(message) + "}";
  return r;
}

http_response json_response(unsigned status, const nlohmann::json& body) {
  http_response r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

target_check parse_target(std::string_view target, std::string& path,
                          std::vector<std::pair<std::string, std::string>>& query) {
  auto q = target.find('?');
  if (!percent_decode(target.substr(0, q), false, path)) return target_check::malformed;
  // The decoded path has more '/' than the raw one: a %2F (or %2f).
  if (std::count(path.begin(), path.end(), '/') !=
      std::count(target.begin(), q == std::string_view::npos ? target.end() : target.begin() + q, '/'))
    return target_check::encoded_slash;
  query.clear();
  if (q == std::string_view::npos) return target_check::ok;
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto part = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    std::string k, v;
    if (!percent_decode(part.substr(0, eq), true, k)) return target_check::malformed;
    if (eq != std::string_view::npos && !percent_decode(part.substr(eq + 1), true, v))
      return target_check::malformed;
    query.emplace_back(std::move(k), std::move(v));
  }
  return target_check::ok;
}

}  // namespace tidings::broker
