#pragma once

// A server-side TLS connection on the plain socket itself (OpenSSL's socket
// BIO on the non-blocking descriptor), driven by readiness waits: OpenSSL
// reads and writes the socket directly, with no copy through memory BIOs,
// and with SSL_MODE_RELEASE_BUFFERS holds no record buffer while idle. An
// idle HTTPS SSE session then costs its SSL object, where Asio's SSL stream
// keeps four 17 KB buffers per connection for good (ADR 0031: 71 KB against
// 3 KB per idle session, measured).
//
// Enough of Asio's AsyncReadStream and AsyncWriteStream for Beast's HTTP
// reads and writes and for asio::async_write; one read and one write may be
// pending at once, on the socket's one thread. A write takes at most 16 KB
// of its buffers, copied into one TLS record. A deadline (expires_after)
// closes nothing: it cancels the waits, and the pending operations fail with
// beast::error::timeout. Moved only while nothing is pending (the front door
// hands a connection to its SSE session between two requests).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

using SSL = struct ssl_st;

namespace tidings::relay {

class tls_socket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using error_code = boost::system::error_code;

  // Takes the accepted socket; the context stays alive as long as this does.
  tls_socket(boost::asio::ip::tcp::socket socket, std::shared_ptr<boost::asio::ssl::context> context);
  ~tls_socket();
  tls_socket(tls_socket&& other) noexcept;
  tls_socket& operator=(tls_socket&&) = delete;
  tls_socket(const tls_socket&) = delete;
  tls_socket& operator=(const tls_socket&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  const boost::asio::ip::tcp::socket& socket() const { return socket_; }

  void expires_after(std::chrono::steady_clock::duration d);
  void expires_never();
  // Closes the socket (no close_notify: every response is framed, ADR 0031).
  void close();

  template <class Token>
  auto async_handshake(Token&& token) {
    return run(handshake_step{}, std::forward<Token>(token));
  }
  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return run(read_step{first_of(buffers)}, std::forward<Token>(token));
  }
  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return run(write_step{flatten(buffers)}, std::forward<Token>(token));
  }

 private:
  enum class want { nothing, read, write };
  struct outcome {
    want next = want::nothing;
    error_code ec;
    std::size_t bytes = 0;
  };
  // One attempt of OpenSSL's call; `want` says which readiness to await first.
  outcome try_handshake();
  outcome try_read(boost::asio::mutable_buffer buffer);
  outcome try_write(const std::string& data);
  template <class Call>
  outcome attempt(Call call);
  outcome finished(int result);  // SSL_get_error's verdict as an outcome
  error_code wait_failed(const error_code& ec) const;
  bool timed_out() const { return deadline_ && deadline_->timed_out; }

  struct handshake_step {
    outcome operator()(tls_socket& s) { return s.try_handshake(); }
  };
  struct read_step {
    boost::asio::mutable_buffer buffer;
    outcome operator()(tls_socket& s) { return s.try_read(buffer); }
  };
  struct write_step {
    std::string data;  // the buffers' first 16 KB, one record
    outcome operator()(tls_socket& s) { return s.try_write(data); }
  };

  // Runs `step` until it neither wants to read nor write. An operation
  // never completes inside its initiating call (posted instead), as Asio
  // requires of asynchronous operations.
  template <class Step>
  struct op {
    tls_socket& s;
    Step step;
    bool waited = false;
    bool posted = false;
    outcome result{};

    template <class Self>
    void operator()(Self& self, error_code wait_ec = {}) {
      if (posted) return complete(self);
      if (wait_ec) {
        result = {want::nothing, s.wait_failed(wait_ec), 0};
        return complete(self);
      }
      // Closed meanwhile (a wait that had succeeded is still delivered: the
      // descriptor's number may belong to another connection by now), or
      // past the deadline between two waits.
      if (!s.socket_.is_open())
        result = {want::nothing, boost::asio::error::bad_descriptor, 0};
      else if (s.timed_out())
        result = {want::nothing, s.wait_failed(boost::asio::error::operation_aborted), 0};
      else
        result = step(s);
      if (result.next != want::nothing) {
        waited = true;
        auto kind = result.next == want::read ? boost::asio::ip::tcp::socket::wait_read
                                              : boost::asio::ip::tcp::socket::wait_write;
        return s.socket_.async_wait(kind, std::move(self));
      }
      if (waited) return complete(self);
      posted = true;
      boost::asio::post(s.get_executor(), std::move(self));
    }

    template <class Self>
    void complete(Self& self) {
      if constexpr (std::is_same_v<Step, handshake_step>)
        self.complete(result.ec);
      else
        self.complete(result.ec, result.bytes);
    }
  };

  template <class Step, class Token>
  auto run(Step step, Token&& token) {
    using signature = std::conditional_t<std::is_same_v<Step, handshake_step>, void(error_code),
                                         void(error_code, std::size_t)>;
    return boost::asio::async_compose<Token, signature>(op<Step>{*this, std::move(step)}, token, socket_);
  }

  template <class Buffers>
  static boost::asio::mutable_buffer first_of(const Buffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it)
      if (it->size() > 0) return *it;
    return {};
  }
  template <class Buffers>
  static std::string flatten(const Buffers& buffers) {
    std::string out;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::const_buffer b(*it);
      auto take = std::min(b.size(), record_bytes - out.size());
      out.append(static_cast<const char*>(b.data()), take);
      if (out.size() == record_bytes) break;
    }
    return out;
  }

  static constexpr std::size_t record_bytes = 16384;  // TLS's largest record

  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  SSL* ssl_ = nullptr;
  // The deadline, made when first set (SSE sessions run without one). Its
  // handler holds this state, not the socket: a handler already queued when
  // the deadline moved, the socket moved, or the socket went, finds a
  // generation or owner that is not its own and does nothing.
  struct deadline_state {
    explicit deadline_state(const executor_type& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    tls_socket* owner = nullptr;
    std::uint64_t generation = 0;
    bool timed_out = false;
  };
  std::shared_ptr<deadline_state> deadline_;
};

}  // namespace tidings::relay
