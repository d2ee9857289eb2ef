#include "tests/support/raw_sse_session.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tidings::testing {

namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

raw_sse_session::raw_sse_session(const client::endpoint& ep, const std::string& target,
                                 std::chrono::milliseconds timeout, int receive_buffer_bytes) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  // Must precede connect: the window scale is fixed by the handshake.
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(ep.port);
  if (::inet_pton(AF_INET, ep.host.c_str(), &addr.sin_addr) != 1)
    throw std::runtime_error("raw_sse_session needs a numeric IPv4 host, got " + ep.host);
  // Loopback connects complete or fail at once; no need for a non-blocking connect.
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    auto err = std::string("connect: ") + std::strerror(errno);
    ::close(fd_);
    throw std::runtime_error(err);
  }
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: " + ep.host + ":" + std::to_string(ep.port) +
                        "\r\nAccept: text/event-stream\r\n\r\n";
  open(request, deadline);
}

raw_sse_session::raw_sse_session(std::unique_ptr<tls_client> tls, const std::string& target,
                                 const std::string& headers, std::chrono::milliseconds timeout)
    : tls_(std::move(tls)) {
  open("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n" + headers + "\r\n",
       std::chrono::steady_clock::now() + timeout);
}

void raw_sse_session::send_all(const std::string& request) {
  if (tls_) return tls_->write_all(request);
  std::size_t sent = 0;
  while (sent < request.size()) {
    auto n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto err = std::string("send: ") + std::strerror(errno);
      close_connection();
      throw std::runtime_error(err);
    }
    sent += static_cast<std::size_t>(n);
  }
}

void raw_sse_session::close_connection() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  tls_.reset();
}

void raw_sse_session::open(const std::string& request, std::chrono::steady_clock::time_point deadline) {
  send_all(request);
  std::string head;
  std::size_t end = std::string::npos;
  while ((end = head.find("\r\n\r\n")) == std::string::npos) {
    if (!read_some(deadline, head) || eof_) {
      close_connection();
      throw std::runtime_error("no complete response header; got: " + head);
    }
  }
  std::string rest = head.substr(end + 4);
  head.resize(end);
  auto lower = lowercase(head);
  if (head.rfind("HTTP/1.1 200", 0) != 0 && head.rfind("HTTP/1.0 200", 0) != 0) {
    close_connection();
    throw std::runtime_error("SSE response is not 200: " + head + "\r\n\r\n" + rest);
  }
  chunked_ = lower.find("transfer-encoding: chunked") != std::string::npos;
  feed_body(rest);
}

raw_sse_session::~raw_sse_session() {
  close_connection();
}

bool raw_sse_session::read_some(std::chrono::steady_clock::time_point deadline, std::string& into) {
  if (tls_) return tls_->read_some(deadline, into, eof_);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return false;
    char buf[16384];
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;  // orderly close or reset: either way nothing more comes
      return true;
    }
    into.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

void raw_sse_session::feed_body(std::string_view bytes) {
  auto to_parser = [this](std::string_view b) {
    parser_.feed(b, [this](core::sse_message&& m) { pending_.push_back(std::move(m)); });
  };
  if (!chunked_) {
    to_parser(bytes);
    return;
  }
  while (!bytes.empty()) {
    if (in_chunk_) {
      auto take = std::min(chunk_left_, bytes.size());
      to_parser(bytes.substr(0, take));
      bytes.remove_prefix(take);
      chunk_left_ -= take;
      if (chunk_left_ == 0) {
        in_chunk_ = false;
        after_chunk_ = true;
      }
      continue;
    }
    // Between chunks: a CRLF after the data, then a hex size line (extensions ignored).
    size_line_ += bytes.front();
    bytes.remove_prefix(1);
    if (size_line_.size() < 2 || size_line_.compare(size_line_.size() - 2, 2, "\r\n") != 0) continue;
    if (after_chunk_) {
      after_chunk_ = false;
      size_line_.clear();
      continue;
    }
    std::size_t size = 0;
    for (char c : size_line_) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) break;
      size = size * 16 + static_cast<std::size_t>(std::isdigit(static_cast<unsigned char>(c))
                                                      ? c - '0'
                                                      : (std::tolower(c) - 'a' + 10));
    }
    size_line_.clear();
    if (size == 0) {
      eof_ = true;  // the last chunk: the server ended the stream
      return;
    }
    chunk_left_ = size;
    in_chunk_ = true;
  }
}

raw_sse_session::result raw_sse_session::next(core::sse_message& out, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (!pending_.empty()) {
      out = std::move(pending_.front());
      pending_.pop_front();
      return result::message;
    }
    if (eof_) return result::closed;
    std::string got;
    if (!read_some(deadline, got)) return result::timeout;
    feed_body(got);
  }
}

}  // namespace tidings::testing
