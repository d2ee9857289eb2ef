#pragma once

// The stdio transport: the server is a child process; one JSON-RPC message
// per line on its stdin/stdout; its stderr lines are logged. A request is
// cancelled with notifications/cancelled. The child's exit closes the
// transport; close() ends the child (stdin closed, SIGTERM, SIGKILL) and
// reaps it.

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "sources/mcp/child_process.hpp"
#include "sources/mcp/mcp_config.hpp"
#include "sources/mcp/transport.hpp"

namespace tidings::sources::mcp {

class stdio_transport final : public transport, public std::enable_shared_from_this<stdio_transport> {
 public:
  stdio_transport(boost::asio::io_context& ioc, const mcp_config& cfg) : ioc_(ioc), cfg_(cfg) {}
  ~stdio_transport() override;

  void open(handlers h, std::function<void(std::string error)> done) override;
  void send_request(const nlohmann::json& message, const request_info& info) override;
  void send_notification(const nlohmann::json& message) override;
  void cancel_request(const nlohmann::json& id, const std::string& reason) override;
  void set_protocol(era e, const std::string& version) override;
  void close() override;

  // The child's pid while it runs (tests check it is gone after stop).
  pid_t pid() const { return child_ ? child_->pid() : -1; }

 private:
  boost::asio::io_context& ioc_;
  mcp_config cfg_;
  handlers handlers_;
  std::shared_ptr<child_process> child_;
};

}  // namespace tidings::sources::mcp
