#include "apps/tidings_load/publisher.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <boost/asio/write.hpp>

#include "apps/tidings_load/sse_session.hpp"
#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace net = boost::asio;
using tcp = net::ip::tcp;

publisher::publisher(net::io_context& ioc, const tcp::endpoint& server, target peer,
                     const std::string& stream, const std::string& token, std::size_t number,
                     const std::string& pad, publish_source& source)
    : socket_(ioc),
      server_(server),
      peer_(peer),
      number_(number),
      head_prefix_(publish_head_prefix(peer, server, stream, token)),
      pad_(pad),
      source_(source) {}

void publisher::start() {
  socket_.async_connect(server_, [this](const boost::system::error_code& ec) {
    if (done_) return;
    if (ec) return fail("connect: " + ec.message());
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    send_next();
  });
}

void publisher::close() {
  done_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void publisher::fail(const std::string& why) {
  if (done_) return;
  close();
  source_.on_publish_failure(why);
}

void publisher::send_next() {
  if (!source_.next_index(index_)) {
    close();
    return;
  }
  // The send time travels in the event, so every receiver can compute its
  // own publish-to-receive latency with the same (steady) clock.
  sent_ns_ = steady_ns();
  const std::string body = publish_body(peer_, sent_ns_, index_, number_, pad_);
  request_ = head_prefix_ + std::to_string(body.size()) + "\r\n\r\n" + body;
  net::async_write(socket_, net::buffer(request_), [this](const boost::system::error_code& ec, std::size_t) {
    if (done_) return;
    if (ec) return fail("send: " + ec.message());
    read_reply();
  });
}

void publisher::read_reply() {
  socket_.async_read_some(net::buffer(read_buf_),
                          [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
}

void publisher::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (done_) return;
  if (ec) return fail("read reply: " + ec.message());
  reply_.append(read_buf_, n);
  const auto head_end = reply_.find("\r\n\r\n");
  if (head_end == std::string::npos) return read_reply();

  std::string head = reply_.substr(0, head_end + 2);
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto body_start = head_end + 4;
  std::string body;
  if (head.find("transfer-encoding: chunked") != std::string::npos) {
    chunked_decoder dechunk;
    const auto st = dechunk.feed(reply_.data() + body_start, reply_.size() - body_start, body);
    if (st == chunked_decoder::status::error) return fail("bad chunked reply");
    if (st == chunked_decoder::status::more) return read_reply();
  } else {
    std::size_t length = 0;
    if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos) {
      auto p = at + 17;
      while (p < head.size() && head[p] == ' ') ++p;
      std::from_chars(head.data() + p, head.data() + head.size(), length);
    }
    if (reply_.size() - body_start < length) return read_reply();
    body = reply_.substr(body_start, length);
  }

  int status = 0;
  if (const auto sp = reply_.find(' '); sp != std::string::npos) {
    std::from_chars(reply_.data() + sp + 1, reply_.data() + reply_.size(), status);
  }
  if (!publish_accepted(peer_, status)) {
    return fail("publish refused: " + reply_.substr(0, reply_.find("\r\n")) + " " + body);
  }
  const bool closing = head.find("\r\nconnection: close") != std::string::npos;
  reply_.clear();
  source_.on_ack(index_, sent_ns_, steady_ns());
  if (closing) return fail("the server closed the keep-alive connection");
  send_next();
}

}  // namespace tidings::load
