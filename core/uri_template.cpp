#include "core/uri_template.hpp"

#include <algorithm>
#include <utility>

#include "core/hex.hpp"

namespace tidings::core {
namespace {

constexpr std::string_view operators = "+#./;?&";
// RFC 6570 §2.2 keeps these for future extensions.
constexpr std::string_view reserved_operators = "=,!@|";

std::string at(std::size_t offset) {
  return " at offset " + std::to_string(offset);
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_pct_at(std::string_view s, std::size_t i) {
  return i + 2 < s.size() && s[i] == '%' && hex_digit_value(s[i + 1]) >= 0 && hex_digit_value(s[i + 2]) >= 0;
}

// RFC 6570 §2.1 literals: anything but controls, space and " ' < > \ ^ ` { | },
// '%' only as an escape.
bool literal_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x80) return true;
  if (u <= 0x20 || u == 0x7f) return false;
  return std::string_view("\"'<>\\^`{|}%").find(c) == std::string_view::npos;
}

// varname = varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded.
bool valid_varname(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (is_alnum(c) || c == '_') continue;
    if (c == '.' && name[i - 1] != '.') continue;
    if (c == '%' && i + 2 < name.size() && hex_digit_value(name[i + 1]) >= 0 &&
        hex_digit_value(name[i + 2]) >= 0) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}

// Whether a byte may sit inside one value of an expression with operator
// `op` (the table in the header).
bool value_char(char op, char c) {
  auto u = static_cast<unsigned char>(c);
  if (u <= 0x20 || u == 0x7f) return false;
  switch (op) {
    case '\0':
      return c != '/' && c != '?' && c != '#';
    case '+':
      return c != '?' && c != '#';
    case '#':
      return true;
    case '.':
      return c != '/' && c != '?' && c != '#' && c != '.';
    case '/':
      return c != '/' && c != '?' && c != '#';
    case ';':
      return c != '/' && c != '?' && c != '#' && c != ';';
    default:  // '?', '&'
      return c != '&' && c != '#';
  }
}

// Matches a URI against a template's parts by backtracking. Candidate ends
// are checked in O(1) (escapes and commas are counted up front) and values
// decoded only along the match that succeeds, so a hostile URI costs at most
// parts x length^2 steps.
class matcher {
 public:
  matcher(const std::vector<uri_template::part>& parts, std::string_view uri)
      : parts_(parts),
        uri_(uri),
        failed_((parts.size() + 1) * (uri.size() + 1), false),
        bad_pct_(uri.size() + 1, 0),
        commas_(uri.size() + 1, 0),
        in_escape_(uri.size() + 1, false) {
    for (std::size_t i = 0; i < uri.size(); ++i) {
      bool bad = false;
      if (uri[i] == '%') {
        if (is_pct_at(uri, i)) {
          in_escape_[i + 1] = in_escape_[i + 2] = true;
        } else {
          bad = true;
        }
      }
      bad_pct_[i + 1] = bad_pct_[i] + (bad ? 1 : 0);
      commas_[i + 1] = commas_[i] + (uri[i] == ',' ? 1 : 0);
    }
  }

  bool run(uri_variables& out) {
    if (!match_from(0, 0)) return false;
    for (auto& [name, value] : found_) out.insert_or_assign(std::string(name), std::move(value));
    return true;
  }

 private:
  using span = std::pair<std::size_t, std::size_t>;  // [begin, end) in uri_

  bool match_from(std::size_t pi, std::size_t pos) {
    if (pi == parts_.size()) return pos == uri_.size();
    // Whether the rest matches depends only on (part, position): no variable
    // repeats, so bindings never constrain later parts. Remembering failures
    // keeps backtracking polynomial.
    std::size_t key = pi * (uri_.size() + 1) + pos;
    if (failed_[key]) return false;
    const auto& p = parts_[pi];
    bool ok = false;
    if (!p.expr) {
      ok = uri_.substr(pos).starts_with(p.literal) && match_from(pi + 1, pos + p.literal.size());
    } else if (p.expr->op == '\0' || p.expr->op == '+' || p.expr->op == '#') {
      ok = match_listed(*p.expr, pi + 1, pos);
    } else if (p.expr->op == '.' || p.expr->op == '/') {
      ok = match_labelled(*p.expr, pi + 1, pos);
    } else {
      ok = match_named(*p.expr, pi + 1, pos);
    }
    if (!ok) failed_[key] = true;
    return ok;
  }

