#include "sources/file/file_upstream.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "sources/file/file_read.hpp"

namespace tidings::sources::file {
namespace {

// Entries appearing, disappearing or being written in the watched directory.
constexpr std::uint32_t change_mask =
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB;
// The watched directory itself going away.
constexpr std::uint32_t self_mask = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED;

// Whether IN_CREATE made the watched name a new regular file. Its
// IN_CLOSE_WRITE follows when the writer is done; reading now would report
// an empty file and then the content, as two changes. A hard link
// (nlink > 1), a symlink or a directory arrives complete and counts.
bool fresh_file_created(const std::string& path, std::uint32_t mask) {
  if (!(mask & IN_CREATE) || (mask & IN_ISDIR)) return false;
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

}  // namespace

struct file_upstream::watch {
  explicit watch(boost::asio::io_context& io) : descriptor(io) {}

  void stop() {
    closed = true;
    boost::system::error_code ignored;
    descriptor.close(ignored);
  }

  // Ends the subscription: nothing runs after `ended`.
  void end(std::string reason) {
    stop();
    auto ended = handlers.ended;
    if (ended) ended(std::move(reason));
  }

  boost::asio::posix::stream_descriptor descriptor;
  upstream::handlers handlers;
  std::string uri;
  std::string name;  // the watched entry in its parent; "" when watching a directory itself
  std::string path;  // its real path
  bool closed = false;
};

file_upstream::file_upstream(boost::asio::io_context& io, file_target target,
                             std::shared_ptr<const file_scope> scope)
    : io_(io), target_(std::move(target)), scope_(std::move(scope)) {}

file_upstream::~file_upstream() {
  close();
}

void file_upstream::subscribe(handlers h) {
  if (!*open_) return;
  if (watch_) watch_->stop();
  auto w = std::make_shared<watch>(io_);
  w->handlers = std::move(h);
  w->uri = target_.uri;
  watch_ = w;
  // Both outcomes are posted: a caller may not expect its handler to run
  // inside subscribe().
  auto fail = [&](std::string reason) {
    boost::asio::post(io_, [w, reason = std::move(reason)]() mutable {
      if (!w->closed) w->end(std::move(reason));
    });
  };
  auto real = real_path(target_.path);
  struct stat st {};
  if (!real || ::stat(real->c_str(), &st) != 0) {
    int err = errno;
    return fail(target_.uri + ": " + std::strerror(err));
  }
  if (!under_roots(*real, scope_->real_roots))
    return fail(target_.uri + ": now outside the allowed file roots (after resolving symlinks)");

  std::string dir = *real;
  std::uint32_t mask = change_mask | self_mask | IN_ONLYDIR;
  if (!S_ISDIR(st.st_mode)) {
    auto slash = real->rfind('/');
    dir = slash == 0 ? std::string("/") : real->substr(0, slash);
    w->name = real->substr(slash + 1);
    w->path = *real;
    // An unlinked file still held open (a writer's temp file) sends no more
    // events to the parent's watch.
    mask |= IN_EXCL_UNLINK;
  }
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return fail(target_.uri + ": inotify_init1: " + std::strerror(err));
  }
  if (::inotify_add_watch(fd, dir.c_str(), mask) < 0) {
    int err = errno;
    ::close(fd);
    return fail(target_.uri + ": inotify_add_watch: " + std::strerror(err));
  }
  boost::system::error_code ec;
  w->descriptor.assign(fd, ec);
  if (ec) {
    ::close(fd);
    return fail(target_.uri + ": " + ec.message());
  }
  boost::asio::post(io_, [w] {
    if (w->closed) return;
    auto subscribed = w->handlers.subscribed;
    if (subscribed) subscribed();
    if (!w->closed) arm(w);
  });
}

void file_upstream::arm(const std::shared_ptr<watch>& w) {
  w->descriptor.async_wait(boost::asio::posix::descriptor_base::wait_read,
                           [w](const boost::system::error_code& ec) {
                             if (w->closed) return;
                             if (ec) return w->end(w->uri + ": inotify wait failed: " + ec.message());
                             on_readable(w);
                           });
}

void file_upstream::on_readable(const std::shared_ptr<watch>& w) {
  bool changed = false;
  std::string end_reason;
  alignas(inotify_event) char buf[16 * 1024];
  // Bounded, so an endless storm cannot hold the sources thread: what is
  // left keeps the descriptor readable and comes with the next wait.
  for (int reads = 0; reads < 64; ++reads) {
    ssize_t n = ::read(w->descriptor.native_handle(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        end_reason = w->uri + ": reading inotify events: " + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      inotify_event ev;
      std::memcpy(&ev, buf + off, sizeof ev);
      std::string_view name;
      if (ev.len > 0) name = std::string_view(buf + off + sizeof ev);  // NUL-padded
      off += static_cast<ssize_t>(sizeof ev + ev.len);
      if (ev.mask & IN_Q_OVERFLOW) {
        changed = true;  // events were lost; a read catches up
      } else if (ev.mask & self_mask) {
        changed = true;
        if (end_reason.empty()) {
          const char* what = w->name.empty() ? "directory" : "parent directory";
          if (ev.mask & IN_MOVE_SELF)
            end_reason = w->uri + ": " + what + " moved";
          else if (ev.mask & IN_UNMOUNT)
            end_reason = w->uri + ": file system unmounted";
          else
            end_reason = w->uri + ": " + what + " removed";
        }
      } else if ((ev.mask & change_mask) && (w->name.empty() || name == w->name)) {
        if (w->name.empty() || !fresh_file_created(w->path, ev.mask)) changed = true;
      }
    }
  }
  if (changed) {
    auto updated = w->handlers.updated;
    if (updated) updated();
    if (w->closed) return;  // closed, or resubscribed, inside the handler
  }
  if (!end_reason.empty()) return w->end(std::move(end_reason));
  arm(w);
}

void file_upstream::read(std::function<void(read_outcome)> done) {
  if (!*open_) return;
  // Read when the posted job runs, not now: a close() in between skips the
  // work as well as the callback.
  boost::asio::post(io_, [open = open_, target = target_, scope = scope_, done = std::move(done)] {
    if (!*open) return;
    done(read_file_target(target, *scope, true));
  });
}

void file_upstream::close() {
  *open_ = false;
  if (watch_) {
    watch_->stop();
    watch_.reset();
  }
}

}  // namespace tidings::sources::file
