#include "sources/source_actor.hpp"

#include <utility>

#include <boost/asio/post.hpp>

#include "actors/write_keys.hpp"
#include "core/event.hpp"
#include "core/retry_schedule.hpp"
#include "logging/log.hpp"

namespace tidings::sources {
namespace {

using self_ptr = source_actor::stateful_pointer<source_state>;
using nlohmann::json;
using phase = source_state::phase;

// Runs fn inside the actor, if it is still alive.
void post_back(const caf::actor_addr& weak, std::function<void()> fn) {
  if (auto strong = caf::actor_cast<source_actor>(weak))
    caf::anon_send(strong, actors::task_atom::value, actors::actor_task{std::move(fn)});
}

void on_loop(source_state& st, std::function<void()> fn) {
  boost::asio::post(*st.cfg.loop, std::move(fn));
}

std::string phase_name(phase p) {
  switch (p) {
    case phase::starting:
      return "starting";
    case phase::running:
      return "running";
    case phase::resubscribing:
      return "resubscribing";
    case phase::retrying:
      return "retrying";
    case phase::failed:
      break;
  }
  return "failed";
}

bool reconnecting(phase p) {
  return p == phase::resubscribing || p == phase::retrying;
}

std::int64_t wall_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// `next_attempt`: when the next subscribe attempt is due, if one is.
void set_phase(source_state& st, phase p, std::string error = {},
               std::optional<std::chrono::system_clock::time_point> next_attempt = std::nullopt) {
  st.at = p;
  st.cfg.status->update([&](actors::source_info& i) {
    i.state = phase_name(p);
    i.failures = st.failures;
    i.next_attempt_ms = next_attempt ? wall_ms(*next_attempt) : 0;
    if (!error.empty()) i.error = std::move(error);
  });
}

// An event's path is the changed object's key; a key that is no valid path
// (too long, control characters) falls back to the whole resource.
// Upstream data: a field of the wrong type must not throw.
std::string string_field(const json& fields, const char* name) {
  auto it = fields.find(name);
  return it != fields.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The event's own path (an event-log event's "path"), else its object key.
std::string event_path(const json& fields) {
  auto key = string_field(fields, "path");
  if (key.empty()) key = string_field(fields, "key");
  if (key.empty()) return std::string(core::default_event_path);
  auto path = key.front() == '/' ? key : "/" + key;
  return core::check_event_path(path) ? std::string(core::default_event_path) : path;
}

std::string event_type(const json& fields) {
  auto type = string_field(fields, "type");
  return core::check_event_type(type) ? std::string(core::default_event_type) : type;
}

core::event make_event(const source_state& st, json fields) {
  // Only the source itself may say it failed (that ends every watch on it):
  // see source_failed_event.
  fields.erase("source_failed");
  core::event ev;
  ev.path = event_path(fields);
  ev.type = event_type(fields);
  fields["uri"] = st.cfg.uri;
  ev.data_json = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  return ev;
}

}  // namespace

core::event source_failed_event(const std::string& uri, const std::string& message) {
  json fields = {{"type", "ERROR"}, {"message", message}, {"source_failed", true}, {"uri", uri}};
  core::event ev;
  ev.type = "ERROR";
  ev.data_json = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  return ev;
}

namespace {

// Tells the stream's subscribers the upstream is away past the backoff
// steps. Not "source_failed": the watches on it stay and heal with it.
core::event retrying_event(const source_state& st, const std::string& message) {
  json fields = {{"type", "ERROR"},
                 {"message", message},
                 {"retrying", true},
                 {"retry_ms", st.cfg.backoff.back().count()},
                 {"uri", st.cfg.uri}};
  core::event ev;
  ev.type = "ERROR";
  ev.data_json = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  return ev;
}

// Comes first in the read that ends an outage: whatever the upstream did
// meanwhile is not known event by event.
core::extracted_event healed_gap(std::chrono::milliseconds down) {
  core::extracted_event ev;
  ev.fields = {{"type", "GAP"},
               {"reason", "the upstream was unreachable for " + std::to_string(down.count() / 1000) + "." +
                              std::to_string(down.count() % 1000 / 100) +
                              " s: changes made meanwhile come as one difference or may be missing"},
               {"down_ms", down.count()}};
  return ev;
}

persistence::source_snapshot snapshot_of(const source_state& st, const core::resource_tracker& t) {
  persistence::source_snapshot snap;
  snap.tenant = st.cfg.tenant;
  snap.key = st.cfg.key;
  snap.state.shape = std::string(t.shape_name());
  if (t.current_shape() == core::resource_tracker::shape::state)
    snap.state.state_json = t.state().dump(-1, ' ', false, json::error_handler_t::replace);
  snap.state.last_seq = t.last_seq();
  return snap;
}

void close_upstream(source_state& st) {
  on_loop(st, [slot = st.slot] {
    if (!slot->up) return;
    slot->up->close();
    slot->up.reset();
  });
}

// The first subscribe or read failed: every waiting subscriber gets the
// upstream's own message, and nothing is left running upstream. The actor
// stays (failed) until the registry closes it, so a join still on its way
// gets the same answer rather than a dropped message.
void fail_fast(self_ptr self, const std::string& reason,
               actors::watch_error_kind kind = actors::watch_error_kind::upstream) {
  auto& st = self->state;
  set_phase(st, phase::failed, reason);
  st.start_error = actors::watch_error{kind, reason};
  logging::info("source.start_failed", {{"uri", st.cfg.uri}, {"error", reason}});
  if (st.cfg.metrics) st.cfg.metrics->failed(st.cfg.tenant, st.cfg.uri, reason);
  st.watching.reset();  // no longer watching, though the actor waits to be closed
  for (auto& j : st.joiners) j->answer(st.start_error, {});
  st.joiners.clear();
  close_upstream(st);
}

void subscribe_upstream(self_ptr self);
void read_upstream(self_ptr self);
void read_done(self_ptr self);
bool announcing(const source_state& st);

// One read at a time, and none while the previous one's events are being
// stored (it would diff against the state before them): an update meanwhile
// becomes one more read after.
void request_read(self_ptr self) {
  auto& st = self->state;
  if (st.at == phase::failed) return;
  if (st.reading || st.committing || announcing(st)) {
    st.read_again = true;
    return;
  }
  st.read_again = false;
  read_upstream(self);
}

void send_write(self_ptr self, const std::shared_ptr<const actors::publish_request>& write,
                const std::function<void(std::string)>& done, std::chrono::milliseconds pause, bool last);

// Gave up, or the resource is gone: subscribers of the stream learn it from
// an ERROR event (watches fail on it), then the source ends.
void fail(self_ptr self, const std::string& message) {
  auto& st = self->state;
  st.down.reset();  // no longer retrying: the gauge lets go of it
  set_phase(st, phase::failed, message);
  logging::error("source.failed", {{"uri", st.cfg.uri}, {"error", message}});
  if (st.cfg.metrics) st.cfg.metrics->failed(st.cfg.tenant, st.cfg.uri, message);
  st.watching.reset();
  // Stored like a read (keyed, tried again while the stream refuses):
  // watches on the source fail on it, so it must not be lost to a failover.
  auto req = std::make_shared<actors::publish_request>();
  req->events.push_back(source_failed_event(st.cfg.uri, message));
  req->idempotency_key = st.key_prefix + std::to_string(++st.writes);
  caf::actor_addr weak = self->address();
  auto done = [weak, self, message](const std::string& error) {
    post_back(weak, [self, message, error] {
      if (!error.empty())
        logging::error("source.error_event_lost", {{"uri", self->state.cfg.uri}, {"error", error}});
      close_upstream(self->state);
      self->quit(caf::make_error(caf::sec::runtime_error, message));
    });
  };
  send_write(self, req, done, std::chrono::milliseconds(0), true);
}

// The outage's ERROR event is stored after any read's write still under
// way (so it follows the events read before it) and before any read after
// it (so the GAP that ends the outage cannot overtake it).
bool announcing(const source_state& st) {
  return st.down && (st.down->announcing || !st.down->notice.empty());
}

void announce_outage(self_ptr self) {
  auto& st = self->state;
  if (!st.down || st.down->notice.empty() || st.down->announcing || st.committing) return;
  auto req = std::make_shared<actors::publish_request>();
  req->events.push_back(retrying_event(st, std::exchange(st.down->notice, {})));
  req->idempotency_key = st.key_prefix + std::to_string(++st.writes);
  st.down->announcing = true;
  caf::actor_addr weak = self->address();
  auto done = [weak, self](const std::string& error) {
    post_back(weak, [self, error] {
      auto& st = self->state;
      if (st.down) st.down->announcing = false;
      if (!error.empty()) logging::error("source.error_event_lost", {{"uri", st.cfg.uri}, {"error", error}});
      read_done(self);
    });
  };
  send_write(self, req, done, std::chrono::milliseconds(0), false);
}

// The steps are used up: the source goes on retrying at the last step's
// pace, and its stream says so once (an ERROR event that ends no watch).
void start_retrying(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  auto message = "the upstream is unreachable after " + std::to_string(st.failures) + " attempts: " + reason +
                 "; retrying every " + std::to_string(st.cfg.backoff.back().count()) +
                 " ms or a little sooner";
  logging::warn("source.retrying", {{"uri", st.cfg.uri}, {"error", message}});
  st.down = source_state::outage{std::chrono::steady_clock::now(), nullptr, message, false};
  if (st.cfg.metrics)
    st.down->counted =
        std::make_unique<probe::retrying_source>(*st.cfg.metrics, st.cfg.tenant, st.cfg.uri, reason);
  announce_outage(self);
}

void retry_later(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  auto next = core::next_retry_wait(st.cfg.backoff, st.failures,
                                    std::uniform_real_distribution<double>(0.0, 1.0)(st.jitter));
  const bool first_retry = next.past_steps && st.at != phase::retrying;
  const bool quiet = next.past_steps && !first_retry;
  set_phase(st, next.past_steps ? phase::retrying : phase::resubscribing, reason,
            std::chrono::system_clock::now() + next.wait);
  // Past the first retry each attempt is a debug line only: an outage of
  // hours must not fill the audit log (source.retrying and
  // source.recovered bracket it, tidings_sources_retrying counts it).
  logging::write(quiet ? logging::level::debug : logging::level::info, "source.resubscribing",
                 {{"uri", st.cfg.uri},
                  {"reason", reason},
                  {"attempt", static_cast<std::uint64_t>(st.failures + 1)},
                  {"wait_ms", static_cast<std::int64_t>(next.wait.count())}});
  if (st.cfg.metrics && !quiet) st.cfg.metrics->resubscribing(st.cfg.tenant, st.cfg.uri, reason);
  if (first_retry) start_retrying(self, reason);
  auto generation = st.generation;
  self->delayed_send(self, next.wait, actors::task_atom::value, actors::actor_task{[self, generation] {
                       if (self->state.generation == generation && reconnecting(self->state.at))
                         subscribe_upstream(self);
                     }});
}

void on_ended(self_ptr self, std::uint64_t generation, const std::string& reason) {
  auto& st = self->state;
  if (generation != st.generation || st.at == phase::failed) return;
  if (st.at == phase::starting) return fail_fast(self, reason);
  // The first end of a healthy subscription is not yet a failure; each
  // failed attempt after it is.
  if (reconnecting(st.at)) ++st.failures;
  ++st.generation;
  // A read in flight is of the old generation and will be ignored; a commit
  // in flight is not (it is durable either way) and still holds off reads.
  st.reading = false;
  st.read_again = false;
  retry_later(self, reason);
}

// The upstream says the resource no longer exists: retrying cannot help.
void on_gone(self_ptr self, std::uint64_t generation, const std::string& notice) {
  auto& st = self->state;
  if (generation != st.generation || st.at == phase::failed) return;
  if (st.at == phase::starting) return fail_fast(self, notice);
  ++st.generation;  // a read in flight is of the resource that went
  st.reading = false;
  st.read_again = false;
  // A join arriving before the actor is gone gets the notice, not "retry".
  st.start_error = actors::watch_error{actors::watch_error_kind::upstream, notice};
  fail(self, notice);
}

void on_subscribed(self_ptr self, std::uint64_t generation) {
  auto& st = self->state;
  if (generation != st.generation || st.at == phase::failed) return;
  logging::debug("source.subscribed", {{"uri", st.cfg.uri}, {"stream", st.cfg.stream}});
  request_read(self);
}

// The upstream is open: from here its strategy labels this source's metrics.
void on_opened(self_ptr self, const std::string& strategy, bool tls_unverified) {
  auto& st = self->state;
  if (!st.strategy.empty() || st.at == phase::failed) return;
  st.strategy = strategy;
  st.cfg.status->update([&](actors::source_info& i) {
    i.strategy = strategy;
    i.tls_unverified = tls_unverified;
  });
  if (st.cfg.metrics) st.watching = std::make_unique<probe::active_watcher>(*st.cfg.metrics, strategy);
}

// A change signal: counted, audited with the subscribers it will reach.
void on_fired(self_ptr self) {
  auto& st = self->state;
  std::uint64_t subscribers = 0;
  st.cfg.status->update([&](actors::source_info& i) {
    i.last_fire_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    subscribers = i.subscribers;
  });
  if (st.cfg.metrics) st.cfg.metrics->fired(st.strategy, st.cfg.tenant, st.cfg.uri, subscribers);
}

void subscribe_upstream(self_ptr self) {
  auto& st = self->state;
  auto generation = ++st.generation;
  caf::actor_addr weak = self->address();
  on_loop(st, [self, weak, generation, slot = st.slot, conn = st.cfg.upstreams, uri = st.cfg.uri] {
    if (!slot->up) {
      std::string error;
      slot->up = conn->open(uri, &error);
      if (slot->up)
        post_back(weak, [self, strategy = std::string(slot->up->strategy()),
                         unverified = slot->up->tls_unverified()] { on_opened(self, strategy, unverified); });
      if (!slot->up) {
        post_back(weak, [self, generation, error] {
          // The connector refused the URI itself: the caller's mistake.
          if (self->state.at == phase::starting && generation == self->state.generation)
            return fail_fast(self, error, actors::watch_error_kind::bad_request);
          on_ended(self, generation, error);
        });
        return;
      }
    }
    upstream::handlers h;
    h.subscribed = [self, weak, generation] {
      post_back(weak, [self, generation] { on_subscribed(self, generation); });
    };
    h.updated = [self, weak, generation] {
      post_back(weak, [self, generation] {
        auto& st = self->state;
        // Also while the first read after a (re)subscribe is in flight: it may
        // have fetched the content from before this change.
        if (generation != st.generation) return;
        on_fired(self);
        request_read(self);
      });
    };
    h.degraded = [self, weak, generation](std::string error) {
      post_back(weak, [self, generation, error = std::move(error)] {
        auto& st = self->state;
        if (generation != st.generation) return;
        st.cfg.status->update([&](actors::source_info& i) { i.error = error; });
        if (st.cfg.metrics) st.cfg.metrics->poll_failed(st.cfg.tenant, st.cfg.uri, error);
      });
    };
    h.ended = [self, weak, generation](std::string reason) {
      post_back(weak, [self, generation, reason = std::move(reason)] { on_ended(self, generation, reason); });
    };
    h.gone = [self, weak, generation](std::string notice) {
      post_back(weak, [self, generation, notice = std::move(notice)] { on_gone(self, generation, notice); });
    };
    slot->up->subscribe(std::move(h));
  });
}

void read_done(self_ptr self) {
  auto& st = self->state;
  if (st.read_again) request_read(self);
}

constexpr auto first_pause = std::chrono::milliseconds(100);
constexpr auto longest_pause = std::chrono::milliseconds(2000);

// Sends a read's write to the stream's hub. One its stream refuses for now
// (in a cluster: a claim after a node was lost, too few in-sync replicas)
// or whose answer is uncertain goes again after a growing pause, with the
// same Idempotency-Key: the events are the upstream's, read once, so the
// source waits for its stream rather than drop them (reads wait meanwhile,
// which keeps their order). Once the source failed only its ERROR event
// (`last`) is still tried. `done` runs on the hub's side: it posts back.
void send_write(self_ptr self, const std::shared_ptr<const actors::publish_request>& write,
                const std::function<void(std::string)>& done, std::chrono::milliseconds pause, bool last) {
  auto& st = self->state;
  auto req = std::make_shared<actors::publish_request>(*write);
  caf::actor_addr weak = self->address();
  req->reply = [self, weak, write, done, pause, last](const actors::publish_result& r) {
    const bool again =
        r.outcome == actors::publish_outcome::unavailable || r.outcome == actors::publish_outcome::uncertain;
    std::string error = actors::failed(r.outcome) ? (r.error.empty() ? "unavailable" : r.error) : "";
    if (error.empty() || !again) return done(error);
    post_back(weak, [self, write, done, pause, last, error] {
      auto& st = self->state;
      if (st.at == phase::failed && !last) return done(error);
      if (pause.count() == 0) logging::warn("source.write_waits", {{"uri", st.cfg.uri}, {"error", error}});
      if (!last)
        st.cfg.status->update([&](actors::source_info& i) { i.error = "storing a read waits: " + error; });
      auto next = pause.count() == 0 ? first_pause : std::min(pause * 2, longest_pause);
      self->delayed_send(self, next, actors::task_atom::value,
                         actors::actor_task{[self, write, done, next, last] {
                           // A write that waited while the source failed
                           // is not stored after its ERROR event.
                           if (self->state.at == phase::failed && !last) return done("the source failed");
                           send_write(self, write, done, next, last);
                         }});
    });
  };
  self->send(st.cfg.hub(), actors::publish_atom::value, actors::publish_request_ptr(std::move(req)));
}

// The read's events and the snapshot they leave commit in one batch; the
// tracker moves on only once they did.
// The first read stored after an outage ends it, its GAP first.
void commit_read(self_ptr self, core::resource_tracker next, std::vector<core::extracted_event> events) {
  auto& st = self->state;
  st.committing = true;
  caf::actor_addr weak = self->address();
  auto shared_next = std::make_shared<core::resource_tracker>(std::move(next));
  const bool healing = st.down.has_value();
  if (healing)
    events.insert(events.begin(), healed_gap(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - st.down->since)));
  auto count = events.size();
  auto generation = st.generation;
  auto done = [self, weak, shared_next, count, generation, healing](std::string error) {
    post_back(weak, [self, shared_next, count, generation, healing, error] {
      auto& st = self->state;
      st.committing = false;
      if (st.at == phase::failed) return;
      announce_outage(self);  // one that waited for this write
      bool current = generation == st.generation;
      if (!error.empty()) {
        logging::error("source.commit_failed", {{"uri", st.cfg.uri}, {"error", error}});
        if (st.at == phase::starting)
          return fail_fast(self, "storing the first read failed: " + error,
                           actors::watch_error_kind::unavailable);
        st.cfg.status->update([&](actors::source_info& i) { i.error = "storing a read failed: " + error; });
        return read_done(self);
      }
      // Durable, so the tracker moves on even when the subscription ended
      // meanwhile; only a read of the current subscription makes it healthy.
      st.tracker = std::move(*shared_next);
      st.cfg.status->update([&](actors::source_info& i) {
        if (i.error.starts_with("storing a read")) i.error.clear();
        i.shape = std::string(st.tracker.shape_name());
        i.events += count;
      });
      if (st.cfg.metrics && count > 0) st.cfg.metrics->notifications_sent(st.strategy, count);
      if (current && healing && st.down) {
        const auto down = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - st.down->since);
        logging::info("source.recovered",
                      {{"uri", st.cfg.uri}, {"down_ms", static_cast<std::int64_t>(down.count())}});
        if (st.down->counted) st.down->counted->recovered(down.count());
        st.down.reset();
      }
      if (current && st.at != phase::running) {
        st.failures = 0;
        set_phase(st, phase::running);
        for (auto& j : st.joiners) j->answer(std::nullopt, std::string(st.tracker.shape_name()));
        st.joiners.clear();
      } else if (current) {
        st.failures = 0;
      }
      read_done(self);
    });
  };
  auto snapshot = snapshot_of(st, *shared_next);
  if (events.empty()) {
    persistence::write_set ws;
    ws.snapshot_puts.push_back(std::move(snapshot));
    st.cfg.committer->submit(std::move(ws),
                             [done](const persistence::status& s) { done(s.ok() ? "" : s.message()); });
    return;
  }
  auto write = std::make_shared<actors::publish_request>();
  for (auto& ev : events) write->events.push_back(make_event(st, std::move(ev.fields)));
  write->snapshots.push_back(std::move(snapshot));
  write->idempotency_key = st.key_prefix + std::to_string(++st.writes);
  send_write(self, write, done, std::chrono::milliseconds(0), false);
}