  // Whether [b, e) percent-decodes: no malformed escape inside, none cut.
  bool decodable(std::size_t b, std::size_t e) const { return bad_pct_[e] == bad_pct_[b] && !in_escape_[e]; }

  std::string decode(span s) const { return *percent_decode(uri_.substr(s.first, s.second - s.first)); }

  void bind(std::string_view name, std::string value) { found_.emplace_back(name, std::move(value)); }

  // The end of the run of value bytes (or ',' when `comma`) from `from`.
  std::size_t run_end(char op, std::size_t from, bool comma) const {
    std::size_t e = from;
    while (e < uri_.size() && (value_char(op, uri_[e]) || (comma && uri_[e] == ','))) ++e;
    return e;
  }

  // {var,...} {+var,...} {#var,...}: values joined by ','.
  bool match_listed(const uri_template::expression& ex, std::size_t next, std::size_t pos) {
    std::size_t start = pos;
    if (ex.op == '#') {
      if (pos >= uri_.size() || uri_[pos] != '#') return match_from(next, pos);
      start = pos + 1;
    }
    bool multi = ex.names.size() > 1;
    std::size_t max_end = run_end(ex.op, start, multi);
    // Longest first: a value stops early only when what follows needs it.
    for (std::size_t end = max_end + 1; end-- > start;) {
      if (!decodable(start, end)) continue;
      if (multi && commas_[end] - commas_[start] >= ex.names.size()) continue;
      if (!match_from(next, end)) continue;
      std::size_t from = start;
      for (std::size_t i = 0; from <= end; ++i) {
        std::size_t stop = multi ? std::min(end, uri_.find(',', from)) : end;
        auto value = decode({from, stop});
        // Expansion writes nothing for both undefined and "" in {var}/{+var}.
        if (!value.empty() || ex.op == '#') bind(ex.names[i], std::move(value));
        from = stop + 1;
      }
      return true;
    }
    return ex.op == '#' && match_from(next, pos);
  }

  // The maximal items "<sep>value" from pos, at most `limit`. Only the last
  // item an expression takes may end early: a value cannot hold the
  // separator that starts the next.
  std::vector<span> items(char op, char first, char sep, std::size_t pos, std::size_t limit) const {
    std::vector<span> out;
    std::size_t p = pos;
    while (out.size() < limit && p < uri_.size() && uri_[p] == (out.empty() ? first : sep)) {
      std::size_t e = run_end(op, p + 1, false);
      out.emplace_back(p + 1, e);
      p = e;
    }
    return out;
  }

  // {.var,...} {/var,...}: each value after the operator character.
  bool match_labelled(const uri_template::expression& ex, std::size_t next, std::size_t pos) {
    auto found = items(ex.op, ex.op, ex.op, pos, ex.names.size());
    for (std::size_t k = found.size(); k > 0; --k) {
      bool fixed_ok = true;
      for (std::size_t i = 0; i + 1 < k; ++i)
        fixed_ok = fixed_ok && decodable(found[i].first, found[i].second);
      if (!fixed_ok) continue;
      auto [begin, max_end] = found[k - 1];
      for (std::size_t end = max_end + 1; end-- > begin;) {
        if (!decodable(begin, end) || !match_from(next, end)) continue;
        for (std::size_t i = 0; i + 1 < k; ++i) bind(ex.names[i], decode(found[i]));
        bind(ex.names[k - 1], decode({begin, end}));
        return true;
      }
    }
    return match_from(next, pos);
  }

  // The variable a "name[=value]" item in [b, e) sets, if it is one of the
  // expression's, unused and decodable; its value's span in *value.
  std::optional<std::size_t> named_item(const uri_template::expression& ex, std::size_t b, std::size_t e,
                                        const std::vector<bool>& used, span* value) const {
    std::string_view item = uri_.substr(b, e - b);
    auto eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    auto it = std::find(ex.names.begin(), ex.names.end(), name);
    if (it == ex.names.end()) return std::nullopt;
    auto index = static_cast<std::size_t>(it - ex.names.begin());
    *value = eq == std::string_view::npos ? span{e, e} : span{b + eq + 1, e};
    if (used[index] || !decodable(value->first, value->second)) return std::nullopt;
    return index;
  }

