#include "sources/file/file_upstream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "sources/file/file_read.hpp"

namespace tidings::sources::file {
namespace {

// Entries appearing, disappearing or being written in the watched directory.
constexpr std::uint32_t change_mask =
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB;
// The watched directory itself going away.
constexpr std::uint32_t self_mask = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED;
// A recursive watch goes no deeper: a walk keeps one directory open per level.
constexpr int max_depth = 64;

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

struct file_upstream::watch final : inotify_listener {
  // Ends the subscription: nothing runs after `ended`.
  void end(std::string reason) {
    stop();
    auto ended = handlers.ended;
    if (ended) ended(std::move(reason));
  }

  void stop() {
    closed = true;
    unwatch_all();
  }

  void unwatch_all() {
    for (const auto& [wd, dir] : dirs) hub->remove(wd, this);
    dirs.clear();
    by_path.clear();
  }

  // Watches `dir` and, recursively, the directories beneath it. Never
  // through a symlink: the watch does not follow one (IN_DONT_FOLLOW), the
  // walk opens each directory with O_NOFOLLOW, and a directory whose real
  // path left the roots (a parent swapped for a symlink) is not watched.
  // False with `end_reason` set when the tree cannot be watched.
  bool watch_tree(const std::string& dir, int depth) {
    if (depth > max_depth) {
      end_reason = uri + ": deeper than " + std::to_string(max_depth) + " directories";
      return false;
    }
    auto real = real_path(dir);
    if (!real || *real != dir || !under_roots(*real, *roots)) return true;  // moved, gone or swapped
    std::string error;
    int err = 0;
    int wd = hub->add(dir, change_mask | self_mask | IN_ONLYDIR | IN_DONT_FOLLOW, shared(), &error, &err);
    if (wd < 0) {
      // Gone again before it was watched: its removal is a change already.
      if (err == ENOENT || err == ENOTDIR) return true;
      end_reason = uri + ": " + dir + ": " + error;
      return false;
    }
    dirs[wd] = dir;
    by_path[dir] = wd;
    if (dirs.size() > max_dirs) {
      end_reason = uri + ": more than " + std::to_string(max_dirs) + " directories beneath it";
      return false;
    }
    return watch_children(dir, depth);
  }

  // The directories in `dir` (watched already or not), recursively: those
  // not watched get their watches.
  bool watch_children(const std::string& dir, int depth) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
    if (!d) {
      if (fd >= 0) ::close(fd);
      return true;  // removed meanwhile: its IN_IGNORED follows
    }
    std::vector<std::string> subdirs;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {  // some file systems do not say
        struct stat st {};
        is_dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir) subdirs.push_back(dir + "/" + std::string(n));
    }
    ::closedir(d);
    for (const auto& sub : subdirs) {
      bool ok = by_path.contains(sub) ? watch_children(sub, depth + 1) : watch_tree(sub, depth + 1);
      if (!ok) return false;
    }
    return true;
  }

  // A directory moved out of the tree keeps its kernel watches, which would
  // report on it from wherever it went.
  void unwatch_tree(const std::string& dir) {
    for (auto it = by_path.lower_bound(dir); it != by_path.end();) {
      if (it->first != dir && !it->first.starts_with(dir + "/")) {
        ++it;
        continue;
      }
      hub->remove(it->second, this);
      dirs.erase(it->second);
      it = by_path.erase(it);
    }
  }

