#include "sources/file/file_read.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sources/content_hash.hpp"

namespace tidings::sources::file {
namespace {

// Closes a descriptor on every path out.
class fd_guard {
 public:
  explicit fd_guard(int fd) : fd_(fd) {}
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

enum class slurp_status { ok, too_large, failed };

// Reads fd to its end, at most `max` bytes.
slurp_status slurp(int fd, std::size_t max, std::string& out) {
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return slurp_status::failed;
    }
    if (n == 0) return slurp_status::ok;
    if (out.size() + static_cast<std::size_t>(n) > max) return slurp_status::too_large;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::int64_t mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

read_outcome read_content(const file_target& target, int fd, const file_config& config) {
  std::string text;
  switch (slurp(fd, config.max_file_bytes, text)) {
    case slurp_status::ok:
      break;
    case slurp_status::too_large:
      return read_outcome::failed(target.uri + ": larger than " + std::to_string(config.max_file_bytes) +
                                  " bytes");
    case slurp_status::failed:
      return read_outcome::failed(target.uri + ": " + std::strerror(errno));
  }
  bool json = nlohmann::json::accept(text);
  return read_outcome::ok({json ? "application/json" : "text/plain", std::move(text)});
}

// One directory's entries into `out` (names prefixed with `prefix`), and
// with `recursive` its subdirectories' after each, opened relative to their
// parent without following symlinks: a directory swapped for a symlink to
// outside the roots is not entered. Consumes `fd`. Empty, or the error.
// What one listing has used so far, across every directory it walks.
struct listing_budget {
  std::size_t entries = 0;  // read from every directory, listed or not yet
  std::size_t hashed = 0;   // bytes of content hashed
};

// A recursive listing goes no deeper: the walk keeps one directory open per level.
constexpr int max_listing_depth = 64;

std::string list_directory(const file_target& target, int fd, const std::string& prefix, int depth,
                           const file_config& config, listing_budget& budget, nlohmann::json& out) {
  DIR* dir = ::fdopendir(fd);
  if (!dir) {
    auto message = target.uri + ": " + std::strerror(errno);
    ::close(fd);
    return message;
  }
  struct entry {
    std::string name;
    struct stat st;
  };
  std::vector<entry> entries;
  std::string error;
  errno = 0;
  while (dirent* d = ::readdir(dir)) {
    std::string_view name = d->d_name;
    if (name == "." || name == "..") continue;
    if (budget.entries == config.max_dir_entries) {
      error = target.uri + ": more than " + std::to_string(config.max_dir_entries) + " entries";
      break;
    }
    ++budget.entries;
    entry e{std::string(name), {}};
    // Gone between readdir and fstatat: as if listed a moment later.
    if (::fstatat(::dirfd(dir), e.name.c_str(), &e.st, AT_SYMLINK_NOFOLLOW) == 0)
      entries.push_back(std::move(e));
    errno = 0;
  }
  if (error.empty() && errno != 0) error = target.uri + ": " + std::strerror(errno);
  if (!error.empty()) {
    ::closedir(dir);
    return error;
  }
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.name < b.name; });

  for (const auto& e : entries) {
    nlohmann::json sha = nullptr;
    const char* type = "other";
    if (S_ISREG(e.st.st_mode)) {
      type = "file";
      auto size = static_cast<std::size_t>(e.st.st_size);
      if (size <= config.max_file_bytes && budget.hashed + size <= config.max_listing_hash_bytes) {
        fd_guard f(::openat(::dirfd(dir), e.name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
        struct stat now {};
        std::string content;
        if (f.get() >= 0 && ::fstat(f.get(), &now) == 0 && S_ISREG(now.st_mode) &&
            slurp(f.get(), config.max_file_bytes, content) == slurp_status::ok) {
          budget.hashed += content.size();
          sha = sha256_hex(content);
        }
      }
    } else if (S_ISDIR(e.st.st_mode)) {
      type = "dir";
    } else if (S_ISLNK(e.st.st_mode)) {
      type = "symlink";
    }
    out.push_back({{"name", prefix + e.name},
                   {"size", static_cast<std::int64_t>(e.st.st_size)},
                   {"mtime_ms", mtime_ms(e.st)},
                   {"sha256", std::move(sha)},
                   {"type", type}});
    if (!target.recursive || !S_ISDIR(e.st.st_mode)) continue;
    if (depth == max_listing_depth) {
      error = target.uri + ": deeper than " + std::to_string(max_listing_depth) + " directories";
      break;
    }
    int sub = ::openat(::dirfd(dir), e.name.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
    if (sub < 0) {
      // Gone, or no longer a directory (a symlink now): as if listed a
      // moment later. Anything else would list a tree with holes.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) continue;
      error = target.uri + ": " + prefix + e.name + ": " + std::strerror(errno);
      break;
    }
    error = list_directory(target, sub, prefix + e.name + "/", depth + 1, config, budget, out);
    if (!error.empty()) break;
  }
  ::closedir(dir);
  return error;
}

read_outcome read_listing(const file_target& target, int fd, const file_config& config) {
  auto out = nlohmann::json::array();
  listing_budget budget;
  auto error = list_directory(target, fd, "", 0, config, budget, out);
  if (!error.empty()) return read_outcome::failed(std::move(error));
  // By path: "a", "a-b", "a/x" (a walk visits "a/x" before "a-b").
  if (target.recursive)
    std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      return a.at("name").get_ref<const std::string&>() < b.at("name").get_ref<const std::string&>();
    });
  // File names need not be UTF-8; JSON text must be.
  return read_outcome::ok(
      {"application/json", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
}

}  // namespace

read_outcome read_file_target(const file_target& target, const file_scope& scope, bool missing_as_null) {
  auto missing = [&] {
    if (missing_as_null) return read_outcome::ok({"application/json", "null"});
    return read_outcome::failed(target.uri + ": " + std::strerror(ENOENT));
  };
  auto real = real_path(target.path);
  if (!real) {
    if (errno == ENOENT || errno == ENOTDIR) return missing();
    return read_outcome::failed(target.uri + ": " + std::strerror(errno));
  }
  if (!under_roots(*real, scope.real_roots))
    return read_outcome::failed(target.uri +
                                ": now outside the allowed file roots (after resolving symlinks)");
  // O_NOFOLLOW: the checked path must not turn into a symlink before the
  // open; O_NONBLOCK: a FIFO must not block the sources thread.
  fd_guard fd(::open(real->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) return missing();
    return read_outcome::failed(target.uri + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return read_outcome::failed(target.uri + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return read_listing(target, fd.release(), scope.config);
  if (target.recursive)
    return read_outcome::failed(target.uri + ": recursive=true lists a directory, and this is not one");
  if (S_ISREG(st.st_mode)) return read_content(target, fd.get(), scope.config);
  return read_outcome::failed(target.uri + ": not a regular file or directory");
}

}  // namespace tidings::sources::file
