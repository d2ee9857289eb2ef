#pragma once

// JSON-RPC 2.0 bookkeeping for one MCP connection: message parsing, request
// ids, pending requests with their timeouts, and routing of responses. No
// I/O: the session hands outgoing messages to its transport and feeds
// incoming ones to on_message(). Everything runs on the sources thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

namespace tidings::sources::mcp {

enum class message_kind { request, notification, response, invalid };

// One parsed incoming message.
struct rpc_message {
  message_kind kind = message_kind::invalid;
  nlohmann::json id;  // null for notifications
  std::string method;
  nlohmann::json params;  // object or null
  nlohmann::json result;  // set on a success response
  nlohmann::json error;   // set on an error response
  std::string problem;    // why the message is invalid
};

// Parses one JSON-RPC message from text (one stdio line, one SSE data field,
// one JSON body). Never throws: malformed input yields kind invalid.
rpc_message parse_message(std::string_view text);
// Classifies an already parsed JSON value.
rpc_message classify_message(const nlohmann::json& j);

// The map key of a request id (ids may be numbers or strings).
std::string id_key(const nlohmann::json& id);

nlohmann::json make_request(const nlohmann::json& id, std::string_view method, nlohmann::json params);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);

// Why a request did not produce a result.
enum class failure_kind {
  none,
  rpc_error,    // the server answered with a JSON-RPC error
  http_status,  // HTTP: a non-2xx status without a JSON-RPC error body
  timeout,      // no answer within the request's timeout
  transport,    // the connection broke or could not be made
};

struct rpc_reply {
  failure_kind failure = failure_kind::none;
  nlohmann::json result;  // on success
  int code = 0;           // rpc_error: the JSON-RPC error code
  std::string message;    // the error text
  nlohmann::json data;    // rpc_error: the error's data member

  bool ok() const { return failure == failure_kind::none; }
  // "Resource not found (code -32002)", "timed out after 30 s", ...
  std::string describe() const;
  static rpc_reply from_response(const rpc_message& m);
  static rpc_reply failed(failure_kind k, std::string message);
};

class json_rpc {
 public:
  using reply_fn = std::function<void(rpc_reply)>;
  // Called when a request timed out, before its reply_fn, so the session can
  // cancel it on the transport.
  using timeout_fn = std::function<void(const nlohmann::json& id, const std::string& method)>;

  explicit json_rpc(boost::asio::io_context& ioc) : ioc_(ioc) {}
  ~json_rpc();
  json_rpc(const json_rpc&) = delete;
  json_rpc& operator=(const json_rpc&) = delete;

  void on_timeout(timeout_fn f) { on_timeout_ = std::move(f); }

  // A fresh numeric id.
  nlohmann::json next_id() { return next_id_++; }

  // Registers a pending request. timeout 0: none (long-lived requests such
  // as subscriptions/listen end by their response or by the transport).
  void expect(const nlohmann::json& id, std::string method, std::chrono::milliseconds timeout, reply_fn done);

  // Whether id is pending.
  bool pending(const nlohmann::json& id) const { return pending_.count(id_key(id)) != 0; }

  // Resolves the pending request of a response; false when the id is unknown
  // (late answer after a timeout or a cancel: ignored).
  bool on_response(const rpc_message& m);

  // Fails one pending request (HTTP status, stream ended, ...).
  void fail(const nlohmann::json& id, failure_kind k, std::string message);

  // Forgets a pending request without calling it (cancelled by us).
  void forget(const nlohmann::json& id);

  // Fails every pending request (the connection is gone).
  void fail_all(const std::string& message);

  // Drops every pending request without calling anything (stop).
  void clear();

  std::size_t size() const { return pending_.size(); }

 private:
  struct pending_request {
    nlohmann::json id;
    std::string method;
    reply_fn done;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };

  void finish(const std::string& key, rpc_reply r);

  boost::asio::io_context& ioc_;
  std::int64_t next_id_ = 1;
  std::map<std::string, pending_request> pending_;
  timeout_fn on_timeout_;
  // Timers hold a weak reference, so an expiry after destruction is a no-op.
  std::shared_ptr<json_rpc*> self_ = std::make_shared<json_rpc*>(this);
};

}  // namespace tidings::sources::mcp
