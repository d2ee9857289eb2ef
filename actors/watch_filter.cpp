#include "actors/watch_filter.hpp"

#include <set>

#include "core/read_extraction.hpp"
#include "core/utf8.hpp"
#include "logging/log.hpp"

namespace tidings::actors {
namespace {

using self_ptr = watch_filter_actor::stateful_pointer<watch_filter_state>;
using nlohmann::json;

constexpr std::size_t fetch_page_frames = 256;
// A notice line is for reading: a filter returning a megabyte gets it cut.
constexpr std::size_t max_line_bytes = 4096;

using line_list = std::vector<std::pair<std::string, std::string>>;

void add_line(line_list& lines, std::string object_key, std::string text) {
  lines.emplace_back(std::move(object_key), core::cut_utf8(std::move(text), max_line_bytes));
}

bool under_prefix(const watch_filter_state& st, std::string_view path) {
  return path.starts_with(st.cfg.uri.prefix);
}

// The JSON a frame carries (core::event_json), back from its data lines.
json frame_event(const core::sse_frame& frame) {
  std::string payload;
  auto body = frame.body();
  while (!body.empty()) {
    auto eol = body.find('\n');
    auto line = body.substr(0, eol);
    body = eol == std::string_view::npos ? std::string_view() : body.substr(eol + 1);
    if (!line.starts_with("data: ")) continue;
    if (!payload.empty()) payload += '\n';
    payload.append(line.substr(6));
  }
  return json::parse(payload, nullptr, false);
}

persistence::path_state stored_form(const std::string& path, const core::path_read& read) {
  persistence::path_state ps;
  ps.path = path;
  ps.shape = std::string(core::read_kind_name(read.kind));
  if (read.kind == core::read_kind::state)
    ps.state_json = read.state.dump(-1, ' ', false, json::error_handler_t::replace);
  ps.last_seq = read.last_seq;
  return ps;
}

std::string shape_of(const watch_stats& stats) {
  auto k = stats.shape.load(std::memory_order_relaxed);
  return k < 0 ? std::string() : std::string(core::read_kind_name(static_cast<core::read_kind>(k)));
}

// The position after what was processed, with the paths changed since the
// previous one (every path after a new baseline).
watch_position position(watch_filter_state& st) {
  auto changed = std::make_shared<std::vector<persistence::path_state>>();
  if (st.reset) {
    for (const auto& [path, read] : st.reads) changed->push_back(stored_form(path, read));
  } else {
    for (const auto& path : st.dirty)
      if (auto it = st.reads.find(path); it != st.reads.end())
        changed->push_back(stored_form(path, it->second));
  }
  watch_position pos{st.cursor, std::move(changed), st.reset, shape_of(*st.cfg.stats)};
  st.dirty.clear();
  st.reset = false;
  return pos;
}

void restore_reads(watch_filter_state& st, const std::vector<persistence::path_state>& paths) {
  st.reads.clear();
  for (const auto& ps : paths) {
    auto kind = core::parse_read_kind(ps.shape);
    if (!kind || *kind == core::read_kind::plain) continue;
    core::path_read read;
    read.kind = *kind;
    if (*kind == core::read_kind::state) read.state = json::parse(ps.state_json, nullptr, false);
    if (read.state.is_discarded()) read.state = nullptr;
    read.last_seq = ps.last_seq;
    st.reads.emplace(ps.path, std::move(read));
  }
  // The stored paths are these already; only later changes need writing.
  st.dirty.clear();
  st.reset = false;
}

// The head of the stream becomes the cursor; the newest read of each path
// under the prefix (looking back baseline_scan_events) becomes its baseline.
// Returns the shape of the newest event under the prefix ("empty": none).
persistence::status take_baseline(watch_filter_state& st, std::string* shape) {
  st.reads.clear();
  st.dirty.clear();
  st.reset = true;
  *shape = "empty";
  // Paths whose baseline is found: their newest state or event-log read.
  // A newer plain event does not hide an older read of the path.
  std::set<std::string, std::less<>> seen;
  bool newest = true;
  auto visit = [&](const persistence::stored_event& e) {
    if (!under_prefix(st, e.ev.path) || seen.contains(e.ev.path)) return true;
    auto data = json::parse(e.ev.data_json, nullptr, false);
    auto kind = core::record_baseline(st.reads, e.ev.path, data);
    if (kind != core::read_kind::plain) seen.insert(e.ev.path);
    if (newest) *shape = std::string(core::read_kind_name(kind));
    newest = false;
    return true;
  };
  stream_key key{st.cfg.spec.id.tenant, st.cfg.uri.stream};
  if (auto* router = st.cfg.hubs->router();
      router && !st.cfg.hubs->pinned(key) && !router->owner(key).empty()) {
    // Owned by another member: its newest events are read there (this
    // filter runs on its own thread, so it may wait).
    auto tail = router->read_tail(key, st.cfg.limits.baseline_scan_events, std::chrono::seconds(5));
    if (!tail) return persistence::status::error("the stream's owner did not answer for the baseline");
    st.cursor = tail->meta ? core::cursor{tail->meta->epoch, tail->meta->head_seq} : core::cursor{};
    for (auto it = tail->events.rbegin(); it != tail->events.rend(); ++it) visit(*it);
    return {};
  }
  std::optional<persistence::stream_meta> meta;
  if (auto s = st.cfg.store->get_stream(key.tenant, key.name, &meta); !s.ok()) return s;
  if (!meta) {
    st.cursor = {};
    return {};
  }
  st.cursor = {meta->epoch, meta->head_seq};
  return scan_newest_first(*st.cfg.store, *meta, st.cfg.limits.baseline_scan_events, visit);
}

// An event of the watch's shape for the dry run; missing keys are fine there,
// so it only needs the keys every event has, with a real item when one exists.
json sample_event(const watch_filter_state& st, const std::string& shape) {
  json sample = {{"watch", st.cfg.spec.id.name},
                 {"uri", st.cfg.spec.uri},
                 {"path", st.cfg.uri.prefix.empty() ? "/" : st.cfg.uri.prefix},
                 {"cursor", core::format_cursor(st.cursor)},
                 {"type", "MODIFIED"},
                 {"key", "sample"},
                 {"new", json::object()},
                 {"old", json::object()},
                 {"object", json::object()},
                 {"changed", json::array()}};
  if (shape == "event-log") sample["seq"] = 1;
  for (const auto& [path, read] : st.reads) {
    if (read.kind != core::read_kind::state) continue;
    const auto& s = read.state;
    if (s.is_array() && !s.empty()) {
      sample["item"] = sample["object"] = sample["new"] = sample["old"] = s.front();
    } else if (s.is_object() && !s.empty()) {
      sample["key"] = s.begin().key();
      sample["new"] = sample["old"] = s.begin().value();
    } else {
      continue;
    }
    sample["path"] = path;
    break;
  }
  return sample;
}

// Runs the filter (or the default line) on one extracted event.
void filter_event(watch_filter_state& st, core::extracted_event& ev, const std::string& path,
                  line_list& lines) {
  auto& fields = ev.fields;
  // The default line is the change's own: made before the watch's context
  // (which differs for every event) is added.
  std::string default_line = st.filter ? std::string() : core::default_notice_line(fields);
  fields["watch"] = st.cfg.spec.id.name;
  fields["uri"] = st.cfg.spec.uri;
  fields["path"] = path;
  fields["cursor"] = core::format_cursor(st.cursor);
  st.cfg.stats->events.fetch_add(1, std::memory_order_relaxed);
  auto type = fields.value("type", std::string());
  if (!st.filter) {
    add_line(lines, ev.object_key, std::move(default_line));
    logging::debug("watch.event", {{"watch", st.cfg.spec.id.name}, {"type", type}, {"kept", true}});
    return;
  }
  auto result = st.filter->run(fields);
  switch (result.what) {
    case filters::filter_result::outcome::keep:
      add_line(lines, ev.object_key, std::move(result.text));
      break;
    case filters::filter_result::outcome::drop:
      break;
    case filters::filter_result::outcome::error:
      st.cfg.stats->filter_errors.fetch_add(1, std::memory_order_relaxed);
      if (auto* m = st.cfg.hubs->metrics()) m->filter_error();
      logging::warn("watch.filter_error", {{"watch", st.cfg.spec.id.name}, {"error", result.text}});
      add_line(lines, ev.object_key, "filter error: " + result.text);
      break;
  }
  logging::debug("watch.event", {{"watch", st.cfg.spec.id.name},
                                 {"type", type},
                                 {"kept", result.what != filters::filter_result::outcome::drop}});
}

// A source's event is the change itself (sources/source_actor): its data
// is the filter's event dict. The source's failure ends the watch.
void process_source_event(watch_filter_state& st, const core::sse_frame& frame, json data,
                          const std::string& type, watch_output& out) {
  core::extracted_event ev;
  ev.fields = data.is_object() ? std::move(data) : json{{"value", std::move(data)}};
  ev.fields["type"] = type;
  ev.object_key = frame.path;
  auto failed = ev.fields.find("source_failed");
  if (type == "ERROR" && failed != ev.fields.end() && failed->is_boolean() && failed->get<bool>()) {
    auto message = ev.fields.find("message");
    out.fail = "its source failed: " + (message != ev.fields.end() && message->is_string()
                                            ? message->get<std::string>()
                                            : std::string("no reason given"));
  }
  filter_event(st, ev, frame.path, out.lines);
}

void process_frame(watch_filter_state& st, const core::sse_frame& frame, watch_output& out) {
  if (!under_prefix(st, frame.path)) return;
  auto event = frame_event(frame);
  if (!event.is_object()) return;  // cannot happen: we encoded it
  auto data = event.contains("data") ? event["data"] : json();
  auto type = event.value("type", std::string("CHANGED"));
  if (!st.cfg.source_shape.empty()) return process_source_event(st, frame, std::move(data), type, out);
  auto& lines = out.lines;
  auto read = core::apply_stream_event(st.reads, frame.path, type, data);
  if (read.kind != core::read_kind::plain) st.dirty.insert(frame.path);
  // The shape is that of the last state or event-log read; plain events
  // name it only until one comes.
  if (read.kind != core::read_kind::plain || st.cfg.stats->shape.load(std::memory_order_relaxed) < 0)
    st.cfg.stats->shape.store(static_cast<int>(read.kind), std::memory_order_relaxed);
  if (!read.error.empty()) {
    add_line(lines, "", "ERROR " + frame.path + ": malformed event-log read: " + read.error);
    return;
  }
  auto max = st.cfg.limits.max_events_per_update;
  auto skipped = read.events.size() > max ? read.events.size() - max : 0;
  if (skipped > 0) {
    read.events.resize(max);
    // First, so the notice's own 20-line cap cannot hide it.
    add_line(lines, "",
             std::to_string(skipped + max) + " events in one update at " + frame.path + "; only the first " +
                 std::to_string(max) + " were filtered");
  }
  for (auto& ev : read.events) filter_event(st, ev, frame.path, lines);
}

// Processes the frames after the cursor and hands the lines on.
void process(self_ptr self, std::uint64_t epoch, const std::vector<frame_ptr>& frames) {
  auto& st = self->state;
  auto out = std::make_shared<watch_output>();
  bool advanced = false;
  for (const auto& f : frames) {
    if (st.cursor.epoch == epoch && f->seq <= st.cursor.seq) continue;
    st.cursor = {epoch, f->seq};
    advanced = true;
    process_frame(st, *f, *out);
    if (!out->fail.empty()) break;  // nothing after the source's end
  }
  if (!advanced) return;
  out->position = position(st);
  self->send(st.cfg.debounce, lines_atom::value, watch_output_ptr(std::move(out)));
}

// The next page after the cursor; the hub registers the feed once it is caught up.
void fetch_after_cursor(self_ptr self) {
  auto& st = self->state;
  auto req = std::make_shared<fetch_request>();
  req->subscription = st.feed_generation;
  req->sink = st.feed;
  req->after = st.cursor;
  req->max_frames = fetch_page_frames;
  self->send(st.hub, fetch_atom::value, fetch_request_ptr(std::move(req)));
}

void subscribe(self_ptr self) {
  auto& st = self->state;
  if (st.feed) caf::anon_send(st.hub, unsub_atom::value, fanout_sink_ptr(st.feed));
  st.live = false;
  // Again from the registry: after a move (cluster) the hub is another one.
  st.hub = st.cfg.hubs->get({st.cfg.spec.id.tenant, st.cfg.uri.stream});
  st.feed = std::make_shared<watch_feed>(watch_filter_actor(self), ++st.feed_generation,
                                         st.cfg.limits.max_queued_frames);
  *st.registered = {st.hub, st.feed};
  fetch_after_cursor(self);
}

void on_resync(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  logging::info("watch.resubscribing", {{"watch", st.cfg.spec.id.name}, {"reason", reason}});
  auto before = st.cursor;
  std::string shape;
  if (auto s = take_baseline(st, &shape); !s.ok()) {
    // Ending makes the manager list the watch as failed; a silent stop would not.
    logging::error("watch.failed", {{"watch", st.cfg.spec.id.name}, {"error", s.message()}});
    return self->quit(
        caf::make_error(caf::sec::runtime_error, "reading a new baseline failed: " + s.message()));
  }
  auto out = std::make_shared<watch_output>();
  add_line(out->lines, "",
           "RESYNC " + reason + ": events after " + core::format_cursor(before) +
               " may have been missed; watching again from " + core::format_cursor(st.cursor));
  out->position = position(st);
  self->send(st.cfg.debounce, lines_atom::value, watch_output_ptr(std::move(out)));
  subscribe(self);
}

void on_fetched(self_ptr self, std::uint64_t generation, const fetch_reply_ptr& reply) {
  auto& st = self->state;
  if (generation != st.feed_generation) return;  // from a feed we replaced
  if (reply->status == fetch_status::resync) return on_resync(self, reply->reason);
  if (reply->registered) {
    // A hub that moved handed the fetch on: unsubscribe where it registered.
    st.hub = caf::actor_cast<stream_actor>(reply->registered_at);
    *st.registered = {st.hub, st.feed};
  }
  if (!reply->frames.empty()) process(self, reply->epoch, reply->frames);
  if (reply->status == fetch_status::caught_up) {
    if (st.cursor.epoch == 0 && reply->epoch != 0) st.cursor.epoch = reply->epoch;
    if (!st.live)
      logging::debug("watch.subscribed", {{"watch", st.cfg.spec.id.name},
                                          {"stream", st.cfg.uri.stream},
                                          {"cursor", core::format_cursor(st.cursor)}});
    st.live = true;
    return;
  }
  fetch_after_cursor(self);
}

void on_feed(self_ptr self, std::uint64_t generation, const frame_batch_ptr& batch) {
  auto& st = self->state;
  if (generation != st.feed_generation) return;
  st.feed->consumed(batch->frames.size());
  if (st.cursor.epoch != 0 && batch->epoch != st.cursor.epoch) return on_resync(self, "epoch_changed");
  if (!batch->frames.empty() && st.cursor.epoch == batch->epoch &&
      batch->frames.front()->seq > st.cursor.seq + 1) {
    // A batch beyond our cursor: something in between never reached us.
    return subscribe(self);
  }
  process(self, batch->epoch, batch->frames);
}

void on_prepare(self_ptr self, const watch_prepare_request_ptr& req) {
  auto& st = self->state;
  watch_prepare_result result;
  auto fail = [&](watch_error_kind kind, std::string message) {
    result.error = watch_error{kind, std::move(message)};
    req->reply(std::move(result));
  };
  const auto& spec = st.cfg.spec;
  st.resources =
      std::make_unique<stream_resources>(*st.cfg.store, spec.id.tenant, st.cfg.limits.baseline_scan_events);
  if (spec.on_event) {
    std::string error;
    st.filter =
        filters::lua_filter::compile(*spec.on_event, st.cfg.limits.filter, st.resources.get(), &error);
    if (!st.filter) return fail(watch_error_kind::bad_request, "on_event does not compile: " + error);
  }
  stream_key key{spec.id.tenant, st.cfg.uri.stream};
  // The watch count per tenant bounds what watches hold; the node cap applies.
  if (st.cfg.hubs->admit_subscriber(key, SIZE_MAX) != hub_registry::admission::admitted)
    return fail(watch_error_kind::unavailable, "too many streams that nobody has published to are watched");
  st.hub = st.cfg.hubs->get(key);

  std::string shape = "empty";
  if (req->progress && req->progress->stream == st.cfg.uri.stream) {
    st.cursor = req->progress->cursor;
    restore_reads(st, req->progress->paths);
    if (!req->progress->shape.empty()) shape = req->progress->shape;
  } else if (auto s = take_baseline(st, &shape); !s.ok()) {
    return fail(watch_error_kind::unavailable, "reading the baseline failed: " + s.message());
  }
  if (!st.cfg.source_shape.empty() && (shape == "empty" || shape == "events")) shape = st.cfg.source_shape;
  if (auto kind = core::parse_read_kind(shape))
    st.cfg.stats->shape.store(static_cast<int>(*kind), std::memory_order_relaxed);

  if (st.filter && req->dry_run) {
    if (auto error = st.filter->dry_run(sample_event(st, shape)))
      return fail(watch_error_kind::bad_request, "on_event failed on a sample event: " + *error);
  }
  result.shape = shape;
  result.position = position(st);
  req->reply(std::move(result));
}

}  // namespace

watch_filter_actor::behavior_type watch_filter(watch_filter_actor::stateful_pointer<watch_filter_state> self,
                                               watch_filter_config cfg) {
  self->state.cfg = std::move(cfg);
  // However the actor ends (stopped, or an error), its feed leaves the hub.
  auto registered = self->state.registered;
  self->attach_functor([registered] {
    if (registered->second) caf::anon_send(registered->first, unsub_atom::value, registered->second);
  });
  return {
      [self](prepare_atom, const watch_prepare_request_ptr& req) { on_prepare(self, req); },
      [self](go_atom) { subscribe(self); },
      [self](feed_atom, std::uint64_t generation, const frame_batch_ptr& batch) {
        on_feed(self, generation, batch);
      },
      [self](fetched_atom, std::uint64_t generation, const fetch_reply_ptr& reply) {
        on_fetched(self, generation, reply);
      },
      [self](overflow_atom, std::uint64_t generation) {
        if (generation != self->state.feed_generation) return;
        logging::debug("watch.catching_up", {{"watch", self->state.cfg.spec.id.name}});
        subscribe(self);
      },
  };
}

}  // namespace tidings::actors
