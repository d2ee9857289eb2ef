#include "actors/watch_debounce.hpp"

#include "actors/write_keys.hpp"
#include "core/json_text.hpp"
#include "logging/log.hpp"

namespace tidings::actors {
namespace {

using self_ptr = watch_debounce_actor::stateful_pointer<watch_debounce_state>;
using clock = core::notice_batcher::clock;

// The latest position as a write: its cursor and the paths changed since
// the last write. Taking it clears what was unsaved.
persistence::watch_progress take_progress(watch_debounce_state& st) {
  persistence::watch_progress p;
  p.stream = st.cfg.stream;
  p.cursor = st.latest->cursor;
  p.shape = st.latest->shape;
  p.replace_paths = st.unsaved_reset;
  for (auto& [path, state] : st.unsaved_paths) p.paths.push_back(std::move(state));
  st.unsaved_paths.clear();
  st.unsaved_reset = false;
  st.saved = p.cursor;
  return p;
}

void remember(watch_debounce_state& st, const watch_position& pos) {
  if (pos.reset) {
    st.unsaved_paths.clear();
    st.unsaved_reset = true;
  }
  if (pos.changed)
    for (const auto& state : *pos.changed) st.unsaved_paths[state.path] = state;
  st.latest = pos;
}

void finish_if_flushed(self_ptr self) {
  auto& st = self->state;
  if (!st.on_flushed || !st.outbox.queue.empty() || st.save_in_flight) return;
  auto task = std::move(*st.on_flushed);
  st.on_flushed.reset();
  if (task.run) task.run();
  if (!st.fail.empty()) return self->quit(caf::make_error(caf::sec::runtime_error, st.fail));
  self->quit();
}

void save_position(self_ptr self);

// Writes the latest position when nothing else will carry it.
void maybe_save(self_ptr self) {
  auto& st = self->state;
  if ((st.on_flushed && !st.save_on_flush) || !st.latest || st.latest->cursor == st.saved) return;
  if (!st.outbox.queue.empty() || st.save_in_flight || st.batcher.pending()) return;
  save_position(self);
}

void save_position(self_ptr self) {
  auto& st = self->state;
  if (!st.latest || st.save_in_flight) return;
  persistence::write_set ws;
  ws.progress_puts.emplace_back(st.cfg.id, take_progress(st));
  st.save_in_flight = true;
  watch_debounce_actor handle = self;
  st.cfg.save(std::move(ws), [handle](const persistence::status& s) {
    caf::anon_send(handle, saved_atom::value, s.message());
  });
}

constexpr auto first_pause = std::chrono::milliseconds(100);
constexpr auto longest_pause = std::chrono::milliseconds(2000);
constexpr auto silence = std::chrono::seconds(30);
// How long a stop or move still tries a notice that may be stored: past
// the replication timeout, so the stream's answer is known by then.
constexpr auto stop_grace = std::chrono::seconds(10);

// During a stop's grace, the front is dropped when the grace ends unless
// an answer settled it first (on_resend).
void arm_give_up(self_ptr self) {
  auto& box = self->state.outbox;
  if (!box.give_up_at || box.queue.empty()) return;
  auto left = std::max<caf::actor_clock::duration_type>(*box.give_up_at - self->clock().now(), {});
  self->delayed_send(self, left, resend_atom::value, box.queue.front().id);
}

// The front of the outbox goes to the hub, unless it is there already.
void send_front(self_ptr self) {
  auto& st = self->state;
  auto& box = st.outbox;
  if (box.sent || box.queue.empty()) return;
  box.sent = true;
  auto& front = box.queue.front();
  front.sent_at = self->clock().now();
  // A hub that ends holding the request never answers: silence counts as
  // "may be stored", and the notice goes again with its key.
  self->delayed_send(self, silence, resend_atom::value, front.id);
  arm_give_up(self);
  auto req = std::make_shared<publish_request>(front.notice);
  watch_debounce_actor handle = self;
  req->reply = [handle, id = front.id, name = st.cfg.id.name, count = front.lines, covers = front.covers,
                stats = st.cfg.stats, stored = front.stored](const publish_result& r) {
    // Refused before it was written, or not known to be: the same notice
    // with the same key goes again. A full disk ends the watch (ADR 0023).
    const bool again = r.outcome == publish_outcome::unavailable || r.outcome == publish_outcome::uncertain;
    std::string error;
    if (actors::failed(r.outcome)) {
      error = r.error.empty() ? "unavailable" : r.error;
    } else if (!stored->exchange(true)) {
      // Counted here, before the hub delivers the event, so whoever reads
      // the notice sees the count include it; logged once it is durable, so
      // a reader of the log can fetch it. Once: a replayed key answers too.
      stats->notices.fetch_add(1, std::memory_order_relaxed);
      if (!r.cursors.empty())
        logging::info("watch.notice", {{"watch", name},
                                       {"lines", static_cast<std::uint64_t>(count)},
                                       {"cursor", core::format_cursor(r.cursors.front())},
                                       {"covers", covers}});
    }
    caf::anon_send(handle, published_atom::value, id, again, r.outcome == publish_outcome::uncertain, error);
  };
  self->send(st.cfg.notices(), publish_atom::value, publish_request_ptr(std::move(req)));
}

void publish(self_ptr self, std::vector<std::string> lines, bool with_progress) {
  auto& st = self->state;
  std::string text;
  for (const auto& line : lines) {
    if (!text.empty()) text += '\n';
    text += line;
  }
  nlohmann::json data = {{"watch", st.cfg.id.name}, {"uri", st.cfg.uri}, {"lines", lines}, {"text", text}};
  if (st.latest) data["cursor"] = core::format_cursor(st.latest->cursor);
  core::event ev;
  ev.path = "/notice";
  ev.type = "NOTICE";
  ev.data_json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  notice_outbox::entry e;
  e.id = st.outbox.next_id++;
  e.notice.events.push_back(std::move(ev));
  e.notice.idempotency_key = st.outbox.key_prefix + std::to_string(e.id);
  if (with_progress && st.latest) e.notice.progress.emplace_back(st.cfg.id, take_progress(st));
  e.lines = lines.size();
  e.covers = st.latest ? core::format_cursor(st.latest->cursor) : std::string();
  st.outbox.queue.push_back(std::move(e));
  send_front(self);
}

// Drops what waits in the outbox on a stop or move: none of it is stored,
// nor the position it carried, and no later position may be stored past it.
void drop_waiting(self_ptr self, const std::string& error) {
  auto& st = self->state;
  logging::warn("watch.notices_dropped", {{"watch", st.cfg.id.name},
                                          {"notices", static_cast<std::uint64_t>(st.outbox.queue.size())},
                                          {"error", error}});
  st.outbox.queue.clear();
  st.save_on_flush = false;
  st.cfg.stats->notices_wait.store(nullptr);
  finish_if_flushed(self);
}

void flush_when_due(self_ptr self);

void on_published(self_ptr self, std::uint64_t id, bool again, bool maybe_stored, const std::string& error) {
  auto& st = self->state;
  auto& box = st.outbox;
  if (box.queue.empty() || box.queue.front().id != id || !box.sent) return;
  box.sent = false;
  if (error.empty()) {
    if (box.pause.count() > 0) logging::info("watch.notices_flow", {{"watch", st.cfg.id.name}});
    box.queue.pop_front();
    box.pause = {};
    st.cfg.stats->notices_wait.store(nullptr);
    send_front(self);
    // Lines held back while it was refused (flush_due) go out now, or at
    // their deadline.
    if (!st.on_flushed && st.batcher.pending()) flush_when_due(self);
    maybe_save(self);
    return finish_if_flushed(self);
  }
  if (!again) {
    // Its lines are lost unless no later position is ever stored: end the
    // watch (the manager lists it as failed); a restart or a new start
    // resumes from the last stored position and redoes them.
    logging::error("watch.notice_failed", {{"watch", st.cfg.id.name}, {"error", error}});
    return self->quit(caf::make_error(caf::sec::runtime_error, "a notice could not be stored: " + error));
  }
  auto& front = box.queue.front();
  front.maybe_stored = front.maybe_stored || maybe_stored;
  if (box.give_up_at && (!front.maybe_stored || self->clock().now() >= *box.give_up_at))
    return drop_waiting(self, error);
  if (box.pause.count() == 0)
    logging::warn("watch.notices_wait", {{"watch", st.cfg.id.name}, {"error", error}});
  st.cfg.stats->notices_wait.store(std::make_shared<const std::string>(error));
  box.pause = box.pause.count() == 0 ? first_pause : std::min(box.pause * 2, longest_pause);
  self->delayed_send(self, box.pause, resend_atom::value, id);
}

// A pause ended, a try went unanswered too long, or a stop's grace ended.
void on_resend(self_ptr self, std::uint64_t id) {
  auto& box = self->state.outbox;
  if (box.queue.empty() || box.queue.front().id != id) return;
  auto& front = box.queue.front();
  // A stop waits no longer than its grace, even on a hub that does not
  // answer (one holding the try behind a write its followers have not
  // confirmed): what waits is dropped; a try the hub still holds may yet
  // be stored, with the position it carries.
  if (box.give_up_at && self->clock().now() >= *box.give_up_at)
    return drop_waiting(self, box.sent ? "the stream did not answer before the stop's grace ended"
                                       : "the stream took no writes before the stop's grace ended");
  if (box.sent) {
    if (self->clock().now() - front.sent_at < silence) return;  // an earlier try's timer
    logging::warn("watch.notice_unanswered", {{"watch", self->state.cfg.id.name}});
    box.sent = false;
    front.maybe_stored = true;
  }
  send_front(self);
}

void arm_timer(self_ptr self) {
  auto& st = self->state;
  auto deadline = st.batcher.deadline();
  if (!deadline || st.timer_armed) return;
  st.timer_armed = true;
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - clock::now());
  self->delayed_send(self, std::max(wait, std::chrono::milliseconds(0)), tick_atom::value,
                     ++st.timer_generation);
}

// While the outbox's front is refused (its stream takes no writes for
// now), later lines stay in the batcher, which dedupes them and caps a
// notice at max_lines: the outbox then holds one waiting notice, not one
// per burst, however long the refusal lasts. on_published flushes them.
bool front_refused(const watch_debounce_state& st) {
  return !st.outbox.queue.empty() && st.outbox.pause.count() > 0;
}

void flush_due(self_ptr self) {
  auto& st = self->state;
  if (front_refused(st)) return;
  if (auto lines = st.batcher.take_due(clock::now())) {
    publish(self, std::move(*lines), true);
  } else {
    arm_timer(self);  // the deadline moved on
  }
}

// Pending lines go out now when they are due, else at their deadline.
void flush_when_due(self_ptr self) {
  auto deadline = self->state.batcher.deadline();
  if (deadline && *deadline <= clock::now()) return flush_due(self);
  arm_timer(self);
}

void on_lines(self_ptr self, const watch_output_ptr& out) {
  auto& st = self->state;
  if (st.on_flushed) return;  // stopping: the watch no longer produces notices
  remember(st, out->position);
  auto now = clock::now();
  for (const auto& [key, line] : out->lines) st.batcher.add(key, line, now);
  if (!out->fail.empty()) {
    // The last notice, with the position after the failure, then the end.
    st.fail = out->fail;
    auto lines = st.batcher.take_all();
    if (!lines.empty()) {
      publish(self, std::move(lines), true);
    } else if (st.outbox.queue.empty() && !st.save_in_flight) {
      // The filter dropped the failure's line: the position after it is
      // stored anyway, or a restart would fail the watch on it again.
      save_position(self);
    } else {
      // The same, once the notices before it are stored (or the save in
      // flight is done): a position stored ahead of them would skip their
      // lines, or be overwritten by theirs.
      st.save_on_flush = true;
    }
    st.on_flushed = actor_task{};
    return finish_if_flushed(self);
  }
  if (st.batcher.pending()) return flush_when_due(self);
  maybe_save(self);
}

}  // namespace

