#pragma once

// One upstream subscription to one MCP resource URI, on the connection its
// connector shares among all of them (see mcp_session for the protocol).

#include <memory>
#include <string>

#include "sources/mcp/mcp_session.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::mcp {

class mcp_upstream : public upstream {
 public:
  const char* strategy() const override { return "subscribe"; }
  bool tls_unverified() const override { return tls_unverified_; }
  mcp_upstream(std::shared_ptr<mcp_session> session, std::string uri, bool tls_unverified)
      : session_(std::move(session)), uri_(std::move(uri)), tls_unverified_(tls_unverified) {}
  ~mcp_upstream() override { close(); }

  void subscribe(handlers h) override;
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

  const std::string& uri() const { return uri_; }

 private:
  std::shared_ptr<mcp_session> session_;
  std::string uri_;
  bool tls_unverified_;
  mcp_session::watch_id watch_ = 0;
  // Callbacks check it, so none runs after close() (reads in flight included).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::mcp
