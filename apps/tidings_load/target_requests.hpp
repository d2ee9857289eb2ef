#pragma once

// What each target wants on the wire. Tidings takes an event envelope and
// wraps the payload in its own SSE data object; nchan takes the payload as
// the whole message body and sends it back verbatim as the `data:` line.
// Either way the payload is {"t":<send ns>,"i":<index>,"p":<publisher>,"pad":"x..."}.

#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "apps/tidings_load/load_options.hpp"

namespace tidings::load {

// The whole subscribe request: stream `k` of the run (stream_name), or for
// Tidings `opts.uri` (an upstream resource) when given, with `opts.token` as
// a bearer token.
std::string subscribe_request(target t, const boost::asio::ip::tcp::endpoint& server,
                              const load_options& opts, std::size_t k = 0);
// `request` (a subscribe request) resuming after `last_id`.
std::string with_last_event_id(const std::string& request, const std::string& last_id);
// One per stream of the run: session s uses the (s mod C)-th.
std::vector<std::string> subscribe_requests(target t, const boost::asio::ip::tcp::endpoint& server,
                                            const load_options& opts);

// A publish request up to and including "Content-Length: "; the caller adds
// the length, the blank line and the body.
std::string publish_head_prefix(target t, const boost::asio::ip::tcp::endpoint& server,
                                const std::string& stream, const std::string& token);

// The padding that makes a whole payload object about `payload_bytes` long.
std::string payload_pad(std::size_t payload_bytes);

std::string publish_body(target t, std::int64_t sent_ns, std::int64_t index, std::size_t publisher,
                         const std::string& pad);
// Tidings only: `count` events from `first` on as one JSON array.
std::string publish_batch_body(std::int64_t sent_ns, std::int64_t first, std::size_t count,
                               std::size_t publisher, const std::string& pad);
// The stream each session and event of a run uses: `opts.stream` for one
// stream, NAME-0..NAME-(C-1) for several.
std::string stream_name(const load_options& opts, std::size_t k);

// Whether an HTTP status acknowledges a publish: Tidings says 201, nchan 201
// with subscribers present and 202 without.
bool publish_accepted(target t, int status);

}  // namespace tidings::load
