#pragma once

// One watched file or directory, pushed by inotify (no polling).
//
// A file is watched through its parent directory, filtered by name, so that
// an atomic replace (write a temp file, rename it over) is seen: the new
// inode arrives as IN_MOVED_TO, which a watch on the old inode never gets.
// A directory is watched itself: entries created, deleted, moved, closed
// after writing or changed in their attributes. With `?recursive=true`
// every directory beneath it is watched too: one that appears (created or
// moved in) is watched, and walked for what it already holds; one moved
// out is no longer watched.
//
// Writes count when the writer closes the file (IN_CLOSE_WRITE), not on
// each IN_MODIFY: a storm of partial writes must not become a storm of reads
// of half-written content. A writer that keeps the file open is seen when it
// closes it. For the same reason a watched name that IN_CREATE turns into a
// new regular file counts at its IN_CLOSE_WRITE, not at its creation.
//
// Every batch of inotify events drained at once becomes at most one
// `updated` (the source reads once and diffs, so coalescing loses nothing).
// The watched directory removed, moved or unmounted ends the subscription
// (`updated` first, so the vanished content shows up as a change).
//
// Watches go through the node's one inotify instance (inotify_hub.hpp), so
// the kernel's cap on instances per user no longer caps the node's file
// watches; close() removes this subscription's kernel watches.

#include <memory>

#include <boost/asio/io_context.hpp>

#include "sources/file/file_path.hpp"
#include "sources/file/inotify_hub.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::file {

class file_upstream final : public upstream {
 public:
  const char* strategy() const override { return "inotify"; }
  // `hub`: the node's inotify instance; nullptr when it could not be made
  // (`hub_error` says why, and subscribe() ends with it).
  file_upstream(boost::asio::io_context& io, file_target target, std::shared_ptr<const file_scope> scope,
                std::shared_ptr<inotify_hub> hub, std::string hub_error);
  ~file_upstream() override;

  file_upstream(const file_upstream&) = delete;
  file_upstream& operator=(const file_upstream&) = delete;

  // Ends with "<uri>: No such file or directory" when the path does not
  // exist now, so a watch on a typo fails fast.
  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  const file_target& target() const { return target_; }

 private:
  // One subscription: its kernel watches and what it heard. The hub holds
  // it weakly (and strongly while calling it), so the upstream may be
  // destroyed inside a handler; `closed` silences it.
  struct watch;

  boost::asio::io_context& io_;
  file_target target_;
  std::shared_ptr<const file_scope> scope_;
  std::shared_ptr<inotify_hub> hub_;
  std::string hub_error_;
  std::shared_ptr<watch> watch_;
  // False after close(): posted reads then drop their `done`.
  std::shared_ptr<bool> open_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::file