void on_read(self_ptr self, std::uint64_t generation, const read_outcome& r) {
  auto& st = self->state;
  if (generation != st.generation || st.at == phase::failed) return;
  st.reading = false;
  st.cfg.status->update([](actors::source_info& i) { ++i.reads; });
  if (!r.result) {
    if (st.at == phase::starting) return fail_fast(self, r.error);
    // A read that fails while subscribed is retried like a subscription.
    if (reconnecting(st.at)) ++st.failures;
    ++st.generation;
    close_upstream(st);
    st.slot = std::make_shared<upstream_slot>();
    return retry_later(self, r.error);
  }
  auto next = st.tracker;
  bool event_log = r.result->mime_type == core::event_log_mime_type;
  auto out = next.apply(event_log, r.result->text);
  if (!out.error.empty()) {
    if (st.at == phase::starting) return fail_fast(self, "malformed event-log read: " + out.error);
    // Reported in-band, like an event-log server's own ERROR events.
    core::extracted_event ev;
    ev.fields = {{"type", "ERROR"}, {"message", "malformed event-log read: " + out.error}};
    out.events.push_back(std::move(ev));
    next = st.tracker;
  }
  commit_read(self, std::move(next), std::move(out.events));
}

void read_upstream(self_ptr self) {
  auto& st = self->state;
  st.reading = true;
  auto generation = st.generation;
  caf::actor_addr weak = self->address();
  on_loop(st, [self, weak, generation, slot = st.slot] {
    if (!slot->up) return;
    slot->up->read([self, weak, generation](read_outcome r) {
      auto shared = std::make_shared<read_outcome>(std::move(r));
      post_back(weak, [self, generation, shared] { on_read(self, generation, *shared); });
    });
  });
}

