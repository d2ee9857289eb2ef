#include "actors/stream_resources.hpp"

#include "core/cursor.hpp"
#include "core/stream_name.hpp"
#include "core/stream_read.hpp"
#include "core/watch_uri.hpp"

namespace tidings::actors {

persistence::status scan_newest_first(persistence::store& store, const persistence::stream_meta& meta,
                                      std::size_t scan_events,
                                      const std::function<bool(persistence::stored_event&)>& visit) {
  auto up_to = meta.head_seq;
  std::size_t scanned = 0;
  std::vector<persistence::stored_event> page;
  while (up_to > 0 && scanned < scan_events) {
    auto n = std::min<std::size_t>(256, scan_events - scanned);
    if (auto s = store.read_events_backward(meta.id, up_to, n, &page); !s.ok()) return s;
    if (page.empty()) break;
    for (auto& e : page) {
      // Trimmed but not yet deleted (the store deletes in chunks).
      if (e.seq < meta.first_seq) return {};
      if (!visit(e)) return {};
    }
    scanned += page.size();
    up_to = page.back().seq - 1;
  }
  return {};
}

persistence::status newest_event_at(persistence::store& store, const persistence::stream_meta& meta,
                                    const std::string& path, std::size_t scan_events,
                                    std::optional<persistence::stored_event>* out) {
  out->reset();
  return scan_newest_first(store, meta, scan_events, [&](persistence::stored_event& e) {
    if (e.ev.path != path) return true;
    *out = std::move(e);
    return false;
  });
}

stream_resources::stream_resources(persistence::store& store, std::string tenant, std::size_t scan_events)
    : store_(store), tenant_(std::move(tenant)), scan_events_(scan_events) {}

filters::resource_reader::read_result stream_resources::read_resource(const std::string& uri) {
  std::string error;
  auto parsed = core::parse_stream_uri(uri, &error);
  if (!parsed) return {nullptr, error};
  std::optional<persistence::stream_meta> meta;
  if (auto s = store_.get_stream(tenant_, parsed->stream, &meta); !s.ok()) return {nullptr, s.message()};
  if (!meta) return {nullptr, "no stream named " + parsed->stream};
  std::optional<persistence::stored_event> newest;
  auto path = parsed->prefix.empty() ? std::string("/") : parsed->prefix;
  if (auto s = newest_event_at(store_, *meta, path, scan_events_, &newest); !s.ok())
    return {nullptr, s.message()};
  if (!newest) return {nullptr, "nothing published at " + uri + " (in the last events kept)"};
  auto data = nlohmann::json::parse(newest->ev.data_json, nullptr, false);
  if (data.is_discarded()) return {nullptr, "the stored event at " + uri + " is not JSON"};
  if (core::classify_read(data) == core::read_kind::state)
    if (auto state = core::state_of_read(data)) return {std::move(*state), {}};
  return {std::move(data), {}};
}

nlohmann::json stream_resources::list_resources() {
  auto out = nlohmann::json::array();
  std::vector<persistence::stream_meta> streams;
  if (!store_.load_streams(&streams).ok()) return out;
  for (const auto& m : streams) {
    if (m.tenant != tenant_ || !core::valid_stream_name(m.name)) continue;  // not watch:NAME
    auto uri = std::string(core::stream_uri_scheme) + m.name;
    out.push_back(
        {{"uri", uri},
         {"name", m.name},
         {"description", "Tidings stream " + m.name + ", head " + core::format_cursor({m.epoch, m.head_seq}) +
                             ". Example: watch uri=" + uri + "/PATH"},
         {"mime_type", "application/json"},
         {"subscribable", true}});
  }
  return out;
}

}  // namespace tidings::actors