  void on_inotify_event(int wd, std::uint32_t mask, std::string_view entry) override {
    if (closed) return;
    if (wd < 0) {
      changed = true;  // events were lost; a read catches up
      // and directories made meanwhile get their watches.
      if (recursive && dirs.contains(root) && !watch_children(dirs.at(root), 0)) unwatch_all();
      return;
    }
    auto dir = dirs.find(wd);
    if (dir == dirs.end()) return;
    if (wd == root) {
      if (mask & self_mask) return root_gone(mask);
      if (!(mask & change_mask) || (!name.empty() && entry != name)) return;
      if (name.empty() || !fresh_file_created(path, mask)) changed = true;
    } else {
      changed = changed || (mask & (change_mask | self_mask)) != 0;
      if (mask & IN_IGNORED) {
        by_path.erase(dir->second);
        dirs.erase(dir);
        return;
      }
    }
    if (!recursive || !(mask & IN_ISDIR) || entry.empty()) return;
    auto sub = dir->second + "/" + std::string(entry);
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      changed = true;
      if (!watch_tree(sub, depth_of(sub))) unwatch_all();
    } else if (mask & IN_MOVED_FROM) {
      unwatch_tree(sub);
    }
  }

  void root_gone(std::uint32_t mask) {
    changed = true;
    if (!end_reason.empty()) return;
    const char* what = name.empty() ? "directory" : "parent directory";
    if (mask & IN_MOVE_SELF)
      end_reason = uri + ": " + what + " moved";
    else if (mask & IN_UNMOUNT)
      end_reason = uri + ": file system unmounted";
    else
      end_reason = uri + ": " + what + " removed";
  }

  // How far below the watched directory `dir` is.
  int depth_of(const std::string& dir) const {
    const auto& top = dirs.at(root);
    return static_cast<int>(
        std::count(dir.begin() + static_cast<std::ptrdiff_t>(top.size()), dir.end(), '/'));
  }

  void on_inotify_batch_end() override {
    if (closed) return;
    if (changed) {
      changed = false;
      auto updated = handlers.updated;
      if (updated) updated();
      if (closed) return;  // closed, or resubscribed, inside the handler
    }
    if (!end_reason.empty()) end(std::move(end_reason));
  }

  void on_inotify_failed(const std::string& why) override {
    if (!closed) end(uri + ": " + why);
  }

  std::shared_ptr<inotify_listener> shared() { return self.lock(); }

  std::weak_ptr<watch> self;
  std::shared_ptr<inotify_hub> hub;
  upstream::handlers handlers;
  std::string uri;
  std::string name;  // the watched entry in its parent; "" when watching a directory itself
  std::string path;  // its real path
  bool recursive = false;
  std::size_t max_dirs = 0;
  const std::vector<std::string>* roots = nullptr;  // the scope's, real paths
  int root = -1;                                    // the watch of the directory (or the file's parent)
  std::map<int, std::string> dirs;                  // every watch held, by descriptor: its directory
  std::map<std::string, int> by_path;               // and back
  bool changed = false;                             // in this batch
  std::string end_reason;                           // at the end of this batch
  bool closed = false;
};

file_upstream::file_upstream(boost::asio::io_context& io, file_target target,
                             std::shared_ptr<const file_scope> scope, std::shared_ptr<inotify_hub> hub,
                             std::string hub_error)
    : io_(io),
      target_(std::move(target)),
      scope_(std::move(scope)),
      hub_(std::move(hub)),
      hub_error_(std::move(hub_error)) {}

file_upstream::~file_upstream() {
  close();
}

void file_upstream::subscribe(handlers h) {
  if (!*open_) return;
  if (watch_) watch_->stop();
  auto w = std::make_shared<watch>();
  w->self = w;
  w->hub = hub_;
  w->handlers = std::move(h);
  w->uri = target_.uri;
  w->recursive = target_.recursive;
  w->max_dirs = scope_->config.max_dir_entries;
  w->roots = &scope_->real_roots;
  watch_ = w;
  // Both outcomes are posted: a caller may not expect its handler to run
  // inside subscribe(). A close() or a new subscribe() before the post runs
  // silences it.
  auto fail = [&](std::string reason) {
    w->unwatch_all();
    boost::asio::post(io_, [w, reason = std::move(reason)]() mutable {
      if (!w->closed) w->end(std::move(reason));
    });
  };
  if (!hub_) return fail(target_.uri + ": " + hub_error_);
  auto real = real_path(target_.path);
  struct stat st {};
  if (!real || ::stat(real->c_str(), &st) != 0) {
    int err = errno;
    return fail(target_.uri + ": " + std::strerror(err));
  }
  if (!under_roots(*real, scope_->real_roots))
    return fail(target_.uri + ": now outside the allowed file roots (after resolving symlinks)");
  if (target_.recursive && !S_ISDIR(st.st_mode))
    return fail(target_.uri + ": recursive=true watches a directory, and this is not one");

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
  std::string error;
  w->root = hub_->add(dir, mask, w, &error);
  if (w->root < 0) return fail(target_.uri + ": " + error);
  w->dirs[w->root] = dir;
  w->by_path[dir] = w->root;
  if (w->recursive && !w->watch_children(dir, 0)) return fail(std::move(w->end_reason));
  boost::asio::post(io_, [w] {
    if (w->closed) return;
    auto subscribed = w->handlers.subscribed;
    if (subscribed) subscribed();
  });
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
