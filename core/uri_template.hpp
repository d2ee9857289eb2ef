#pragma once

// RFC 6570 URI templates, levels 1 to 3, used the other way round: not to
// expand a template but to decide whether a concrete URI is one of its
// expansions and with which variable values (resource routing, ADR 0005
// "Client: Routing").
//
// Matching follows expansion, loosened where real URIs are not strictly
// encoded (the kcp template `kcp-events://watch/{workspace}/...` is used with
// `root:app`, and `?namespace=*`):
//
// | expression | a value may hold                                   | not                        |
// |------------|----------------------------------------------------|----------------------------|
// | {var}      | one path segment (RFC 3986 pchar: sub-delims, : @) | / ? # (and , between vars) |
// | {+var}     | path characters, '/' included                      | ? # (and , between vars)   |
// | {#var}     | fragment characters, '/' and '?' included          | (, between vars)           |
// | {.var}     | a segment without '.'                              | / ? # .                    |
// | {/var}     | a segment                                          | / ? #                      |
// | {;var}     | a segment without ';'                              | / ? # ;                    |
// | {?var}     | query characters, '=' '/' '?' included             | & #                        |
// | {&var}     | as {?var}                                          | & #                        |
//
// Bytes below 0x21 and DEL never match (a URI holds them only encoded);
// bytes from 0x80 are accepted so typed non-ASCII paths still route. Values
// come back percent-decoded; a malformed escape fails the match.
//
// Variables are optional, as in expansion: an absent one is left out of the
// result. A variable that matched an empty string in {var} or {+var} is
// absent too (expansion cannot tell undefined from empty there); after a
// prefix ({.var} {/var} {;var} {?var} {&var} {#var}) an empty value is "".
//
// Named expressions ({?...} {&...} {;...}) take their parameters in any
// order, each at most once, and reject parameters they do not name: no
// expansion of the template produces an unknown or repeated name, and a
// connector must not be handed a parameter it would silently ignore.
// `name` without '=' counts as the empty value (RFC 6570 writes it so for
// ';', and a hand-typed query may). Several variables in {var}, {+var},
// {#var} split on ',' and fill the variables left to right.
//
// Not supported, rejected at parse: level 4 modifiers (`{var:3}`,
// `{list*}`), the reserved operators = , ! @ |, and a variable named in two
// expressions (one URI position could not give it one value).

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidings::core {

// Variable name -> percent-decoded value, for the variables present.
using uri_variables = std::map<std::string, std::string, std::less<>>;

class uri_template {
 public:
  struct expression {
    char op = '\0';  // '\0' (simple), '+', '#', '.', '/', ';', '?', '&'
    std::vector<std::string> names;
  };
  // A literal (expr empty) or one {...} expression.
  struct part {
    std::string literal;
    std::optional<expression> expr;
  };

  // The template, or nullopt with a reason naming the offending position in
  // *error (may be null).
  static std::optional<uri_template> parse(std::string_view text, std::string* error);

  // The variables when `uri` is an expansion of this template, else nullopt.
  std::optional<uri_variables> match(std::string_view uri) const;

  const std::string& text() const { return text_; }
  const std::vector<part>& parts() const { return parts_; }
  // Every variable name, in template order.
  std::vector<std::string> variable_names() const;

 private:
  std::string text_;
  std::vector<part> parts_;
};

// Decodes %XX escapes (either case). nullopt on a malformed escape. '+' stays
// '+': URI templates never encode a space that way.
std::optional<std::string> percent_decode(std::string_view in);

// Bounds on what parse() and match() look at, so a hostile template or URI
// cannot make matching expensive: longer ones are rejected / never match.
inline constexpr std::size_t uri_template_max_template_bytes = 4 * 1024;
inline constexpr std::size_t uri_template_max_uri_bytes = 8 * 1024;

}  // namespace tidings::core
