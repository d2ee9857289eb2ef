#include "sources/web/resource_template.hpp"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "net/percent_encoding.hpp"

namespace tidings::sources::web {
namespace {

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// RFC 6570 varname: varchars ('_', alphanumerics, %XX) and '.' between them.
bool name_char(char c, bool first) {
  return alnum(c) || c == '%' || (!first && c == '.');
}

// Each placeholder of `text` in order: where it starts, its length with
// the braces, and the name inside.
void each_placeholder(std::string_view text,
                      const std::function<void(std::size_t at, std::size_t size, std::string_view name)>& f) {
  for (std::size_t open = text.find('{'); open != std::string_view::npos; open = text.find('{', open + 1)) {
    std::size_t end = open + 1;
    while (end < text.size() && name_char(text[end], end == open + 1)) ++end;
    if (end == open + 1 || end == text.size() || text[end] != '}') continue;
    f(open, end + 1 - open, text.substr(open + 1, end - open - 1));
  }
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
// an error from encode stops it. `at` is where the placeholder starts.
using encoder = std::function<std::optional<std::string>(const std::string& name, std::string_view value,
                                                         std::size_t at)>;

std::optional<std::string> fill(std::string_view text, const std::vector<std::string>& names,
                                const core::uri_variables& values, const encoder& encode) {
  std::string out;
  std::size_t copied = 0;
  bool failed = false;
  each_placeholder(text, [&](std::size_t at, std::size_t size, std::string_view name) {
    if (failed || std::find(names.begin(), names.end(), name) == names.end()) return;
    auto it = values.find(name);
    auto encoded = encode(std::string(name), it == values.end() ? std::string_view() : it->second, at);
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

// Where a URL's host and port are: [begin, end) after "scheme://".
std::pair<std::size_t, std::size_t> authority(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {0, 0};
  auto begin = scheme + 3;
  return {begin, std::min(url.size(), url.find_first_of("/?#", begin))};
}

}  // namespace

std::vector<std::string> template_problems(const web_resource_config& r,
                                           const std::vector<std::string>& names) {
  std::vector<std::string> out;
  auto prefix = "resource template " + r.uri + ": ";
  for (const auto& [field, text] : templated_fields(r)) {
    for (const auto& name : placeholders(text)) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      std::string problem = prefix;
      problem += field;
      problem += " names {" + name + "}, which is not a variable of the template";
      out.push_back(std::move(problem));
    }
  }
  if (r.backend) {
    // A subscriber would choose where the requests, and their headers, go.
    const auto span = authority(r.backend->url);
    each_placeholder(r.backend->url, [&](std::size_t at, std::size_t, std::string_view name) {
      if (at >= span.first && at < span.second)
        out.push_back(prefix + "backend.url has {" + std::string(name) +
                      "} in its host or port: variables may fill its path, query and fragment only");
    });
  }
  return out;
}

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
    const auto query = tmpl.backend->url.find_first_of("?#");
    apply(out.backend->url,
          [&](const std::string& name, std::string_view v, std::size_t at) -> std::optional<std::string> {
            // "..", "." or nothing in a path would reach another resource
            // of the backend (a parent, a listing).
            if (at < query && (v.empty() || v == "." || v == ".."))
              return refuse(name, v, "cannot be a path segment of the backend's URL");
            return net::percent_encode(v);
          });
    apply(out.backend->body,
          [](const std::string&, std::string_view v, std::size_t) -> std::optional<std::string> {
            return json_string_content(v);
          });
    for (auto& header : out.backend->headers)
      apply(header.second,
            [&](const std::string& name, std::string_view v, std::size_t) -> std::optional<std::string> {
              if (has_control(v))
                return refuse(name, v, "cannot be part of a header: it holds a control character");
              return std::string(v);
            });
  }
  if (out.nats)
    apply(out.nats->subject,
          [&](const std::string& name, std::string_view v, std::size_t) -> std::optional<std::string> {
            if (v.empty() || v.find_first_of(".*> \t") != std::string_view::npos || has_control(v))
              return refuse(name, v,
                            "cannot be a NATS subject token: it is empty or holds '.', '*', '>' or a blank");
            return std::string(v);
          });
  if (out.sql)
    for (auto& p : out.sql->params)
      apply(p, [&](const std::string& name, std::string_view v, std::size_t) -> std::optional<std::string> {
        // libpq takes parameters as C strings: a NUL would cut the value.
        if (v.find('\0') != std::string_view::npos)
          return refuse(name, v, "cannot be a query parameter: it holds NUL");
        return std::string(v);
      });
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace tidings::sources::web
