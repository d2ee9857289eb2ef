#pragma once

// How an mcp_session reaches its server: stdio (a child process) or
// Streamable HTTP. The session speaks JSON-RPC; the transport moves messages
// and knows how the two differ: on stdio every message shares one channel
// and a request is cancelled with notifications/cancelled, over HTTP every
// request is its own POST whose response (JSON or SSE) carries the answer
// and cancelling is closing that stream. Callbacks run on the sources
// thread; none runs after close().

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "sources/mcp/json_rpc.hpp"
#include "sources/mcp/mcp_protocol.hpp"

namespace tidings::sources::mcp {

struct request_info {
  std::string method;
  std::string name;         // params.name or params.uri, mirrored into Mcp-Name
  bool long_lived = false;  // subscriptions/listen: its stream stays open
};

class transport {
 public:
  struct handlers {
    // Every message from the server, in order.
    std::function<void(nlohmann::json message)> message;
    // A request failed without a JSON-RPC answer (HTTP status, stream ended).
    std::function<void(nlohmann::json id, failure_kind kind, std::string error)> request_failed;
    // The connection is gone (child exited, session expired, GET stream lost).
    std::function<void(std::string reason)> closed;
  };

  virtual ~transport() = default;

  // Connects (spawns the child); done("") or an error.
  virtual void open(handlers h, std::function<void(std::string error)> done) = 0;
  virtual void send_request(const nlohmann::json& message, const request_info& info) = 0;
  virtual void send_notification(const nlohmann::json& message) = 0;
  // Stops waiting for a request: stdio sends notifications/cancelled, HTTP
  // closes the request's response stream.
  virtual void cancel_request(const nlohmann::json& id, const std::string& reason) = 0;
  // The era and version agreed on (HTTP mirrors it into MCP-Protocol-Version).
  virtual void set_protocol(era e, const std::string& version) = 0;
  // The legacy handshake finished (HTTP opens its GET stream).
  virtual void initialized() {}
  // Ends the connection and the child; no handler runs afterwards.
  virtual void close() = 0;
};

}  // namespace tidings::sources::mcp