watch_debounce_actor::behavior_type watch_debounce(
    watch_debounce_actor::stateful_pointer<watch_debounce_state> self, watch_debounce_config cfg) {
  auto& st = self->state;
  st.batcher = core::notice_batcher(cfg.policy);
  st.cfg = std::move(cfg);
  st.outbox.key_prefix = writer_key_prefix("notice");
  return {
      [self](lines_atom, const watch_output_ptr& out) { on_lines(self, out); },
      [self](tick_atom, std::uint64_t generation) {
        auto& st = self->state;
        if (generation != st.timer_generation || st.on_flushed) return;
        st.timer_armed = false;
        flush_due(self);
      },
      [self](published_atom, std::uint64_t id, bool again, bool maybe_stored, const std::string& error) {
        on_published(self, id, again, maybe_stored, error);
      },
      [self](resend_atom, std::uint64_t id) { on_resend(self, id); },
      [self](saved_atom, const std::string& error) {
        auto& st = self->state;
        st.save_in_flight = false;
        if (!error.empty())
          logging::error("watch.save_failed", {{"watch", st.cfg.id.name}, {"error", error}});
        maybe_save(self);
        finish_if_flushed(self);
      },
      [self](abandon_atom, const actor_task& done) {
        auto& st = self->state;
        st.batcher.take_all();
        st.on_flushed = done;
        st.save_on_flush = false;
        // A try the hub holds answers to nobody: the actor is gone by then.
        st.outbox.sent = false;
        if (!st.outbox.queue.empty()) return drop_waiting(self, "another copy of the watch runs elsewhere");
        finish_if_flushed(self);
      },
      [self](flush_atom, bool publish_pending, const actor_task& done) {
        auto& st = self->state;
        auto lines = st.batcher.take_all();
        // Publishing what is pending stores the position it leaves, so that
        // a successor resuming from the store (a watch moved to another
        // cluster member) does not notice those changes again.
        if (publish_pending && !lines.empty()) publish(self, std::move(lines), true);
        st.on_flushed = done;
        st.save_on_flush = publish_pending;
        // What waits is tried once more now, then dropped when refused (a
        // stop must not wait on the stream), bar one that may be stored.
        st.outbox.give_up_at = self->clock().now() + stop_grace;
        arm_give_up(self);
        send_front(self);
        maybe_save(self);
        finish_if_flushed(self);
      },
  };
}

}  // namespace tidings::actors
