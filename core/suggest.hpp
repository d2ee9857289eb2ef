#pragma once

// "did you mean: ..." (the seed's hint on a failed first read, issue 24):
// the candidates closest to a mistyped name by edit distance
// (Damerau-Levenshtein, a swap of neighbours counting one), ties in the
// candidates' order, none further than a third of the name's length
// (at least 2).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tidings::core {

std::vector<std::string> closest_names(std::string_view wanted, const std::vector<std::string>& candidates,
                                       std::size_t max = 3);

// "did you mean: a, b, c" or "" when there is nothing close.
std::string did_you_mean(std::string_view wanted, const std::vector<std::string>& candidates);

}  // namespace tidings::core
