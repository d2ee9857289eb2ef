#pragma once

// Settings of the file source (issue 4), filled by the broker from the node
// configuration's YAML.

#include <cstddef>
#include <string>
#include <vector>

namespace tidings::sources::file {

struct file_config {
  // Absolute directories whose files and subdirectories may be watched and
  // read. A multi-tenant broker must not expose the whole disk: a file:// URI
  // is served only when its real path (symlinks and `..` resolved) is a root
  // or lies beneath one, checked when the URI is opened and again on every
  // read (a path may be swapped for a symlink later). Each root must exist
  // and be a directory when the connector starts; none configured means the
  // connector fails to start.
  std::vector<std::string> roots;

  // A watched file larger than this reads as an error; in a directory
  // listing such a file has "sha256": null (size and mtime still change).
  std::size_t max_file_bytes = 4 * 1024 * 1024;

  // A directory with more entries than this reads as an error: every read
  // lists and stats all of them.
  std::size_t max_dir_entries = 4096;

  // Bytes hashed per directory listing at most; files past it (in name
  // order) get "sha256": null, so one read never hashes gigabytes.
  std::size_t max_listing_hash_bytes = 64 * 1024 * 1024;
};

}  // namespace tidings::sources::file
