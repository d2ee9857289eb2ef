#pragma once

// The read-only built-ins of a watch's filter, over the tenant's own streams:
// list_resources() lists them as stream:// URIs, read_resource(uri) returns
// the newest event at exactly that path (a state read's state, otherwise the
// event's data). Runs on the filter's thread; reads the store directly.

#include <functional>
#include <string>

#include "filters/lua_filter.hpp"
#include "persistence/store.hpp"

namespace tidings::actors {

class stream_resources final : public filters::resource_reader {
 public:
  stream_resources(persistence::store& store, std::string tenant, std::size_t scan_events);

  read_result read_resource(const std::string& uri) override;
  nlohmann::json list_resources() override;

 private:
  persistence::store& store_;
  std::string tenant_;
  std::size_t scan_events_;
};

// Visits at most `scan_events` events of the stream, newest first, until
// `visit` returns false.
persistence::status scan_newest_first(persistence::store& store, const persistence::stream_meta& meta,
                                      std::size_t scan_events,
                                      const std::function<bool(persistence::stored_event&)>& visit);

// The newest event of a stream at exactly `path`, looking back at most
// `scan_events` events from the head.
persistence::status newest_event_at(persistence::store& store, const persistence::stream_meta& meta,
                                    const std::string& path, std::size_t scan_events,
                                    std::optional<persistence::stored_event>* out);

}  // namespace tidings::actors
