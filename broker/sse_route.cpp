// GET /v1/sse: validate everything before the stream starts, so a bad
// request gets a plain 400 instead of a broken event stream.

#include <set>

#include "broker/api.hpp"
#include "core/cursor_vector.hpp"

namespace tidings::broker {
namespace {

constexpr std::size_t max_streams_per_connection = 16;

}  // namespace

route_result api::open_sse(const http_request& req) {
  if (draining_) return {error_response(503, "the node is draining; connect to another node"), {}};
  relay::sse_request out;
  auto specs = req.query_all("stream");
  if (specs.empty())
    return {error_response(400, "name at least one stream: /v1/sse?stream=NAME[:PREFIX]"), {}};
  if (specs.size() > max_streams_per_connection)
    return {error_response(400, "at most 16 streams per connection"), {}};
  std::set<std::string> seen;
  for (auto& spec : specs) {
    auto sel = core::parse_stream_selector(spec);
    if (!sel)
      return {error_response(
                  400, "bad stream '" + spec + "': use NAME or NAME:/PREFIX with NAME of a-z 0-9 . _ -"),
              {}};
    if (!seen.insert(sel->stream).second)
      return {error_response(400, "stream '" + sel->stream + "' is named twice"), {}};
    out.streams.push_back(std::move(*sel));
  }
  // EventSource resends the original URL with Last-Event-ID, which is the
  // more recent position, so the header wins over `since`.
  const std::string* resume = req.header("last-event-id");
  const char* what = "Last-Event-ID";
  if (!resume || resume->empty()) {
    resume = req.query_one("since");
    what = "since";
  }
  if (resume && !resume->empty()) {
    auto cursors = core::decode_cursor_vector(*resume);
    if (!cursors)
      return {
          error_response(400, std::string(what) + " is not a cursor or a list of cursors: '" + *resume + "'"),
          {}};
    if (cursors->size() != out.streams.size())
      return {error_response(400, std::string(what) + " has " + std::to_string(cursors->size()) +
                                      " cursors but the connection names " +
                                      std::to_string(out.streams.size()) + " streams"),
              {}};
    out.resume = std::move(*cursors);
  }
  for (auto& sel : out.streams) {
    if (!hubs_.admit_subscriber({out.tenant, sel.stream}))
      return {error_response(429, "too many watched streams that do not exist yet (limit " +
                                      std::to_string(cfg_.max_unknown_streams) + "); publish to '" +
                                      sel.stream + "' first, or retry later"),
              {}};
  }
  return {{}, std::move(out)};
}

}  // namespace tidings::broker
