// core/grant.hpp: grants come from a token's `tidings` claim, paths, prefixes
// and stream names from requests. Input: the first line is the grant entry,
// the rest is matched against it as a stream name, an event path and a
// prefix. Invariants: a refused entry says why; a parsed grant never crashes
// a matcher; a path the grant matches overlaps every prefix of that path;
// grant_set agrees with the single-grant matchers.

#include <string>

#include "core/grant.hpp"
#include "fuzz_check.hpp"

using namespace tidings;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  auto newline = text.find('\n');
  std::string_view entry = text.substr(0, newline);
  std::string_view rest = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);

  std::string error;
  auto g = core::parse_grant(entry, &error);
  if (!g) {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(!core::parse_grant(entry, nullptr));  // no error out-parameter is fine too
    return 0;
  }
  FUZZ_CHECK(!g->stream.empty());
  FUZZ_CHECK(g->any_path == g->segments.empty());

  bool stream = core::grant_matches_stream(*g, rest);
  bool path = core::grant_matches_path(*g, rest);
  bool prefix = core::grant_overlaps_prefix(*g, rest);
  // The grant's own stream text matches itself (a '*' matches a '*').
  FUZZ_CHECK(core::grant_matches_stream(*g, g->stream));
  // Some path under every prefix of a matching path matches: that path.
  if (path) {
    FUZZ_CHECK(prefix);
    for (std::size_t n = 0; n <= rest.size() && n <= 256; ++n)
      FUZZ_CHECK(core::grant_overlaps_prefix(*g, rest.substr(0, n)));
  }
  if (g->any_path) FUZZ_CHECK(path && prefix);

  core::grant_set set({*g});
  FUZZ_CHECK(set.covers(rest, rest) == (stream && path));
  FUZZ_CHECK(set.covers_prefix(rest, rest) == (stream && prefix));
  FUZZ_CHECK(set.for_stream(rest).all().size() == (stream ? 1u : 0u));
  FUZZ_CHECK(set.whole_stream() == g->any_path);
  FUZZ_CHECK(set.covers_path(rest) == path);
  return 0;
}
