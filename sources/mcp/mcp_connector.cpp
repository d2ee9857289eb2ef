#include "sources/mcp/mcp_connector.hpp"

#include <boost/asio/post.hpp>

#include "logging/log.hpp"
#include "sources/mcp/mcp_upstream.hpp"

namespace tidings::sources::mcp {

mcp_connector::mcp_connector(boost::asio::io_context& ioc, mcp_config cfg)
    : name_(cfg.name),
      tls_unverified_(cfg.tls.insecure_skip_verify),
      session_(std::make_shared<mcp_session>(ioc, std::move(cfg))) {}

mcp_connector::~mcp_connector() {
  stop();
}

void mcp_connector::start(std::function<void(std::string error)> done) {
  *alive_ = true;
  std::weak_ptr<bool> alive = alive_;
  session_->list([this, alive, done = std::move(done)](const std::vector<resource_info>& list,
                                                       const std::string& error) {
    auto a = alive.lock();
    if (!a || !*a) return;
    if (error.empty()) {
      subscribable_ = session_->can_subscribe();
      logging::info("mcp.connector.started", {{"server", name_},
                                              {"resources", static_cast<std::uint64_t>(list.size())},
                                              {"version", session_->protocol_version()}});
    }
    done(error);
  });
}

std::unique_ptr<upstream> mcp_connector::open(const std::string& uri, std::string* error) {
  // MCP URIs are RFC 3986 URIs: at least "scheme:" and something after it.
  auto colon = uri.find(':');
  if (uri.empty() || colon == std::string::npos || colon == 0 || colon + 1 == uri.size() ||
      uri.find_first_of(" \t\r\n") != std::string::npos) {
    if (error) *error = name_ + ": not a URI: " + uri;
    return nullptr;
  }
  return std::make_unique<mcp_upstream>(session_, uri, tls_unverified_);
}

void mcp_connector::read(const std::string& uri, std::function<void(read_outcome)> done) {
  std::weak_ptr<bool> alive = alive_;
  session_->read(uri, [alive, done = std::move(done)](read_outcome r) {
    auto a = alive.lock();
    if (a && *a) done(std::move(r));
  });
}

void mcp_connector::call_tool(const std::string& name, const std::string& arguments_json,
                              std::function<void(rpc_reply)> done) {
  auto args = nlohmann::json::parse(arguments_json.empty() ? "{}" : arguments_json, nullptr,
                                    /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object()) {
    auto r = rpc_reply::failed(failure_kind::transport,
                               name_ + ": tools/call " + name + ": arguments are not a JSON object");
    done(std::move(r));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  session_->call_tool(name, std::move(args), [alive, done = std::move(done)](rpc_reply r) {
    auto a = alive.lock();
    if (a && *a) done(std::move(r));
  });
}

void mcp_connector::stop() {
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  *alive_ = false;
  session_->stop();
}

}  // namespace tidings::sources::mcp
