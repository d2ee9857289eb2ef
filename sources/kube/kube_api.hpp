#pragma once

// The API server requests the kube connector makes: list a collection, and
// the headers and error text shared with the watch.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "net/http_client.hpp"
#include "sources/kube/kube_config.hpp"

namespace tidings::sources::kube {

struct kube_list {
  // The items, each with the kind and apiVersion a list leaves out (so they
  // look like the watch's objects).
  nlohmann::json items = nlohmann::json::array();
  std::string resource_version;
};

net::http_headers kube_headers(const kube_config& config);

// "404 Not Found: <the Status message>", or a snippet of a non-Status body.
std::string kube_status_message(int status, std::string_view body);

// GETs `target` (a collection path plus selectors), page by page. `done`
// gets "" and the list, or the error (the API server's message for a
// non-200 answer). Never called back after cancel().
std::shared_ptr<net::http_call> kube_list_request(
    boost::asio::io_context& ioc, const kube_config& config, const std::string& target,
    std::function<void(std::string error, kube_list list)> done);

}  // namespace tidings::sources::kube
