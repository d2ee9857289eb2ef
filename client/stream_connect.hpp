#pragma once

// Internal to client/: the bounded connect both Beast translation units share,
// so name resolution and connecting obey the caller's deadline too.

#include <chrono>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "client/http_client.hpp"

namespace tidings::client {

// Connects `stream` (owned by `ioc`) to `ep` within `timeout`; throws
// transport_error on failure or timeout. Leaves `ioc` restarted, ready for
// the next run.
void connect_stream(boost::asio::io_context& ioc, boost::beast::tcp_stream& stream, const endpoint& ep,
                    std::chrono::milliseconds timeout);

// Runs `ioc` until `done` is set or `deadline` passes; true when done. The
// pending operation stays pending on timeout, so a later call can resume it.
bool run_until(boost::asio::io_context& ioc, const bool& done,
               std::chrono::steady_clock::time_point deadline);

}  // namespace tidings::client
