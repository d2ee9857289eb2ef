#include "sources/file/inotify_hub.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/inotify.h>
#include <unistd.h>

namespace tidings::sources::file {
namespace {

// What every listener of a watch hears whatever its mask: the watch gone,
// its file system gone.
constexpr std::uint32_t always = IN_IGNORED | IN_UNMOUNT;

}  // namespace

inotify_hub::inotify_hub(boost::asio::io_context& io) : descriptor_(io) {}

inotify_hub::~inotify_hub() {
  boost::system::error_code ignored;
  descriptor_.close(ignored);  // drops every kernel watch
}

std::shared_ptr<inotify_hub> inotify_hub::open(boost::asio::io_context& io, std::string* error) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    *error = std::string("inotify_init1: ") + std::strerror(errno);
    return nullptr;
  }
  std::shared_ptr<inotify_hub> hub(new inotify_hub(io));
  boost::system::error_code ec;
  hub->descriptor_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    *error = "inotify: " + ec.message();
    return nullptr;
  }
  hub->arm();
  return hub;
}

int inotify_hub::add(const std::string& path, std::uint32_t mask,
                     const std::shared_ptr<inotify_listener>& listener, std::string* error, int* err) {
  if (failed_) {
    if (err) *err = EIO;
    *error = "inotify: the node's instance failed";
    return -1;
  }
  // Added to what other listeners of this inode asked for, not replacing it.
  int wd = ::inotify_add_watch(descriptor_.native_handle(), path.c_str(), mask | IN_MASK_ADD);
  if (wd < 0) {
    int e = errno;
    if (err) *err = e;
    *error = std::string("inotify_add_watch: ") + std::strerror(e);
    return -1;
  }
  watches_[wd].push_back({listener, listener.get(), mask});
  return wd;
}

void inotify_hub::remove(int wd, const inotify_listener* listener) {
  auto it = watches_.find(wd);
  if (it == watches_.end()) return;
  std::erase_if(it->second, [listener](const subscriber& s) { return s.key == listener; });
  if (!it->second.empty()) return;
  watches_.erase(it);
  ::inotify_rm_watch(descriptor_.native_handle(), wd);
}

void inotify_hub::arm() {
  descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                         [weak = weak_from_this()](const boost::system::error_code& ec) {
                           auto self = weak.lock();
                           if (!self || ec == boost::asio::error::operation_aborted) return;
                           if (ec) return self->fail("inotify wait failed: " + ec.message());
                           self->on_readable();
                         });
}

void inotify_hub::fail(const std::string& why) {
  failed_ = true;
  boost::system::error_code ignored;
  descriptor_.close(ignored);  // its kernel watches go with it
  auto watches = std::move(watches_);
  watches_.clear();
  for (auto& [wd, subs] : watches)
    for (auto& s : subs)
      if (auto l = s.listener.lock()) l->on_inotify_failed(why);
}

void inotify_hub::on_readable() {
  // Who heard something, to hear the end of the batch once.
  std::vector<std::weak_ptr<inotify_listener>> heard;
  std::vector<const inotify_listener*> heard_keys;
  auto deliver = [&](const subscriber& s, int wd, std::uint32_t mask, std::string_view name) {
    auto l = s.listener.lock();
    if (!l) return;
    l->on_inotify_event(wd, mask, name);
    if (std::find(heard_keys.begin(), heard_keys.end(), s.key) == heard_keys.end()) {
      heard_keys.push_back(s.key);
      heard.push_back(s.listener);
    }
  };
  alignas(inotify_event) char buf[16 * 1024];
  std::string failure;
  // Bounded, so an endless storm cannot hold the sources thread: what is
  // left keeps the descriptor readable and comes with the next wait.
  for (int reads = 0; reads < 64; ++reads) {
    ssize_t n = ::read(descriptor_.native_handle(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        failure = std::string("reading inotify events: ") + std::strerror(errno);
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
        // Events were lost, whose is unknown: every listener (once) reads again.
        std::vector<subscriber> all;
        for (const auto& [wd, subs] : watches_)
          for (const auto& s : subs)
            if (std::none_of(all.begin(), all.end(), [&](const subscriber& a) { return a.key == s.key; }))
              all.push_back(s);
        for (const auto& s : all) deliver(s, -1, ev.mask, {});
        continue;
      }
      auto it = watches_.find(ev.wd);
      if (it == watches_.end()) continue;  // removed while this was queued
      // A copy: a listener may add or remove watches as it hears this.
      auto subs = it->second;
      for (const auto& s : subs)
        if ((ev.mask & s.mask & IN_ALL_EVENTS) || (ev.mask & always)) deliver(s, ev.wd, ev.mask, name);
      if (ev.mask & IN_IGNORED) watches_.erase(ev.wd);  // the kernel dropped it
    }
  }
  for (const auto& w : heard)
    if (auto l = w.lock()) l->on_inotify_batch_end();
  if (!failure.empty()) return fail(failure);
  arm();
}

}  // namespace tidings::sources::file
