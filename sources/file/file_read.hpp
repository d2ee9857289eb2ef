#pragma once

// One read of a file target: a file's content, or a directory's listing.
// Synchronous local I/O on the sources thread, bounded by the file_config
// limits.

#include "sources/file/file_path.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::file {

// A file: its content, "application/json" when it parses as JSON, else
// "text/plain". A directory: a JSON array sorted by name of
// {"name","size","mtime_ms","sha256","type"}, type "file", "dir", "symlink"
// (not followed: its target may lie outside the roots) or "other"; sha256
// only for regular files within the limits, else null. A recursive target
// lists every entry beneath the directory, named by its path relative to
// it ("sub/a.txt"), sorted by that path; max_dir_entries bounds them all.
// The real path is
// checked against the roots again first. A path that does not exist reads
// as JSON `null` when `missing_as_null` (a watched file that vanished is a
// change), else as an error.
read_outcome read_file_target(const file_target& target, const file_scope& scope, bool missing_as_null);

}  // namespace tidings::sources::file
