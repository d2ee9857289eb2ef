#pragma once

// The Streamable HTTP transport over the shared HTTP client
// (net/http_client.hpp). Every request is a POST whose response is
// one JSON body or an SSE stream (notifications first, then the response);
// a long-lived request (subscriptions/listen) keeps its stream open and is
// cancelled by closing it. Modern (2026-07-28) POSTs carry
// MCP-Protocol-Version, Mcp-Method and Mcp-Name; legacy ones carry the
// negotiated MCP-Protocol-Version and the Mcp-Session-Id the server gave on
// initialize, open the GET stream for unsolicited notifications, and end the
// session with DELETE.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "core/sse_parser.hpp"
#include "net/http_client.hpp"
#include "sources/mcp/mcp_config.hpp"
#include "sources/mcp/transport.hpp"

namespace tidings::sources::mcp {

class http_transport final : public transport, public std::enable_shared_from_this<http_transport> {
 public:
  http_transport(boost::asio::io_context& ioc, const mcp_config& cfg) : ioc_(ioc), cfg_(cfg) {}
  ~http_transport() override;

  void open(handlers h, std::function<void(std::string error)> done) override;
  void send_request(const nlohmann::json& message, const request_info& info) override;
  void send_notification(const nlohmann::json& message) override;
  void cancel_request(const nlohmann::json& id, const std::string& reason) override;
  void set_protocol(era e, const std::string& version) override;
  void initialized() override;
  void close() override;

 private:
  struct call {
    nlohmann::json id;
    bool long_lived = false;
    std::shared_ptr<net::http_call> http;
    int status = 0;
    bool sse = false;
    std::string body;
    core::sse_parser parser;
    bool answered = false;  // the response for `id` arrived
    bool failed = false;
    explicit call(std::size_t max) : parser(max) {}
  };

  net::http_headers base_headers(const std::string& method, const std::string& name) const;
  void on_head(const std::string& key, const net::http_response& head);
  void on_data(const std::string& key, std::string_view data);
  void on_end(const std::string& key, const std::string& error);
  // Delivers one JSON text from a response body or SSE event of `key`.
  void deliver(const std::string& key, std::string_view text);
  void fail_call(const std::string& key, failure_kind kind, const std::string& error);
  void open_get_stream();

  boost::asio::io_context& ioc_;
  mcp_config cfg_;
  handlers handlers_;
  era era_ = era::modern;
  // The probe is a modern request: it names the modern version.
  std::string version_ = std::string(modern_version);
  std::string session_id_;
  std::map<std::string, std::shared_ptr<call>> calls_;  // by id_key
  std::map<std::uint64_t, std::shared_ptr<net::http_call>> notifications_;
  std::uint64_t next_notification_ = 0;
  std::shared_ptr<net::http_call> get_stream_;
  std::unique_ptr<core::sse_parser> get_parser_;
  bool get_established_ = false;
  bool closed_ = false;
};

}  // namespace tidings::sources::mcp
