#pragma once

// One inotify instance for every file watch of a node (the file connector
// holds it). Linux caps inotify instances per user (fs.inotify.max_user_
// instances, 128 by default), so an instance per watched file capped a node
// at 128 file watches; watches per instance are capped far higher
// (fs.inotify.max_user_watches, 8192 at the least).
//
// The kernel keeps one watch per inode and instance: two listeners of one
// directory share its watch descriptor, their masks added (IN_MASK_ADD),
// and each hears only the events of its own mask. The kernel watch goes
// when its last listener does, or when the kernel drops it (IN_IGNORED: the
// directory removed or unmounted), which every listener of it hears.
//
// Events are read in bounded batches on the sources thread; each listener
// hears each event of its watches, then one end of batch (so that a batch
// becomes at most one change per listener). A lost-events overflow
// (IN_Q_OVERFLOW) goes to every listener.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace tidings::sources::file {

class inotify_listener {
 public:
  virtual ~inotify_listener() = default;
  // An event of watch `wd` (its name in the directory, "" for the directory
  // itself); IN_Q_OVERFLOW comes with wd -1. May add and remove watches.
  virtual void on_inotify_event(int wd, std::uint32_t mask, std::string_view name) = 0;
  // After the events of one batch, to every listener that heard one.
  virtual void on_inotify_batch_end() = 0;
  // The instance failed (reading it): no more events come.
  virtual void on_inotify_failed(const std::string& why) = 0;
};

class inotify_hub : public std::enable_shared_from_this<inotify_hub> {
 public:
  // nullptr with *error ("inotify_init1: ...") when the kernel refuses one.
  static std::shared_ptr<inotify_hub> open(boost::asio::io_context& io, std::string* error);
  ~inotify_hub();
  inotify_hub(const inotify_hub&) = delete;
  inotify_hub& operator=(const inotify_hub&) = delete;

  // Watches `path` with `mask` for `listener`: its watch descriptor, or -1
  // with *error ("inotify_add_watch: ...") and *err (the errno). The
  // listener must remove() it, or be gone (its weak pointer expired).
  int add(const std::string& path, std::uint32_t mask, const std::shared_ptr<inotify_listener>& listener,
          std::string* error, int* err = nullptr);
  // `listener` hears no more of `wd`.
  void remove(int wd, const inotify_listener* listener);

  // Reading the instance failed: it hears nothing more (make another).
  bool failed() const { return failed_; }

 private:
  explicit inotify_hub(boost::asio::io_context& io);
  void arm();
  void on_readable();
  void fail(const std::string& why);

  struct subscriber {
    std::weak_ptr<inotify_listener> listener;
    const inotify_listener* key;
    std::uint32_t mask;
  };
  boost::asio::posix::stream_descriptor descriptor_;
  std::map<int, std::vector<subscriber>> watches_;  // by watch descriptor
  bool failed_ = false;
};

}  // namespace tidings::sources::file