void restore_snapshot(source_state& st) {
  std::optional<persistence::path_state> snap;
  if (auto s = st.cfg.store->get_source_snapshot(st.cfg.tenant, st.cfg.key, &snap); !s.ok()) {
    // The first read becomes a plain baseline: changes while the node was
    // down are not reported, which the log says.
    logging::warn("source.snapshot_unreadable", {{"uri", st.cfg.uri}, {"error", s.message()}});
    return;
  }
  if (snap) st.tracker.restore(snap->shape, snap->state_json, snap->last_seq);
}

}  // namespace

source_actor::behavior_type source(source_actor::stateful_pointer<source_state> self, source_config cfg) {
  self->state.cfg = std::move(cfg);
  self->state.key_prefix = actors::writer_key_prefix("read");
  restore_snapshot(self->state);
  set_phase(self->state, phase::starting);
  subscribe_upstream(self);
  return {
      [self](join_atom, const source_join_ptr& join) {
        auto& st = self->state;
        if (st.at == phase::starting) return st.joiners.push_back(join);
        if (st.at == phase::failed)
          return join->answer(st.start_error ? *st.start_error
                                             : actors::watch_error{actors::watch_error_kind::unavailable,
                                                                   "the source failed; retry"},
                              {});
        join->answer(std::nullopt, std::string(st.tracker.shape_name()));
      },
      [self](actors::task_atom, const actors::actor_task& task) {
        if (!task.run) return;
        // Upstream data is parsed in these steps: whatever it throws ends
        // this source visibly (ERROR event, upstream closed), not silently.
        try {
          task.run();
        } catch (const std::exception& e) {
          logging::error("source.bug", {{"uri", self->state.cfg.uri}, {"error", e.what()}});
          if (self->state.at == phase::starting)
            return fail_fast(self, std::string("internal error: ") + e.what());
          if (self->state.at != phase::failed)
            fail(self, std::string("source failed: internal error: ") + e.what());
        }
      },
      [self](close_atom) {
        auto& st = self->state;
        for (auto& j : st.joiners)
          j->answer(actors::watch_error{actors::watch_error_kind::unavailable, "the source was stopped"}, {});
        st.joiners.clear();
        close_upstream(st);
        logging::debug("source.stopped", {{"uri", st.cfg.uri}});
        self->quit();
      },
  };
}

}  // namespace tidings::sources
