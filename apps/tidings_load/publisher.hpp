#pragma once

// One keep-alive publishing connection: sends an event, waits for its ack,
// sends the next, so K publishers keep K requests in flight. Raw asio.

#include <cstdint>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "apps/tidings_load/chunked_decoder.hpp"
#include "apps/tidings_load/load_options.hpp"

namespace tidings::load {

class publish_source {
 public:
  // The index of the next event to send; false when all have been handed out.
  virtual bool next_index(std::int64_t& index) = 0;
  virtual void on_ack(std::int64_t index, std::int64_t sent_ns, std::int64_t acked_ns) = 0;
  virtual void on_publish_failure(const std::string& why) = 0;

 protected:
  ~publish_source() = default;
};

class publisher {
 public:
  // `number` travels in every payload so receivers can check each
  // publisher's order on its own.
  publisher(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& server, target peer,
            const std::string& stream, const std::string& token, std::size_t number, const std::string& pad,
            publish_source& source);
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  void start();
  void close();

 private:
  void send_next();
  void read_reply();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void fail(const std::string& why);

  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::endpoint server_;
  target peer_;
  std::size_t number_;
  std::string head_prefix_;
  const std::string& pad_;
  publish_source& source_;
  std::string request_;
  std::string reply_;
  char read_buf_[4096];
  std::int64_t index_ = 0;
  std::int64_t sent_ns_ = 0;
  bool done_ = false;
};

}  // namespace tidings::load
