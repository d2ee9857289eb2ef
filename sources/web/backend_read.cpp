#include "sources/web/backend_read.hpp"

#include <algorithm>

namespace tidings::sources::web {

std::shared_ptr<net::http_call> read_backend(boost::asio::io_context& ioc,
                                             const web_resource_config& resource,
                                             std::function<void(read_outcome)> done) {
  const auto& b = *resource.backend;
  net::http_request req;
  req.url = b.url;
  req.tls = b.tls_context;
  req.headers = b.headers;
  req.timeout = b.timeout;
  req.max_body_bytes = b.max_body_bytes;
  return net::http_fetch(
      ioc, std::move(req),
      [uri = resource.uri, mime = resource.mime_type, accepted = b.expected_status_codes,
       done = std::move(done)](net::http_result r) {
        if (!r.error.empty()) return done(read_outcome::failed(uri + ": backend read failed: " + r.error));
        auto status = r.response.status;
        if (std::find(accepted.begin(), accepted.end(), status) == accepted.end())
          return done(read_outcome::failed(uri + ": backend answered HTTP " + std::to_string(status)));
        auto type = mime;
        if (type.empty()) {
          type = r.response.header("content-type");
          type = type.substr(0, type.find(';'));
        }
        done(read_outcome::ok({type.empty() ? "application/json" : type, std::move(r.response.body)}));
      });
}

}  // namespace tidings::sources::web
