#pragma once

// The MCP connector (issue 4): one configured MCP server, reached over stdio
// or Streamable HTTP, speaking 2026-07-28 or a legacy initialize-based
// version (probed per connection). One mcp_session is shared by the
// listing, one-off reads and every upstream.

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "sources/mcp/mcp_config.hpp"
#include "sources/mcp/mcp_session.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::mcp {

class mcp_connector final : public connector {
 public:
  mcp_connector(boost::asio::io_context& ioc, mcp_config cfg);
  ~mcp_connector() override;

  const std::string& name() const override { return name_; }
  // Connects, probes and lists resources and templates.
  void start(std::function<void(std::string error)> done) override;
  // As last listed: notifications/resources/list_changed lists again.
  std::vector<resource_info> resources() const override { return session_->listing(); }
  // A server that advertised resources.subscribe (at the last successful
  // start) may be asked for any URI.
  bool accepts_any_uri() const override { return subscribable_; }
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

  // Tests change server state through the same connection; the broker may
  // expose tools later. `arguments_json` is a JSON object's text.
  void call_tool(const std::string& name, const std::string& arguments_json,
                 std::function<void(rpc_reply)> done);

  const std::shared_ptr<mcp_session>& session() const { return session_; }

 private:
  std::string name_;
  bool tls_unverified_;  // insecure_skip_verify: shown on every source it serves
  std::shared_ptr<mcp_session> session_;
  bool subscribable_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::mcp
