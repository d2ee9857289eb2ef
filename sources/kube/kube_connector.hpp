#pragma once

// The connector for one Kubernetes-style API server context, "kube:{context}":
// serves `kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}`
// as event-log resources (kube_upstream) and one-off reads as a list.

#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>

#include "net/http_client.hpp"
#include "sources/kube/kube_config.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::kube {

class kube_connector final : public connector {
 public:
  kube_connector(boost::asio::io_context& ioc, kube_config config);
  ~kube_connector() override;

  kube_connector(const kube_connector&) = delete;
  kube_connector& operator=(const kube_connector&) = delete;

  const std::string& name() const override { return name_; }
  // Checks the configuration only: a watch's first list is the probe, and
  // fails fast with the API server's message.
  void start(std::function<void(std::string error)> done) override;
  std::vector<resource_info> resources() const override;
  std::string canonical(std::string_view uri) const override;
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  // The current list as state JSON: an array of objects (managedFields stripped).
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

 private:
  // The URI's collection path, checking it names this connector's context.
  bool resolve(const std::string& uri, struct kube_uri* out, std::string* path, std::string* error) const;

  boost::asio::io_context& ioc_;
  kube_config config_;
  std::string name_;
  // One-off reads in flight, cancelled by stop().
  std::unordered_map<std::uint64_t, std::shared_ptr<net::http_call>> reads_;
  std::uint64_t next_read_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::kube
