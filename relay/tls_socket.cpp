#include "relay/tls_socket.hpp"

#include <cerrno>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>

namespace tidings::relay {

namespace net = boost::asio;

tls_socket::tls_socket(net::ip::tcp::socket socket, std::shared_ptr<net::ssl::context> context)
    : socket_(std::move(socket)), context_(std::move(context)), ssl_(SSL_new(context_->native_handle())) {
  error_code ec;
  socket_.non_blocking(true, ec);
  if (!ssl_) return;  // out of memory: the handshake fails
  SSL_set_fd(ssl_, socket_.native_handle());
  SSL_set_accept_state(ssl_);
  // Writes may end after a record (async_write goes on), and a retried
  // write's copy may have moved with its operation.
  SSL_set_mode(
      ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}

tls_socket::~tls_socket() {
  if (deadline_) {
    deadline_->owner = nullptr;
    deadline_->timer.cancel();
  }
  if (ssl_) SSL_free(ssl_);
}

tls_socket::tls_socket(tls_socket&& other) noexcept
    : socket_(std::move(other.socket_)),
      context_(std::move(other.context_)),
      ssl_(std::exchange(other.ssl_, nullptr)),
      deadline_(std::move(other.deadline_)) {
  if (deadline_) deadline_->owner = this;
}

void tls_socket::expires_after(std::chrono::steady_clock::duration d) {
  if (!deadline_) {
    deadline_ = std::make_shared<deadline_state>(socket_.get_executor());
    deadline_->owner = this;
  }
  auto& dl = *deadline_;
  dl.timed_out = false;
  dl.timer.expires_after(d);
  dl.timer.async_wait([state = deadline_, generation = ++dl.generation](const error_code& ec) {
    if (ec || state->generation != generation || !state->owner) return;
    state->timed_out = true;
    error_code ignored;
    state->owner->socket_.cancel(ignored);
  });
}

void tls_socket::expires_never() {
  if (!deadline_) return;
  ++deadline_->generation;
  deadline_->timed_out = false;
  deadline_->timer.cancel();
}

void tls_socket::close() {
  expires_never();
  error_code ignored;
  socket_.close(ignored);
}

tls_socket::error_code tls_socket::wait_failed(const error_code& ec) const {
  return timed_out() ? error_code(boost::beast::error::timeout) : ec;
}

tls_socket::outcome tls_socket::finished(int result) {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return {want::read, {}, 0};
    case SSL_ERROR_WANT_WRITE:
      return {want::write, {}, 0};
    case SSL_ERROR_ZERO_RETURN:
      return {want::nothing, net::error::eof, 0};
    case SSL_ERROR_SYSCALL: {
      // errno 0: the peer closed without a close_notify.
      const int err = errno;
      ERR_clear_error();
      if (err == 0) return {want::nothing, net::ssl::error::stream_truncated, 0};
      return {want::nothing, error_code(err, boost::system::system_category()), 0};
    }
    default: {
      // As Asio's own SSL stream reports it: OpenSSL's packed error code in
      // the SSL category (the front door reads the reason from it).
      const auto code = ERR_get_error();
      ERR_clear_error();
      if (ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return {want::nothing, net::ssl::error::stream_truncated, 0};
      return {want::nothing, error_code(static_cast<int>(code), net::error::get_ssl_category()), 0};
    }
  }
}

// One OpenSSL call (returning 1 on success, setting `bytes`), with the
// thread's error queue and errno cleared first so that finished() reads
// this call's verdict alone.
template <class Call>
tls_socket::outcome tls_socket::attempt(Call call) {
  ERR_clear_error();
  errno = 0;
  std::size_t bytes = 0;
  const int r = call(&bytes);
  if (r == 1) return {want::nothing, {}, bytes};
  return finished(r);
}

tls_socket::outcome tls_socket::try_handshake() {
  if (!ssl_) return {want::nothing, net::error::no_memory, 0};
  return attempt([this](std::size_t*) { return SSL_do_handshake(ssl_); });
}

tls_socket::outcome tls_socket::try_read(net::mutable_buffer buffer) {
  if (buffer.size() == 0) return {};
  return attempt([&](std::size_t* got) { return SSL_read_ex(ssl_, buffer.data(), buffer.size(), got); });
}

tls_socket::outcome tls_socket::try_write(const std::string& data) {
  if (data.empty()) return {};
  return attempt([&](std::size_t* sent) { return SSL_write_ex(ssl_, data.data(), data.size(), sent); });
}

}  // namespace tidings::relay
