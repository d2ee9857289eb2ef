#pragma once

// One read of a resource's backend: GET, check the status against the
// accepted ones, hand back the body with its mime type.

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

std::shared_ptr<net::http_call> read_backend(boost::asio::io_context& ioc,
                                             const web_resource_config& resource,
                                             std::function<void(read_outcome)> done);

}  // namespace tidings::sources::web
