#include "actors/watch_debounce.hpp"

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
  if (!st.on_flushed || st.publishes_in_flight > 0 || st.save_in_flight) return;
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
  if (st.publishes_in_flight > 0 || st.save_in_flight || st.batcher.pending()) return;
  save_position(self);
}

void save_position(self_ptr self) {
  auto& st = self->state;
  if (!st.latest || st.save_in_flight) return;
  persistence::write_set ws;
  ws.progress_puts.emplace_back(st.cfg.id, take_progress(st));
  st.save_in_flight = true;
  watch_debounce_actor handle = self;
  st.cfg.committer->submit(std::move(ws), [handle](const persistence::status& s) {
    caf::anon_send(handle, saved_atom::value, s.message());
  });
}

void publish(self_ptr self, std::vector<std::string> lines, bool with_progress) {
  auto& st = self->state;
  auto id = st.next_publish++;
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

  auto req = std::make_shared<publish_request>();
  req->events.push_back(std::move(ev));
  if (with_progress && st.latest) req->progress.emplace_back(st.cfg.id, take_progress(st));
  watch_debounce_actor handle = self;
  auto covers = st.latest ? core::format_cursor(st.latest->cursor) : std::string();
  req->reply = [handle, id, name = st.cfg.id.name, count = lines.size(), covers,
                stats = st.cfg.stats](const publish_result& r) {
    std::string error;
    if (actors::failed(r.outcome)) {
      error = r.error.empty() ? "unavailable" : r.error;
    } else if (!r.cursors.empty()) {
      stats->notices.fetch_add(1, std::memory_order_relaxed);
      // Logged once the notice is durable: a reader of the log can fetch it.
      logging::info("watch.notice", {{"watch", name},
                                     {"lines", static_cast<std::uint64_t>(count)},
                                     {"cursor", core::format_cursor(r.cursors.front())},
                                     {"covers", covers}});
    }
    caf::anon_send(handle, published_atom::value, id, error);
  };
  ++st.publishes_in_flight;
  self->send(st.cfg.notices, publish_atom::value, publish_request_ptr(std::move(req)));
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

void flush_due(self_ptr self) {
  auto& st = self->state;
  if (auto lines = st.batcher.take_due(clock::now())) {
    publish(self, std::move(*lines), true);
  } else {
    arm_timer(self);  // the deadline moved on
  }
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
    } else {
      // The filter dropped the failure's line: the position after it is
      // stored anyway, or a restart would fail the watch on it again.
      save_position(self);
    }
    st.on_flushed = actor_task{};
    return finish_if_flushed(self);
  }
  if (st.batcher.pending()) {
    auto deadline = st.batcher.deadline();
    if (deadline && *deadline <= now) return flush_due(self);
    return arm_timer(self);
  }
  maybe_save(self);
}

}  // namespace

watch_debounce_actor::behavior_type watch_debounce(
    watch_debounce_actor::stateful_pointer<watch_debounce_state> self, watch_debounce_config cfg) {
  auto& st = self->state;
  st.batcher = core::notice_batcher(cfg.policy);
  st.cfg = std::move(cfg);
  return {
      [self](lines_atom, const watch_output_ptr& out) { on_lines(self, out); },
      [self](tick_atom, std::uint64_t generation) {
        auto& st = self->state;
        if (generation != st.timer_generation || st.on_flushed) return;
        st.timer_armed = false;
        flush_due(self);
      },
      [self](published_atom, std::uint64_t, const std::string& error) {
        auto& st = self->state;
        --st.publishes_in_flight;
        if (!error.empty()) {
          // Its lines are lost unless no later position is ever stored: end
          // the watch (the manager lists it as failed); a restart or a new
          // start resumes from the last stored position and redoes them.
          logging::error("watch.notice_failed", {{"watch", st.cfg.id.name}, {"error", error}});
          return self->quit(
              caf::make_error(caf::sec::runtime_error, "a notice could not be stored: " + error));
        }
        maybe_save(self);
        finish_if_flushed(self);
      },
      [self](saved_atom, const std::string& error) {
        auto& st = self->state;
        st.save_in_flight = false;
        if (!error.empty())
          logging::error("watch.save_failed", {{"watch", st.cfg.id.name}, {"error", error}});
        maybe_save(self);
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
        maybe_save(self);
        finish_if_flushed(self);
      },
  };
}

}  // namespace tidings::actors