  // {;var,...} {?var,...} {&var,...}: name=value pairs, any order.
  bool match_named(const uri_template::expression& ex, std::size_t next, std::size_t pos) {
    char sep = ex.op == ';' ? ';' : '&';
    auto found = items(ex.op, ex.op, sep, pos, ex.names.size());
    for (std::size_t k = found.size(); k > 0; --k) {
      std::vector<bool> used(ex.names.size(), false);
      std::vector<std::pair<std::size_t, span>> fixed;
      bool fixed_ok = true;
      for (std::size_t i = 0; i + 1 < k && fixed_ok; ++i) {
        span value;
        auto index = named_item(ex, found[i].first, found[i].second, used, &value);
        if (index) {
          used[*index] = true;
          fixed.emplace_back(*index, value);
        }
        fixed_ok = index.has_value();
      }
      if (!fixed_ok) continue;
      auto [begin, max_end] = found[k - 1];
      for (std::size_t end = max_end + 1; end-- > begin;) {
        span value;
        auto index = named_item(ex, begin, end, used, &value);
        if (!index || !match_from(next, end)) continue;
        for (const auto& [i, v] : fixed) bind(ex.names[i], decode(v));
        bind(ex.names[*index], decode(value));
        return true;
      }
    }
    return match_from(next, pos);
  }

  const std::vector<uri_template::part>& parts_;
  std::string_view uri_;
  std::vector<bool> failed_;          // per (part, position)
  std::vector<std::size_t> bad_pct_;  // malformed '%' before each position
  std::vector<std::size_t> commas_;   // ',' before each position
  std::vector<bool> in_escape_;       // position is a hex digit of a "%XX"
  std::vector<std::pair<std::string_view, std::string>> found_;
};

}  // namespace

std::optional<std::string> percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (!is_pct_at(in, i)) return std::nullopt;
    out.push_back(static_cast<char>(hex_digit_value(in[i + 1]) * 16 + hex_digit_value(in[i + 2])));
    i += 2;
  }
  return out;
}

std::optional<uri_template> uri_template::parse(std::string_view text, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<uri_template> {
    if (error) *error = "invalid URI template \"" + std::string(text) + "\": " + std::move(message);
    return std::nullopt;
  };
  if (text.size() > uri_template_max_template_bytes)
    return fail("longer than " + std::to_string(uri_template_max_template_bytes) + " bytes");
  uri_template t;
  t.text_ = std::string(text);
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '}') return fail("'}' without '{'" + at(i));
    if (c != '{') {
      if (c == '%' ? !is_pct_at(text, i) : !literal_char(c))
        return fail("character '" + std::string(1, c) + "' not allowed in a literal" + at(i));
      std::size_t n = c == '%' ? 3 : 1;
      if (t.parts_.empty() || t.parts_.back().expr) t.parts_.emplace_back();
      t.parts_.back().literal.append(text.substr(i, n));
      i += n;
      continue;
    }
    auto close = text.find('}', i + 1);
    if (close == std::string_view::npos) return fail("'{' not closed" + at(i));
    std::string_view inner = text.substr(i + 1, close - i - 1);
    if (inner.empty()) return fail("empty expression" + at(i));
    expression ex;
    if (operators.find(inner.front()) != std::string_view::npos) {
      ex.op = inner.front();
      inner.remove_prefix(1);
    } else if (reserved_operators.find(inner.front()) != std::string_view::npos) {
      return fail("operator '" + std::string(1, inner.front()) + "' is reserved" + at(i));
    }
    std::size_t from = 0;
    for (;;) {
      auto comma = inner.find(',', from);
      std::string_view name = inner.substr(from, comma == std::string_view::npos ? comma : comma - from);
      if (name.find(':') != std::string_view::npos || (!name.empty() && name.back() == '*'))
        return fail("level 4 modifier in \"" + std::string(name) + "\" not supported" + at(i));
      if (!valid_varname(name)) return fail("invalid variable name \"" + std::string(name) + "\"" + at(i));
      if (std::find(seen.begin(), seen.end(), name) != seen.end())
        return fail("variable \"" + std::string(name) + "\" appears twice");
      seen.emplace_back(name);
      ex.names.emplace_back(name);
      if (comma == std::string_view::npos) break;
      from = comma + 1;
    }
    t.parts_.push_back(part{{}, std::move(ex)});
    i = close + 1;
  }
  return t;
}

std::optional<uri_variables> uri_template::match(std::string_view uri) const {
  if (uri.size() > uri_template_max_uri_bytes) return std::nullopt;
  uri_variables out;
  if (!matcher(parts_, uri).run(out)) return std::nullopt;
  return out;
}

std::vector<std::string> uri_template::variable_names() const {
  std::vector<std::string> out;
  for (const auto& p : parts_)
    if (p.expr) out.insert(out.end(), p.expr->names.begin(), p.expr->names.end());
  return out;
}

}  // namespace tidings::core
