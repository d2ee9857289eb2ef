#pragma once

// A watch: block on a resource template (seeds/001): the configuration of
// one URI the template matches. Each {name} that names a variable of the
// template is replaced by the variable's value, encoded for where it lands:
//
// | where                       | the value                                          |
// |-----------------------------|----------------------------------------------------|
// | backend url                 | percent-encoded (RFC 3986 unreserved characters kept); in |
// |                             | the path not empty, "." or ".."; never in the host or port |
// | backend body                | escaped as inside a JSON string                    |
// | backend header values       | as is; control characters refused                  |
// | nats_topic subject          | as is; must be one subject token (no . * > blanks) |
// | sql_polling params          | as is (no NUL): a libpq parameter, never SQL text  |
//
// A variable the URI leaves out is "". Braces around anything else (the
// `{"id": ...}` of a JSON body) are left alone; check_web_config refuses a
// {name} that names no variable, so a typo is not sent upstream verbatim.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/uri_template.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

// The configuration of `uri` when the template matches it; nullopt with
// *error "" when it does not match, or with the reason a value cannot be
// used (a subject token with a '.', a header value with a line break).
std::optional<web_resource_config> instantiate(const web_resource_config& tmpl,
                                               const core::uri_template& parsed, std::string_view uri,
                                               std::string* error);

// The {name} placeholders in `text` (name: an RFC 6570 varname, letters,
// digits, '_', %XX and inner '.'), in order.
std::vector<std::string> placeholders(std::string_view text);

// A template's configuration mistakes, each naming the field: a {name}
// that is no variable of the template (`names`), a variable in the
// backend URL's host or port.
std::vector<std::string> template_problems(const web_resource_config& r,
                                           const std::vector<std::string>& names);

// Every text of the resource that may hold placeholders, each with the
// config key it came from ("backend.url", "watch.strategy.subject", ...).
std::vector<std::pair<std::string, std::string>> templated_fields(const web_resource_config& r);

}  // namespace tidings::sources::web
