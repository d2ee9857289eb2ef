#pragma once

// Read and write grants from a token's `tidings` claim: "STREAM" (every path
// of the stream) or "STREAM:PATH_PATTERN". The stream part may use `*` for
// any run of characters ("*", "docs-*"); readable streams keep their own
// colon ("watch:daily", "src:*"). A path pattern starts with '/' and is
// matched segment by segment: `*` is exactly one segment, `**` any number of
// them (zero included), anything else is literal.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidings::core {

struct grant {
  std::string stream;  // glob over the stream name
  bool any_path = true;
  std::vector<std::string> segments;  // the path pattern when !any_path
};

// nullopt and a reason in *error when the entry is malformed.
std::optional<grant> parse_grant(std::string_view entry, std::string* error);

bool grant_matches_stream(const grant& g, std::string_view stream);
// An event's path; an event with no path is covered only by a whole-stream grant.
bool grant_matches_path(const grant& g, std::string_view path);
// Whether some path that starts with `prefix` (a plain string prefix, as an
// SSE or history prefix is) matches the pattern.
bool grant_overlaps_prefix(const grant& g, std::string_view prefix);

// The grants of one kind (read or write) a principal holds.
class grant_set {
 public:
  grant_set() = default;
  explicit grant_set(std::vector<grant> grants) : grants_(std::move(grants)) {}

  const std::vector<grant>& all() const { return grants_; }
  bool empty() const { return grants_.empty(); }
  // Some grant names the stream and can match a path under the prefix.
  bool covers_prefix(std::string_view stream, std::string_view prefix) const;
  bool covers(std::string_view stream, std::string_view path) const;
  // Every path that starts with `prefix` is covered (for readers that are
  // not checked per event, such as a watch's feed).
  bool covers_all_under(std::string_view stream, std::string_view prefix) const;
  // A "*" grant on every path: the whole tenant.
  bool covers_tenant() const;
  // The grants that name this stream, so a session checks each event
  // against those few only; whole-stream grants make per-event checks moot.
  grant_set for_stream(std::string_view stream) const;
  bool whole_stream() const;
  bool covers_path(std::string_view path) const;

 private:
  std::vector<grant> grants_;
};

}  // namespace tidings::core
