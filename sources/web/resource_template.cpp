#include "sources/web/resource_template.hpp"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

namespace tidings::sources::web {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Each placeholder of `text` in order: where it starts, its length with
// the braces, and the name inside.
void each_placeholder(std::string_view text,
                      const std::function<void(std::size_t at, std::size_t size, std::string_view name)>& f) {
  for (std::size_t open = text.find('{'); open != std::string_view::npos; open = text.find('{', open + 1)) {
    std::size_t end = open + 1;
    while (end < text.size() && name_char(text[end])) ++end;
    if (end == open + 1 || end == text.size() || text[end] != '}') continue;
    f(open, end + 1 - open, text.substr(open + 1, end - open - 1));
  }
}

std::string percent_encoded(std::string_view v) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (name_char(c) || c == '-' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xf];
    }
  }
  return out;
}

std::string json_string_content(std::string_view v) {
  auto quoted = nlohmann::json(std::string(v)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

bool has_control(std::string_view v) {
  return std::any_of(v.begin(), v.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// The text with every variable's placeholder replaced by encode(value);
// an error from encode stops it.
using encoder = std::function<std::optional<std::string>(const std::string& name, std::string_view value)>;

std::optional<std::string> fill(std::string_view text, const std::vector<std::string>& names,
                                const core::uri_variables& values, const encoder& encode) {
  std::string out;
  std::size_t copied = 0;
  bool failed = false;
  each_placeholder(text, [&](std::size_t at, std::size_t size, std::string_view name) {
    if (failed || std::find(names.begin(), names.end(), name) == names.end()) return;
    auto it = values.find(name);
    auto encoded = encode(std::string(name), it == values.end() ? std::string_view() : it->second);
    if (!encoded) {
      failed = true;
      return;
    }
    out.append(text.substr(copied, at - copied));
    out += *encoded;
    copied = at + size;
  });
  if (failed) return std::nullopt;
  out.append(text.substr(copied));
  return out;
}

}  // namespace

std::vector<std::string> placeholders(std::string_view text) {
  std::vector<std::string> out;
  each_placeholder(text, [&](std::size_t, std::size_t, std::string_view name) { out.emplace_back(name); });
  return out;
}

std::vector<std::pair<std::string, std::string>> templated_fields(const web_resource_config& r) {
  std::vector<std::pair<std::string, std::string>> out;
  if (r.backend) {
    out.emplace_back("backend.url", r.backend->url);
    out.emplace_back("backend.body", r.backend->body);
    for (const auto& [name, value] : r.backend->headers) out.emplace_back("backend.headers." + name, value);
  }
  if (r.nats) out.emplace_back("watch.strategy.subject", r.nats->subject);
  if (r.sql)
    for (std::size_t i = 0; i < r.sql->params.size(); ++i)
      out.emplace_back("watch.strategy.params[" + std::to_string(i) + "]", r.sql->params[i]);
  return out;
}

std::optional<web_resource_config> instantiate(const web_resource_config& tmpl,
                                               const core::uri_template& parsed, std::string_view uri,
                                               std::string* error) {
  error->clear();
  auto values = parsed.match(uri);
  if (!values) return std::nullopt;
  const auto names = parsed.variable_names();
  auto refuse = [&](const std::string& name, std::string_view value, const std::string& why) {
    *error = std::string(uri) + ": the value of {" + name + "} ('" + std::string(value) + "') " + why;
    return std::nullopt;
  };
  auto as_is = [](const std::string&, std::string_view v) -> std::optional<std::string> {
    return std::string(v);
  };

  web_resource_config out = tmpl;
  out.uri = std::string(uri);
  out.is_template = false;
  bool ok = true;
  auto apply = [&](std::string& field, const encoder& encode) {
    if (!ok) return;
    auto filled = fill(field, names, *values, encode);
    if (filled) {
      field = std::move(*filled);
    } else {
      ok = false;
    }
  };
  if (out.backend) {
    apply(out.backend->url, [](const std::string&, std::string_view v) -> std::optional<std::string> {
      return percent_encoded(v);
    });
    apply(out.backend->body, [](const std::string&, std::string_view v) -> std::optional<std::string> {
      return json_string_content(v);
    });
    for (auto& header : out.backend->headers)
      apply(header.second, [&](const std::string& name, std::string_view v) -> std::optional<std::string> {
        if (has_control(v))
          return refuse(name, v, "cannot be part of a header: it holds a control character");
        return std::string(v);
      });
  }
  if (out.nats)
    apply(out.nats->subject, [&](const std::string& name, std::string_view v) -> std::optional<std::string> {
      if (v.empty() || v.find_first_of(".*> \t") != std::string_view::npos || has_control(v))
        return refuse(name, v,
                      "cannot be a NATS subject token: it is empty or holds '.', '*', '>' or a blank");
      return std::string(v);
    });
  if (out.sql)
    for (auto& p : out.sql->params) apply(p, as_is);
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace tidings::sources::web
