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
                     const std::vector<std::string>& head_prefixes, std::size_t number,
                     const std::string& pad, publish_source& source)
    : socket_(ioc),
      server_(server),
      peer_(peer),
      number_(number),
      head_prefixes_(head_prefixes),
      pace_(ioc),
      pad_(pad),
      source_(source) {}

void publisher::start() {
  connect();
}

void publisher::connect() {
  socket_.async_connect(server_, [this](const boost::system::error_code& ec) {
    if (done_) return;
    if (ec) return transport_failure("connect: " + ec.message());
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    // After a reconnect, the request whose answer was lost goes again.
    if (unacked_) return write_request();
    send_next();
  });
}

void publisher::transport_failure(const std::string& why) {
  if (give_up_after_.count() == 0) return fail(why);
  const auto now = steady_ns();
  if (!failing_since_ns_) failing_since_ns_ = now;
  if (now - failing_since_ns_ > std::chrono::nanoseconds(give_up_after_).count())
    return fail(why + " (retried for " + std::to_string(give_up_after_.count()) + " ms)");
  boost::system::error_code ignored;
  socket_.close(ignored);
  reply_.clear();
  pace_.expires_after(std::chrono::milliseconds(50));
  pace_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !done_) connect();
  });
}

void publisher::close() {
  done_ = true;
  boost::system::error_code ignored;
  pace_.cancel();
  socket_.close(ignored);
}

void publisher::fail(const std::string& why) {
  if (done_) return;
  close();
  source_.on_publish_failure(why);
}

void publisher::send_next() {
  if (!source_.next_batch(batch_)) {
    close();
    return;
  }
  const auto now = steady_ns();
  if (batch_.due_ns <= now) return send(batch_.due_ns ? batch_.due_ns : now);
  pace_.expires_after(std::chrono::nanoseconds(batch_.due_ns - now));
  pace_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !done_) send(batch_.due_ns);
  });
}

void publisher::send(std::int64_t sent_ns) {
  // The send time travels in the event, so every receiver can compute its
  // own publish-to-receive latency with the same (steady) clock.
  sent_ns_ = sent_ns;
  const std::string body = batch_.count == 1
                               ? publish_body(peer_, sent_ns_, batch_.first, number_, pad_)
                               : publish_batch_body(sent_ns_, batch_.first, batch_.count, number_, pad_);
  request_ = head_prefixes_[batch_.stream];
  if (give_up_after_.count()) {
    // A retry after a lost answer must not store the events twice.
    const auto line_end = request_.find("\r\n") + 2;
    request_.insert(line_end, "Idempotency-Key: load-" + std::to_string(number_) + "-" +
                                  std::to_string(batch_.first) + "\r\n");
  }
  request_ += std::to_string(body.size()) + "\r\n\r\n" + body;
  unacked_ = true;
  write_request();
}

void publisher::write_request() {
  net::async_write(socket_, net::buffer(request_), [this](const boost::system::error_code& ec, std::size_t) {
    if (done_) return;
    if (ec) return transport_failure("send: " + ec.message());
    read_reply();
  });
}

void publisher::read_reply() {
  socket_.async_read_some(net::buffer(read_buf_),
                          [this](const boost::system::error_code& ec, std::size_t n) { on_read(ec, n); });
}

void publisher::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (done_) return;
  if (ec) return transport_failure("read reply: " + ec.message());
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
  // A node that is stopping answers 503: as good as no answer.
  if (status == 503) return transport_failure("publish answered 503");
  if (!publish_accepted(peer_, status)) {
    return fail("publish refused: " + reply_.substr(0, reply_.find("\r\n")) + " " + body);
  }
  const bool closing = head.find("\r\nconnection: close") != std::string::npos;
  reply_.clear();
  unacked_ = false;
  failing_since_ns_ = 0;  // the node answers again: a later outage starts its own clock
  source_.on_ack(batch_, sent_ns_, steady_ns());
  if (closing) {
    if (give_up_after_.count() == 0) return fail("the server closed the keep-alive connection");
    // Acknowledged already: a new connection for the next request.
    boost::system::error_code ignored;
    socket_.close(ignored);
    return connect();
  }
  send_next();
}

}  // namespace tidings::load
