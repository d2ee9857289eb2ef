#include "filters/pattern_cost.hpp"

#include <cmath>

namespace tidings::filters {

namespace {

// Skips one single-character class starting at `i`: a literal, `.`, `%x`
// or a set `[...]`. Returns the index after it.
std::size_t skip_class(std::string_view p, std::size_t i) {
  if (p[i] == '%') return std::min(i + 2, p.size());
  if (p[i] != '[') return i + 1;
  ++i;
  if (i < p.size() && p[i] == '^') ++i;
  // A ']' right after '[' or '[^' is a member, not the end.
  if (i < p.size() && p[i] == ']') ++i;
  while (i < p.size() && p[i] != ']') i += p[i] == '%' ? 2 : 1;
  return std::min(i + 1, p.size());
}

}  // namespace

double pattern_worst_case(std::string_view p, std::size_t subject_bytes) {
  const double n = static_cast<double>(subject_bytes) + 1;
  std::size_t i = 0;
  bool anchored = false;
  if (!p.empty() && p[0] == '^') {
    anchored = true;
    i = 1;
  }
  int repeats = 0;    // `*`, `+`, `-` and %b: each may scan the rest of the subject
  int optionals = 0;  // `?`: two tries each
  while (i < p.size()) {
    char c = p[i];
    if (c == '(' || c == ')') {
      ++i;
      continue;
    }
    if (c == '%' && i + 1 < p.size() && p[i + 1] == 'b') {
      ++repeats;
      i += 4;
      continue;
    }
    if (c == '%' && i + 1 < p.size() && p[i + 1] == 'f') {
      i = skip_class(p, i + 2);
      continue;
    }
    i = skip_class(p, i);
    if (i < p.size()) {
      if (p[i] == '*' || p[i] == '+' || p[i] == '-') {
        ++repeats;
        ++i;
      } else if (p[i] == '?') {
        ++optionals;
        ++i;
      }
    }
  }
  double steps = std::pow(n, repeats) * std::pow(2.0, std::min(optionals, 60));
  return anchored ? steps : steps * n;
}

std::optional<std::string> check_pattern_cost(std::string_view function, std::string_view pattern,
                                              std::size_t subject_bytes) {
  auto steps = pattern_worst_case(pattern, subject_bytes);
  if (steps <= max_pattern_steps) return std::nullopt;
  std::string shown(pattern.substr(0, 40));
  if (pattern.size() > 40) shown += "...";
  return "string." + std::string(function) + ": the pattern '" + shown + "' on " +
         std::to_string(subject_bytes) + " bytes could backtrack for about 10^" +
         std::to_string(static_cast<int>(std::log10(steps))) +
         " steps, more than the filter sandbox allows (10^9); anchor it with ^, use fewer of * + -, "
         "a shorter subject, or find with plain=true";
}

}  // namespace tidings::filters
