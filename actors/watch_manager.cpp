#include "actors/watch_manager.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "actors/watch_debounce.hpp"
#include "actors/watch_filter.hpp"
#include "core/watch_uri.hpp"
#include "logging/log.hpp"

namespace tidings::actors {
namespace {

using self_ptr = watch_manager_actor::stateful_pointer<watch_manager_state>;

// A task that, wherever it runs, continues with `fn` inside the manager.
actor_task in_manager(self_ptr self, std::function<void()> fn) {
  return continue_in(watch_manager_actor{self}, std::move(fn));
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

watch_error error_of(watch_error_kind kind, std::string message) {
  return watch_error{kind, std::move(message)};
}

struct start_job {
  persistence::watch_spec spec;
  std::optional<persistence::watch_progress> progress;  // restoring from this
  bool restoring = false;
  bool adopted = false;  // moved here from another member (restoring, but not stored here yet)
  std::function<void(watch_start_reply)> done;  // runs in the manager
  watch_entry fresh;
  watch_prepare_result prepared;
  bool replaced = false;
  bool finished = false;           // replied; later steps do nothing
  bool prepared_received = false;  // the filter answered prepare
  bool continuing = false;         // replacing a watch of the same URI from its stored position
  std::string child_died;          // a child ended after the spec was being stored
  bool resolving = false;          // waiting for the source registry's answer
  core::stream_uri target;         // the stream read: the URI's, or its source's
  std::string source_shape;        // set when the URI names an upstream source
  source_lease_ptr lease;          // held while the watch runs on that source
  std::size_t max_watches = 0;     // the tenant's limit; 0: the node's (--max-watches)
};
using job_ptr = std::shared_ptr<start_job>;

// Runs `fn` inside the manager; callable from any thread.
void post(const watch_manager_actor& manager, std::function<void()> fn) {
  caf::anon_send(manager, task_atom::value, actor_task{std::move(fn)});
}

void write(self_ptr self, persistence::write_set ws, std::function<void(std::string)> then) {
  watch_manager_actor handle = self;
  self->state.cfg.committer->submit(std::move(ws),
                                    [handle, then = std::move(then)](const persistence::status& s) {
                                      post(handle, [then, error = s.message()] { then(error); });
                                    });
}

// Answers the caller once and lets go of its callback, which may hold a
// connection: a job can outlive its answer in a pending timer message.
void reply(const job_ptr& job, watch_start_reply r) {
  auto done = std::move(job->done);
  job->done = nullptr;
  if (done) done(std::move(r));
}

// A watch's notices commit together with its progress in this node's
// store, so its notice stream stays here while the watch exists here,
// whatever the cluster's placement says (ADR 0015).
void sync_pin(watch_manager_state& st, const persistence::watch_id& id) {
  // One moving to another member writes nothing here any more.
  auto it = st.watches.find(id);
  bool want = (it != st.watches.end() && it->second.state != "moving") || st.starting.contains(id);
  stream_key key{id.tenant, core::watch_notice_stream(id.name)};
  if (want && st.pinned.insert(id).second) st.cfg.hubs->pin(key);
  if (!want && st.pinned.erase(id) > 0) st.cfg.hubs->unpin(key);
}

void forget_child_waits(watch_manager_state& st, const watch_entry& entry) {
  if (entry.filter) st.on_child_down.erase(entry.filter.address());
  if (entry.debounce) st.on_child_down.erase(entry.debounce.address());
}

// Ends both actors of an entry; it keeps its spec, listed as failed.
void mark_failed(watch_entry& entry, std::string error) {
  if (entry.filter) caf::anon_send_exit(entry.filter, caf::exit_reason::user_shutdown);
  if (entry.debounce) caf::anon_send_exit(entry.debounce, caf::exit_reason::user_shutdown);
  entry.filter = watch_filter_actor();
  entry.debounce = watch_debounce_actor();
  entry.lease.reset();
  entry.state = "failed";
  entry.error = std::move(error);
}

void abort_start(self_ptr self, const job_ptr& job, watch_error error) {
  auto& st = self->state;
  if (job->finished) return;
  job->finished = true;
  forget_child_waits(st, job->fresh);
  // A watch being replaced was already flushed and ended: keep it listed
  // (its spec is still the stored one) so it can be stopped or started again.
  if (auto old = st.watches.find(job->spec.id); old != st.watches.end() && old->second.state == "stopping")
    mark_failed(old->second, "its replacement failed to start: " + error.message);
  if (job->fresh.filter) caf::anon_send_exit(job->fresh.filter, caf::exit_reason::user_shutdown);
  if (job->fresh.debounce) caf::anon_send_exit(job->fresh.debounce, caf::exit_reason::user_shutdown);
  // The job may outlive this in a timer message; its source must not.
  job->lease.reset();
  job->fresh.lease.reset();
  st.starting.erase(job->spec.id);
  sync_pin(st, job->spec.id);
  logging::debug("watch.start_failed", {{"watch", job->spec.id.name}, {"error", error.message}});
  reply(job, watch_start_reply{std::move(error), {}, false});
}

void go_live(self_ptr self, const job_ptr& job) {
  auto& st = self->state;
  const auto& id = job->spec.id;
  if (job->finished) return;
  job->finished = true;
  forget_child_waits(st, job->fresh);
  auto& entry = st.watches[id] = job->fresh;
  job->lease.reset();  // the entry holds it now
  job->fresh.lease.reset();
  st.starting.erase(id);
  if (!job->child_died.empty()) {
    // Stored, but one of its actors ended meanwhile: listed as failed.
    mark_failed(entry, job->child_died);
  } else {
    self->send(job->fresh.filter, go_atom::value);
  }
  logging::debug("watch.started",
                 {{"watch", id.name}, {"uri", job->spec.uri}, {"shape", job->prepared.shape}});
  reply(job, watch_start_reply{std::nullopt, job->prepared.shape, job->replaced});
}

// The spec (and, unless resuming a stored one, the position) is durable
// before the filter reads a single event.
void persist_start(self_ptr self, const job_ptr& job) {
  if (job->finished) return;
  // From here the outcome is decided by the write; a child that ends
  // meanwhile makes the stored watch a failed one rather than no watch.
  for (const caf::actor_addr& child : {job->fresh.filter.address(), job->fresh.debounce.address()})
    self->state.on_child_down[child] = [job, self](const caf::error& reason) {
      job->child_died = "the watch's actor ended while starting: " + self->system().render(reason);
    };
  if (job->restoring && job->progress && !job->adopted) return go_live(self, job);
  persistence::write_set ws;
  ws.watch_deletes.push_back(job->spec.id);
  ws.watch_puts.push_back(job->spec);
  if (job->adopted && job->progress && !job->prepared.position.reset) {
    // Where the previous holder stood, every path of it (unless the filter
    // had to start over from a new baseline, stored below).
    auto carried = *job->progress;
    carried.replace_paths = true;
    ws.progress_puts.emplace_back(job->spec.id, std::move(carried));
  } else {
    persistence::watch_progress progress;
    progress.stream = job->target.stream;
    progress.cursor = job->prepared.position.cursor;
    if (job->prepared.position.changed) progress.paths = *job->prepared.position.changed;
    progress.replace_paths = job->prepared.position.reset;
    progress.shape = job->prepared.position.shape;
    ws.progress_puts.emplace_back(job->spec.id, std::move(progress));
  }
  write(self, std::move(ws), [self, job](const std::string& err) {
    if (!err.empty())
      return abort_start(self, job, error_of(watch_error_kind::unavailable, "not stored: " + err));
    go_live(self, job);
  });
}

// What a watch's debounce does with its pending lines when the watch ends.
enum class pending_lines {
  publish,  // out first, with the position they leave
  drop,     // a successor redoes them from the stored position
  abandon,  // another member's copy notices them: drop what waits too, at once
};

// Ends a watch's filter and has its debounce deal with what is pending,
// then runs `then` in the manager (at once when the debounce is gone, or if
// it ends before it could finish).
void flush_and_then(self_ptr self, watch_entry& entry, pending_lines pending, std::function<void()> then) {
  auto& st = self->state;
  if (entry.filter) caf::anon_send_exit(entry.filter, caf::exit_reason::user_shutdown);
  entry.filter = watch_filter_actor();
  if (!entry.debounce) return then();
  auto addr = entry.debounce.address();
  auto once = std::make_shared<std::function<void()>>(std::move(then));
  auto run_once = [once] {
    if (!*once) return;
    auto fn = std::move(*once);
    *once = nullptr;
    fn();
  };
  st.on_child_down[addr] = [run_once](const caf::error&) { run_once(); };
  auto done = in_manager(self, [self, addr, run_once] {
    self->state.on_child_down.erase(addr);
    run_once();
  });
  if (pending == pending_lines::abandon) return self->send(entry.debounce, abandon_atom::value, done);
  self->send(entry.debounce, flush_atom::value, pending == pending_lines::publish, done);
}

void on_prepared(self_ptr self, const job_ptr& job, watch_prepare_result result);

// Asks the job's new filter to prepare; its answer continues in on_prepared.
void send_prepare(self_ptr self, const job_ptr& job, std::optional<persistence::watch_progress> progress,
                  bool dry_run) {
  auto req = std::make_shared<watch_prepare_request>();
  req->progress = std::move(progress);
  req->dry_run = dry_run;
  watch_manager_actor handle = self;
  req->reply = [handle, self, job](watch_prepare_result r) {
    auto shared = std::make_shared<watch_prepare_result>(std::move(r));
    post(handle, [self, job, shared] { on_prepared(self, job, std::move(*shared)); });
  };
  self->send(job->fresh.filter, prepare_atom::value, watch_prepare_request_ptr(std::move(req)));
}

// Prepares the new filter again, from the replaced watch's stored position
// (read now that the old watch has nothing in flight).
void continue_from_stored(self_ptr self, const job_ptr& job) {
  if (job->finished) return;
  auto& st = self->state;
  std::optional<persistence::watch_progress> progress;
  if (auto s = st.cfg.store->get_watch_progress(job->spec.id, job->target.stream, &progress); !s.ok())
    return abort_start(self, job,
                       error_of(watch_error_kind::unavailable, "reading the position: " + s.message()));
  if (!progress) return persist_start(self, job);  // nothing stored: the fresh baseline stands
  job->continuing = true;
  job->progress = progress;
  send_prepare(self, job, std::move(progress), false);  // the dry run was done in the first prepare
}

void on_prepared(self_ptr self, const job_ptr& job, watch_prepare_result result) {
  auto& st = self->state;
  job->prepared_received = true;
  if (job->finished) return;
  if (result.error) return abort_start(self, job, std::move(*result.error));
  job->prepared = std::move(result);
  if (job->continuing) return persist_start(self, job);
  auto old = st.watches.find(job->spec.id);
  job->replaced = old != st.watches.end();
  if (!job->replaced) return persist_start(self, job);
  old->second.state = "stopping";
  if (old->second.spec.uri != job->spec.uri || job->restoring) {
    // Another source: the old watch's pending lines go out first, and the
    // new one starts from the baseline it just took.
    return flush_and_then(self, old->second, pending_lines::publish,
                          [self, job] { persist_start(self, job); });
  }
  // Same source, new filter: the new watch carries on from the old one's
  // stored position, so every change after its last notice is seen by the
  // new filter, once. The old one's pending lines are dropped, not sent.
  flush_and_then(self, old->second, pending_lines::drop, [self, job] { continue_from_stored(self, job); });
}

void spawn_pipeline(self_ptr self, const job_ptr& job);
void resolve_source(self_ptr self, const job_ptr& job);

void begin_start(self_ptr self, const job_ptr& job) {
  auto& st = self->state;
  const auto& spec = job->spec;
  const auto& id = spec.id;
  std::string error;
  std::optional<core::stream_uri> uri;
  bool from_source = !core::is_stream_uri(spec.uri) && core::has_uri_scheme(spec.uri);
  if (!from_source) uri = core::parse_stream_uri(spec.uri, &error);
  if (!core::valid_watch_name(id.name))
    return reply(job,
                 {error_of(watch_error_kind::bad_request, "bad watch name '" + id.name + "'"), {}, false});
  if (!from_source && !uri) return reply(job, {error_of(watch_error_kind::bad_request, error), {}, false});
  if (st.shutting_down)
    return reply(job, {error_of(watch_error_kind::unavailable, "the node is stopping"), {}, false});
  auto existing = st.watches.find(id);
  if (st.starting.contains(id) || (existing != st.watches.end() && existing->second.state == "stopping"))
    return reply(job, {error_of(watch_error_kind::busy,
                                "the watch " + id.name + " is being started or stopped right now; retry"),
                       {},
                       false});
  std::size_t held = 0;
  for (const auto& [other, entry] : st.watches)
    if (other.tenant == id.tenant && other.name != id.name) ++held;
  for (const auto& other : st.starting)
    if (other.tenant == id.tenant && other.name != id.name) ++held;
  auto max = job->max_watches ? job->max_watches : st.cfg.limits.max_watches_per_tenant;
  if (held >= max)
    return reply(job, {error_of(watch_error_kind::over_limit, "tenant " + id.tenant + " already holds " +
                                                                  std::to_string(held) +
                                                                  " watches, the most it may (watch limit " +
                                                                  std::to_string(max) + "); stop one first"),
                       {},
                       false});
  st.starting.insert(id);
  if (from_source) return resolve_source(self, job);
  job->target = *uri;
  spawn_pipeline(self, job);
}

// The URI names an upstream resource: its source's first read happens now,
// so an upstream that refuses the URI fails the start with its own message.
void resolve_source(self_ptr self, const job_ptr& job) {
  auto& st = self->state;
  auto unavailable = [&](watch_error_kind kind, std::string message) {
    st.starting.erase(job->spec.id);
    reply(job, {error_of(kind, std::move(message)), {}, false});
  };
  if (!st.cfg.sources)
    return unavailable(
        watch_error_kind::bad_request,
        "no upstream serves " + job->spec.uri + " (this node has no upstreams; it watches stream:// URIs)");
  auto req = std::make_shared<source_subscribe_request>();
  req->tenant = job->spec.id.tenant;
  req->uri = job->spec.uri;
  watch_manager_actor handle = self;
  job->resolving = true;
  req->reply = [handle, self, job](source_subscribe_reply r) {
    auto shared = std::make_shared<source_subscribe_reply>(std::move(r));
    post(handle, [self, job, shared] {
      auto& st = self->state;
      if (!job->resolving) return;  // timed out; the lease goes with `shared`
      job->resolving = false;
      if (shared->error || st.shutting_down) {
        st.starting.erase(job->spec.id);
        auto error =
            shared->error ? *shared->error : error_of(watch_error_kind::unavailable, "the node is stopping");
        return reply(job, {std::move(error), {}, false});
      }
      job->target = core::stream_uri{shared->stream, ""};
      job->source_shape = shared->shape.empty() ? "state" : shared->shape;
      job->lease = shared->lease;
      if (job->restoring && !job->progress) {
        std::optional<persistence::watch_progress> progress;
        if (auto s = st.cfg.store->get_watch_progress(job->spec.id, job->target.stream, &progress); s.ok())
          job->progress = std::move(progress);
        else
          logging::warn("watch.progress_unreadable", {{"watch", job->spec.id.name}, {"error", s.message()}});
      }
      spawn_pipeline(self, job);
    });
  };
  self->send(st.cfg.sources, source_sub_atom::value, source_subscribe_request_ptr(std::move(req)));
  // Every upstream call is bounded, but a lost answer must not hold the
  // name (and the caller) forever either.
  constexpr std::chrono::seconds deadline{90};
  std::weak_ptr<start_job> weak = job;
  self->delayed_send(self, deadline, task_atom::value, actor_task{[self, weak] {
                       auto job = weak.lock();
                       if (!job || !job->resolving) return;
                       job->resolving = false;
                       self->state.starting.erase(job->spec.id);
                       reply(job, {error_of(watch_error_kind::unavailable,
                                            "the upstream did not answer the subscription within 90 s"),
                                   {},
                                   false});
                     }});
}

void spawn_pipeline(self_ptr self, const job_ptr& job) {
  auto& st = self->state;
  const auto& spec = job->spec;
  const auto& id = spec.id;
  const auto* uri = &job->target;
  auto stats = std::make_shared<watch_stats>();
  stats->shape = -1;
  watch_debounce_config dcfg;
  dcfg.id = id;
  dcfg.uri = spec.uri;
  dcfg.stream = uri->stream;
  dcfg.policy.quiet = std::chrono::milliseconds(spec.debounce_ms);
  dcfg.policy.max_wait = std::chrono::milliseconds(spec.max_wait_ms);
  sync_pin(st, id);
  // The notice stream's hub now (in a cluster its claim starts with the
  // watch), and whichever hub holds it at each send.
  stream_key notice_key{id.tenant, core::watch_notice_stream(id.name)};
  st.cfg.hubs->get(notice_key);
  dcfg.notices = [hubs = st.cfg.hubs, notice_key] { return hubs->get(notice_key); };
  dcfg.save = [committer = st.cfg.committer](persistence::write_set ws,
                                             persistence::group_committer::callback done) {
    committer->submit(std::move(ws), std::move(done));
  };
  dcfg.stats = stats;
  auto debounce = self->system().spawn(watch_debounce, std::move(dcfg));

  watch_filter_config fcfg;
  fcfg.spec = spec;
  fcfg.uri = *uri;
  fcfg.source_shape = job->source_shape;
  fcfg.limits = st.cfg.limits;
  fcfg.store = st.cfg.store;
  fcfg.hubs = st.cfg.hubs;
  fcfg.debounce = debounce;
  fcfg.stats = stats;
  auto filter = self->system().spawn<caf::detached>(watch_filter, std::move(fcfg));

  self->monitor(filter);
  self->monitor(debounce);
  st.filters.insert(filter.address());
  st.debounces.insert(debounce.address());
  job->fresh = watch_entry{spec, filter, debounce, stats, "running", {}, job->lease, uri->stream};
  for (const caf::actor_addr& child : {filter.address(), debounce.address()})
    st.on_child_down[child] = [self, job](const caf::error& reason) {
      abort_start(self, job,
                  error_of(watch_error_kind::unavailable,
                           "the watch's actor ended while starting: " + self->system().render(reason)));
    };

  // A restored spec was validated when it was first started; a dry run on
  // today's data under today's budget must not delete a working watch.
  send_prepare(self, job, job->progress, !job->restoring);
  // A filter stuck in a C function past its budget must not hold the name
  // (and the caller) forever.
  auto deadline = std::chrono::seconds(30) + 2 * st.cfg.limits.filter.budget;
  std::weak_ptr<start_job> weak = job;
  self->delayed_send(
      self, deadline, task_atom::value, actor_task{[self, weak, deadline] {
        auto job = weak.lock();
        if (!job || job->finished || job->prepared_received) return;
        abort_start(self, job,
                    error_of(watch_error_kind::unavailable,
                             "the watch was not ready within " + std::to_string(deadline.count() / 1000) +
                                 " s (its filter or baseline read did not finish)"));
      }});
}

void on_stop(self_ptr self, const watch_stop_request_ptr& req) {
  auto& st = self->state;
  const auto& id = req->id;
  auto it = st.watches.find(id);
  if (st.starting.contains(id) || (it != st.watches.end() && it->second.state == "stopping"))
    return req->reply(
        error_of(watch_error_kind::busy, "the watch " + id.name + " is being started or stopped"), false);
  if (it == st.watches.end()) return req->reply(std::nullopt, false);
  auto forget = [self, req] {
    persistence::write_set ws;
    ws.watch_deletes.push_back(req->id);
    write(self, std::move(ws), [self, req](const std::string& err) {
      self->state.watches.erase(req->id);
      sync_pin(self->state, req->id);
      if (!err.empty())
        return req->reply(
            error_of(watch_error_kind::unavailable, "stopped, but not removed from storage: " + err), true);
      logging::debug("watch.stopped", {{"watch", req->id.name}});
      req->reply(std::nullopt, true);
    });
  };
  it->second.state = "stopping";
  flush_and_then(self, it->second, req->duplicate ? pending_lines::abandon : pending_lines::publish, forget);
}

// The stream whose position a watch keeps: the one it reads, or for a
// watch that never started here, its stream:// URI's (none for a source).
std::string progress_stream(const watch_entry& entry) {
  if (!entry.stream.empty()) return entry.stream;
  if (!core::is_stream_uri(entry.spec.uri)) return {};
  std::string error;
  auto uri = core::parse_stream_uri(entry.spec.uri, &error);
  return uri ? uri->stream : std::string{};
}

void on_release(self_ptr self, const watch_release_request_ptr& req) {
  auto& st = self->state;
  const auto& id = req->id;
  auto it = st.watches.find(id);
  if (st.starting.contains(id) || (it != st.watches.end() && it->second.state == "stopping"))
    return req->reply(
        error_of(watch_error_kind::busy, "the watch " + id.name + " is being started or stopped"), {}, {});
  if (it == st.watches.end())
    return req->reply(error_of(watch_error_kind::bad_request, "no watch " + id.name), {}, {});
  it->second.state = "stopping";
  // Its pending notices go out here, with the position they leave; that
  // position is where the next holder resumes. The spec stays stored (and
  // listed, "moving") until the next holder runs it and a stop forgets it
  // here: a move that fails leaves it where the cluster can find it.
  flush_and_then(self, it->second, pending_lines::publish, [self, req] {
    auto& st = self->state;
    auto it = st.watches.find(req->id);
    if (it == st.watches.end()) return req->reply(error_of(watch_error_kind::bad_request, "gone"), {}, {});
    std::optional<persistence::watch_progress> progress;
    if (auto stream = progress_stream(it->second); !stream.empty())
      if (auto s = st.cfg.store->get_watch_progress(req->id, stream, &progress); !s.ok())
        logging::warn("watch.progress_unreadable", {{"watch", req->id.name}, {"error", s.message()}});
    auto& entry = it->second;
    entry.filter = watch_filter_actor();
    entry.debounce = watch_debounce_actor();
    entry.lease.reset();
    entry.state = "moving";
    sync_pin(st, req->id);  // its notice stream may move now
    logging::info("watch.released", {{"watch", req->id.name}, {"resumable", progress.has_value()}});
    req->reply(std::nullopt, entry.spec, progress);
  });
}

std::string shape_name(const watch_stats& stats) {
  auto shape = stats.shape.load(std::memory_order_relaxed);
  if (shape < 0) return "empty";
  return std::string(core::read_kind_name(static_cast<core::read_kind>(shape)));
}

void on_list(self_ptr self, const watch_list_request_ptr& req) {
  std::vector<watch_info> out;
  for (const auto& [id, entry] : self->state.watches) {
    if (id.tenant != req->tenant) continue;
    watch_info info;
    info.name = id.name;
    info.uri = entry.spec.uri;
    info.shape = entry.stats ? shape_name(*entry.stats) : "unknown";
    if (entry.stats) {
      info.events = entry.stats->events.load(std::memory_order_relaxed);
      info.notices = entry.stats->notices.load(std::memory_order_relaxed);
      info.filter_errors = entry.stats->filter_errors.load(std::memory_order_relaxed);
    }
    info.state = entry.state;
    info.restore_failed = entry.state == "restore_failed";
    info.error = entry.error;
    if (entry.stats && info.error.empty())
      if (auto wait = entry.stats->notices_wait.load()) info.error = "notices wait to be stored: " + *wait;
    out.push_back(std::move(info));
  }
  req->reply(std::move(out));
}

// --- restore ---------------------------------------------------------------------

struct restore_summary {
  std::size_t pending = 0;
  // per tenant: restored names; dropped and failed as name, reason
  std::map<std::string, std::vector<std::string>> restored;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> dropped, failed;
  std::set<std::string> tenants;
};
using summary_ptr = std::shared_ptr<restore_summary>;

void publish_restore_notices(self_ptr self, const summary_ptr& summary) {
  for (const auto& tenant : summary->tenants) {
    // Starts finish in any order; the notice lists names sorted.
    auto& restored = summary->restored[tenant];
    auto& dropped = summary->dropped[tenant];
    auto& failed = summary->failed[tenant];
    std::sort(restored.begin(), restored.end());
    std::sort(dropped.begin(), dropped.end());
    std::sort(failed.begin(), failed.end());
    std::string text =
        "restored " + std::to_string(restored.size()) + " watch" + (restored.size() == 1 ? "" : "es");
    for (std::size_t i = 0; i < restored.size(); ++i) text += (i ? ", " : ": ") + restored[i];
    auto as_json = [](const std::vector<std::pair<std::string, std::string>>& list) {
      auto arr = nlohmann::json::array();
      for (const auto& [name, why] : list) arr.push_back({{"name", name}, {"error", why}});
      return arr;
    };
    for (const auto& [name, why] : dropped)
      text.append("; dropped ").append(name).append(" (").append(why).append(")");
    for (const auto& [name, why] : failed)
      text.append("; could not restart ").append(name).append(" (").append(why).append("), kept");
    nlohmann::json data = {
        {"restored", restored}, {"dropped", as_json(dropped)}, {"failed", as_json(failed)}, {"text", text}};
    core::event ev;
    ev.path = "/restore";
    ev.type = "RESTORE";
    ev.data_json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto req = std::make_shared<publish_request>();
    req->events.push_back(std::move(ev));
    req->reply = [tenant, text](const publish_result& r) {
      if (actors::failed(r.outcome))
        return logging::error("watch.restore_notice_failed", {{"tenant", tenant}, {"error", r.error}});
      logging::info("watch.notice", {{"stream", watch_events_stream}, {"type", "RESTORE"}, {"text", text}});
    };
    self->send(self->state.cfg.hubs->get({tenant, std::string(watch_events_stream)}), publish_atom::value,
               publish_request_ptr(std::move(req)));
    logging::debug("watch.restored", {{"tenant", tenant},
                                      {"restored", static_cast<std::uint64_t>(restored.size())},
                                      {"dropped", static_cast<std::uint64_t>(dropped.size())},
                                      {"failed", static_cast<std::uint64_t>(failed.size())}});
  }
}

void drop_spec(self_ptr self, const persistence::watch_id& id) {
  persistence::write_set ws;
  ws.watch_deletes.push_back(id);
  write(self, std::move(ws), [name = id.name](const std::string& err) {
    if (!err.empty()) logging::error("watch.drop_failed", {{"watch", name}, {"error", err}});
  });
}

// A start that resumes the stored spec from its stored position.
job_ptr restore_job(self_ptr self, persistence::watch_spec spec) {
  auto job = std::make_shared<start_job>();
  job->restoring = true;
  std::string error;
  if (auto uri = core::is_stream_uri(spec.uri) ? core::parse_stream_uri(spec.uri, &error) : std::nullopt) {
    std::optional<persistence::watch_progress> progress;
    if (auto s = self->state.cfg.store->get_watch_progress(spec.id, uri->stream, &progress); s.ok())
      job->progress = std::move(progress);
    else
      logging::warn("watch.progress_unreadable", {{"watch", spec.id.name}, {"error", s.message()}});
  }
  job->spec = std::move(spec);
  return job;
}

constexpr std::chrono::seconds max_restore_backoff{60};

// A spec whose restore failed for a reason that may pass (storage, a cap on
// unknown streams) is listed as restore_failed and tried again after a
// growing backoff, until it starts, is stopped or is replaced.
void keep_restore_failed(self_ptr self, const persistence::watch_spec& spec, const std::string& error,
                         std::chrono::seconds backoff) {
  self->state.watches[spec.id] = watch_entry{spec, {}, {}, {}, "restore_failed", error, {}, {}};
  logging::warn("watch.restore_failed", {{"watch", spec.id.name},
                                         {"error", error},
                                         {"retry_in_s", static_cast<std::int64_t>(backoff.count())}});
  self->delayed_send(
      self, backoff, task_atom::value, actor_task{[self, spec, backoff] {
        auto it = self->state.watches.find(spec.id);
        if (it == self->state.watches.end() || it->second.state != "restore_failed" ||
            it->second.spec.created_ms != spec.created_ms)
          return;  // stopped or replaced meanwhile
        auto job = restore_job(self, spec);
        job->done = [self, spec, backoff](const watch_start_reply& r) {
          if (!r.error) {
            logging::debug("watch.restored", {{"watch", spec.id.name}, {"ok", true}});
          } else if (r.error->kind == watch_error_kind::unavailable ||
                     r.error->kind == watch_error_kind::busy || r.error->kind == watch_error_kind::upstream) {
            keep_restore_failed(self, spec, r.error->message, std::min(backoff * 2, max_restore_backoff));
          } else {
            logging::warn("watch.dropped", {{"watch", spec.id.name}, {"error", r.error->message}});
            self->state.watches.erase(spec.id);
            sync_pin(self->state, spec.id);
            drop_spec(self, spec.id);
          }
        };
        begin_start(self, job);
      }});
}

void on_restore(self_ptr self, const watch_restore_plan& plan) {
  auto& st = self->state;
  std::vector<persistence::watch_spec> specs;
  if (auto s = st.cfg.store->load_watches(&specs); !s.ok()) {
    // Nothing will be restored: the list is as complete as it gets.
    st.restored = true;
    logging::error("watch.restore_failed", {{"error", s.message()}});
    return;
  }
  std::erase_if(specs, [&](const persistence::watch_spec& spec) {
    auto elsewhere = plan.running_elsewhere.find(spec.id);
    if (elsewhere == plan.running_elsewhere.end()) return false;
    logging::info("watch.restore_skipped", {{"watch", spec.id.name}, {"runs_on", elsewhere->second}});
    drop_spec(self, spec.id);
    return true;
  });
  if (specs.empty()) {
    st.restored = true;
    return;
  }
  auto summary = std::make_shared<restore_summary>();
  summary->pending = specs.size();
  for (auto& spec : specs) {
    summary->tenants.insert(spec.id.tenant);
    auto job = restore_job(self, std::move(spec));
    job->done = [self, summary, spec = job->spec](const watch_start_reply& r) {
      const auto& id = spec.id;
      if (!r.error) {
        summary->restored[id.tenant].push_back(id.name);
      } else if (r.error->kind == watch_error_kind::unavailable ||
                 r.error->kind == watch_error_kind::upstream) {
        summary->failed[id.tenant].emplace_back(id.name, r.error->message);
        keep_restore_failed(self, spec, r.error->message, std::chrono::seconds(1));
      } else {
        summary->dropped[id.tenant].emplace_back(id.name, r.error->message);
        drop_spec(self, id);
      }
      logging::debug("watch.restored", {{"watch", id.name}, {"ok", !r.error}});
      if (--summary->pending == 0) {
        self->state.restored = true;
        publish_restore_notices(self, summary);
      }
    };
    begin_start(self, job);
  }
}

// --- failures and shutdown ---------------------------------------------------------

void on_down(self_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  st.filters.erase(msg.source);
  st.debounces.erase(msg.source);
  if (st.shutting_down) {
    if (st.debounces.empty()) self->quit();
    return;
  }
  if (auto waiting = st.on_child_down.find(msg.source); waiting != st.on_child_down.end()) {
    auto fn = std::move(waiting->second);
    st.on_child_down.erase(waiting);
    fn(msg.reason);
  }
  for (auto& [id, entry] : st.watches) {
    bool filter_died = entry.filter && entry.filter.address() == msg.source;
    bool debounce_died = entry.debounce && entry.debounce.address() == msg.source;
    if (!filter_died && !debounce_died) continue;
    if (entry.state != "running") {
      // Stopping: the flush continuation above has taken care of it.
      if (filter_died) entry.filter = watch_filter_actor();
      if (debounce_died) entry.debounce = watch_debounce_actor();
      continue;
    }
    // One half of a watch is no watch: end the other, keep the spec listed.
    mark_failed(entry, "the watch's actor ended: " + self->system().render(msg.reason));
    logging::error("watch.failed", {{"watch", id.name}, {"error", entry.error}});
  }
}

void on_shutdown(self_ptr self) {
  auto& st = self->state;
  st.shutting_down = true;
  for (const auto& child : st.filters) caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
  for (const auto& child : st.debounces) caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
  if (st.debounces.empty()) self->quit();
}

}  // namespace

watch_manager_actor::behavior_type watch_manager(
    watch_manager_actor::stateful_pointer<watch_manager_state> self, watch_manager_config cfg) {
  self->state.cfg = std::move(cfg);
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  return {
      [self](start_atom, const watch_start_request_ptr& req) {
        auto job = std::make_shared<start_job>();
        job->spec = req->spec;
        if (job->spec.created_ms == 0) job->spec.created_ms = now_ms();
        job->done = req->reply;
        job->max_watches = req->max_watches;
        if (req->adopt) {
          // Adopted twice (a drain's hand-over and the copy of the member
          // that left): the one running stays as it is.
          if (auto it = self->state.watches.find(req->spec.id);
              it != self->state.watches.end() && it->second.state == "running")
            return req->reply(watch_start_reply{
                std::nullopt, it->second.stats ? shape_name(*it->second.stats) : std::string{}, false});
          job->restoring = true;
          job->adopted = true;
          job->progress = req->progress;
          job->max_watches = SIZE_MAX;  // admitted where it was first started
        }
        begin_start(self, job);
      },
      [self](list_atom, const watch_list_request_ptr& req) { on_list(self, req); },
      [self](stop_atom, const watch_stop_request_ptr& req) { on_stop(self, req); },
      [self](restore_atom, const watch_restore_plan_ptr& plan) {
        on_restore(self, plan ? *plan : watch_restore_plan{});
      },
      [self](specs_atom, const watch_specs_request_ptr& req) {
        std::vector<watch_spec_state> out;
        for (const auto& [id, entry] : self->state.watches)
          if (entry.state != "stopping") out.push_back({entry.spec, entry.state});
        req->reply(std::move(out), self->state.restored);
      },
      [self](release_atom, const watch_release_request_ptr& req) { on_release(self, req); },
      [self](task_atom, const actor_task& task) {
        if (task.run) task.run();
      },
      [self](shutdown_atom) { on_shutdown(self); },
  };
}

}  // namespace tidings::actors
