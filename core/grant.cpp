#include "core/grant.hpp"

#include <algorithm>

namespace tidings::core {
namespace {

constexpr std::size_t max_entry = 512;
constexpr std::size_t max_segments = 32;

// "*" matches any run of characters (':' included, so "*" covers readable
// streams too); no other metacharacters.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);  // the leading '/'
  for (;;) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    path.remove_prefix(slash + 1);
  }
}

// A pattern is a small NFA over path segments; simulating it keeps the cost
// at patterns x segments whatever the number of "**".
class segment_matcher {
 public:
  explicit segment_matcher(const std::vector<std::string>& pattern)
      : pat_(pattern), states_(pattern.size() + 1, 0), next_(pattern.size() + 1, 0) {
    states_[0] = 1;
    close(states_);
  }

  // `partial`: the segment is the start of a longer one (a prefix's end).
  bool step(std::string_view seg, bool partial) {
    std::fill(next_.begin(), next_.end(), 0);
    bool any = false;
    for (std::size_t i = 0; i < pat_.size(); ++i) {
      if (!states_[i]) continue;
      const auto& p = pat_[i];
      if (p == "**") {
        next_[i] = 1;
      } else if (p == "*" || (partial ? std::string_view(p).starts_with(seg) : p == seg)) {
        next_[i + 1] = 1;
      } else {
        continue;
      }
      any = true;
    }
    states_.swap(next_);
    close(states_);
    return any;
  }
  bool accepted() const { return states_[pat_.size()] != 0; }

 private:
  void close(std::vector<char>& s) const {
    for (std::size_t i = 0; i < pat_.size(); ++i)
      if (s[i] && pat_[i] == "**") s[i + 1] = 1;
  }

  const std::vector<std::string>& pat_;
  std::vector<char> states_;
  std::vector<char> next_;
};

}  // namespace

std::optional<grant> parse_grant(std::string_view entry, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<grant> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  if (entry.empty()) return fail("empty grant");
  if (entry.size() > max_entry) return fail("grant longer than 512 characters");
  for (unsigned char c : entry)
    if (c < 0x21 || c > 0x7e) return fail("grants are visible ASCII without spaces");
  std::size_t search_from = 0;
  for (std::string_view kind : {"watch:", "src:"})
    if (entry.starts_with(kind)) search_from = kind.size();
  auto colon = entry.find(':', search_from);
  grant g;
  g.stream = std::string(entry.substr(0, colon));
  if (g.stream.empty() || g.stream.back() == ':') return fail("grant names no stream");
  if (colon == std::string_view::npos) return g;
  auto pattern = entry.substr(colon + 1);
  if (!pattern.starts_with('/')) return fail("a path pattern starts with '/'");
  g.any_path = false;
  for (auto seg : split_path(pattern)) {
    if (seg.find('*') != std::string_view::npos && seg != "*" && seg != "**")
      return fail("'*' and '**' stand for whole path segments");
    if (seg == "**" && !g.segments.empty() && g.segments.back() == "**") continue;
    g.segments.emplace_back(seg);
  }
  if (g.segments.size() > max_segments) return fail("path pattern deeper than 32 segments");
  return g;
}

bool grant_matches_stream(const grant& g, std::string_view stream) {
  return glob_match(g.stream, stream);
}

bool grant_matches_path(const grant& g, std::string_view path) {
  if (g.any_path) return true;
  if (!path.starts_with('/')) return false;
  segment_matcher m(g.segments);
  for (auto seg : split_path(path))
    if (!m.step(seg, false)) return false;
  return m.accepted();
}

bool grant_overlaps_prefix(const grant& g, std::string_view prefix) {
  if (g.any_path || prefix.empty()) return true;
  if (!prefix.starts_with('/')) return false;
  // Whole segments first; the last one may still grow into any segment.
  auto segs = split_path(prefix);
  segment_matcher m(g.segments);
  for (std::size_t i = 0; i < segs.size(); ++i)
    if (!m.step(segs[i], i + 1 == segs.size())) return false;
  return true;
}

bool grant_set::covers_prefix(std::string_view stream, std::string_view prefix) const {
  return std::any_of(grants_.begin(), grants_.end(), [&](const grant& g) {
    return grant_matches_stream(g, stream) && grant_overlaps_prefix(g, prefix);
  });
}

bool grant_set::covers(std::string_view stream, std::string_view path) const {
  return std::any_of(grants_.begin(), grants_.end(), [&](const grant& g) {
    return grant_matches_stream(g, stream) && grant_matches_path(g, path);
  });
}

bool grant_set::covers_all_under(std::string_view stream, std::string_view prefix) const {
  return std::any_of(grants_.begin(), grants_.end(), [&](const grant& g) {
    if (!grant_matches_stream(g, stream)) return false;
    if (g.any_path) return true;
    // "/lit/.../lit/**" covers exactly the paths below "/lit/.../lit/".
    if (g.segments.empty() || g.segments.back() != "**") return false;
    std::string literal;
    for (std::size_t i = 0; i + 1 < g.segments.size(); ++i) {
      if (g.segments[i] == "*" || g.segments[i] == "**") return false;
      literal += '/' + g.segments[i];
    }
    return prefix.starts_with(literal + '/');
  });
}

bool grant_set::covers_tenant() const {
  return std::any_of(grants_.begin(), grants_.end(),
                     [](const grant& g) { return g.stream == "*" && g.any_path; });
}

grant_set grant_set::for_stream(std::string_view stream) const {
  std::vector<grant> out;
  for (const auto& g : grants_)
    if (grant_matches_stream(g, stream)) out.push_back(g);
  return grant_set(std::move(out));
}

bool grant_set::whole_stream() const {
  return std::any_of(grants_.begin(), grants_.end(), [](const grant& g) { return g.any_path; });
}

bool grant_set::covers_path(std::string_view path) const {
  return std::any_of(grants_.begin(), grants_.end(),
                     [&](const grant& g) { return grant_matches_path(g, path); });
}

}  // namespace tidings::core
