#pragma once

// file:// URIs and the roots they must stay under.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/file/file_config.hpp"

namespace tidings::sources::file {

// The configuration with its roots resolved to real paths, shared by the
// connector and its upstreams.
struct file_scope {
  std::vector<std::string> real_roots;
  file_config config;
};

// Resolves every root (realpath, must be a directory). nullopt with *error
// naming the first bad root, or when there is none.
std::optional<file_scope> make_file_scope(const file_config& config, std::string* error);

// What a file:// URI names.
struct file_target {
  // The real path. When the path does not exist (yet), the real path of its
  // nearest existing ancestor followed by the missing names.
  std::string path;
  std::string uri;  // canonical: "file://" + path, percent-encoded, then "?recursive=true" if so
  // `?recursive=true`: a directory and every directory beneath it.
  bool recursive = false;
};

// Parses `file:///absolute/path` (host empty or "localhost", percent-decoded,
// no fragment; the one query is `recursive=true` or `recursive=false`) and
// resolves it. nullopt with a message for the user
// in *error when the URI is malformed, a component cannot be resolved, or the
// real path is outside every root.
std::optional<file_target> resolve_file_uri(std::string_view uri, const file_scope& scope,
                                            std::string* error);

// Whether a real path is one of the roots or beneath one.
bool under_roots(std::string_view real_path, const std::vector<std::string>& real_roots);

// "file://" + the path with everything but unreserved characters, '/' and
// sub-delims percent-encoded: one spelling per path, and one that the
// `file://{+path}` template matches back.
std::string file_uri(std::string_view path);

// The real path (realpath(3)), or nullopt with errno set.
std::optional<std::string> real_path(const std::string& path);

}  // namespace tidings::sources::file
