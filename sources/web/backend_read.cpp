#include "sources/web/backend_read.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tidings::sources::web {

std::shared_ptr<net::http_call> read_backend(boost::asio::io_context& ioc,
                                             const web_resource_config& resource,
                                             std::function<void(read_outcome)> done) {
  const auto& b = *resource.backend;
  net::http_request req;
  req.method = b.method;
  req.url = b.url;
  req.body = b.body;
  req.tls = b.tls_context;
  req.headers = b.headers;
  const bool typed = std::any_of(req.headers.begin(), req.headers.end(), [](const auto& h) {
    return std::equal(h.first.begin(), h.first.end(), std::string_view("content-type").begin(),
                      std::string_view("content-type").end(),
                      [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  });
  if (!req.body.empty() && !typed) req.headers.emplace_back("Content-Type", "application/json");
  req.timeout = b.timeout;
  req.max_body_bytes = b.max_body_bytes;
  return net::http_fetch(
      ioc, std::move(req),
      [uri = resource.uri, mime = resource.mime_type, accepted = b.expected_status_codes,
       json_only = b.require_json_response, done = std::move(done)](net::http_result r) {
        if (!r.error.empty()) return done(read_outcome::failed(uri + ": backend read failed: " + r.error));
        auto status = r.response.status;
        if (std::find(accepted.begin(), accepted.end(), status) == accepted.end())
          return done(read_outcome::failed(uri + ": backend answered HTTP " + std::to_string(status)));
        if (json_only && !nlohmann::json::accept(r.response.body))
          return done(read_outcome::failed(uri + ": backend answered HTTP " + std::to_string(status) +
                                           " with a body that is not JSON (require_json_response)"));
        auto type = mime;
        if (type.empty()) {
          type = r.response.header("content-type");
          type = type.substr(0, type.find(';'));
        }
        done(read_outcome::ok({type.empty() ? "application/json" : type, std::move(r.response.body)}));
      });
}

}  // namespace tidings::sources::web
