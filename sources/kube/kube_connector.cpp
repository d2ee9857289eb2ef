#include "sources/kube/kube_connector.hpp"

#include <utility>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "core/kube_reconcile.hpp"
#include "core/read_extraction.hpp"
#include "core/resource_routing.hpp"
#include "net/percent_encoding.hpp"
#include "sources/kube/kube_api.hpp"
#include "sources/kube/kube_upstream.hpp"
#include "sources/kube/kube_uri.hpp"

namespace tidings::sources::kube {

using nlohmann::json;

kube_connector::kube_connector(boost::asio::io_context& ioc, kube_config config)
    : ioc_(ioc), config_(std::move(config)), name_("kube:" + config_.context) {
  while (!config_.server.empty() && config_.server.back() == '/') config_.server.pop_back();
}

kube_connector::~kube_connector() {
  stop();
}

void kube_connector::start(std::function<void(std::string error)> done) {
  std::string error;
  net::http_url url;
  if (config_.context.empty()) {
    error = name_ + ": no context name";
  } else if (!net::parse_http_url(config_.server, &url, &error)) {
    error = name_ + ": bad server URL " + config_.server + ": " + error;
  }
  boost::asio::post(ioc_, [alive = std::weak_ptr<bool>(alive_), done = std::move(done), error]() {
    if (alive.lock()) done(error);
  });
}

std::vector<resource_info> kube_connector::resources() const {
  const std::string context = net::percent_encode(config_.context, ":@");
  resource_info info;
  info.uri = "kube://" + context + "/{resource}{?namespace,labelSelector,fieldSelector}";
  info.template_ = true;
  info.name = "kube " + config_.context;
  info.description =
      "Objects of one resource on the API server of context " + config_.context +
      ", listed then watched: an event log of ADDED / MODIFIED (with old) / DELETED objects with seq, "
      "managedFields stripped; after a broken watch the gap is re-listed as synthetic events. {resource} is "
      "kubectl's resource[.version.group] (configmaps, deployments.v1.apps); namespace absent or * means all "
      "namespaces.\nExample: watch uri=kube://" +
      context + "/configmaps?namespace=default";
  info.example = core::description_example(info.description);
  info.mime_type = std::string(core::event_log_mime_type);
  info.server = name_;
  info.subscribable = true;
  return {std::move(info)};
}

std::string kube_connector::canonical(std::string_view uri) const {
  kube_uri u;
  std::string error;
  if (!parse_kube_uri(uri, &u, &error)) return std::string(uri);
  return canonical_kube_uri(u);
}

bool kube_connector::resolve(const std::string& uri, kube_uri* out, std::string* path,
                             std::string* error) const {
  if (!parse_kube_uri(uri, out, error)) return false;
  if (out->context != config_.context) {
    *error = name_ + " serves context " + config_.context + ", not " + out->context;
    return false;
  }
  return kube_collection_path(*out, path, error);
}

std::unique_ptr<upstream> kube_connector::open(const std::string& uri, std::string* error) {
  kube_uri u;
  std::string path;
  if (!resolve(uri, &u, &path, error)) return nullptr;
  return std::make_unique<kube_upstream>(ioc_, config_, std::move(u), std::move(path));
}

void kube_connector::read(const std::string& uri, std::function<void(read_outcome)> done) {
  kube_uri u;
  std::string path;
  std::string error;
  if (!resolve(uri, &u, &path, &error)) {
    boost::asio::post(ioc_, [alive = std::weak_ptr<bool>(alive_), done = std::move(done), error]() {
      if (alive.lock()) done(read_outcome::failed(error));
    });
    return;
  }
  const auto id = next_read_++;
  const std::string label = name_ + " " + u.resource;
  reads_[id] = kube_list_request(
      ioc_, config_, kube_list_target(u, path),
      [this, id, label, done = std::move(done)](const std::string& error, kube_list list) {
        reads_.erase(id);
        if (!error.empty()) return done(read_outcome::failed(label + ": list failed: " + error));
        for (auto& item : list.items) core::strip_managed_fields(item);
        done(read_outcome::ok(read_result{"application/json",
                                          list.items.dump(-1, ' ', false, json::error_handler_t::replace)}));
      });
}

void kube_connector::stop() {
  alive_ = std::make_shared<bool>(true);  // posted callbacks of the old token stop
  auto reads = std::move(reads_);
  reads_.clear();
  for (auto& [_, call] : reads) call->cancel();
}

}  // namespace tidings::sources::kube
