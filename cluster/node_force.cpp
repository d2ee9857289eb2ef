// An operator's forced election (ADR 0021's `force_elect`): the one way a
// stream whose every in-sync replica is gone gets a leader again. It is
// asked of the node that should lead (the stream's owner by placement), and
// it says what it loses before it does anything: without accept_loss it
// only answers with that statement. Forced, the record names this node
// leader with a new log epoch; the node's next claim renumbers its copy
// into that epoch (renumbered_copy), so no cursor of the old epoch is ever
// handed out again, and every session gets `resync` (epoch_changed).

#include <chrono>
#include <random>

#include <nlohmann/json.hpp>

#include "cluster/atoms.hpp"
#include "cluster/node_actor.hpp"
#include "cluster/wire.hpp"
#include "core/cursor.hpp"
#include "logging/log.hpp"

namespace tidings::cluster {
namespace {

using self_ptr = node_actor*;
using nlohmann::json;

std::string answer(int status, json body) {
  body["status"] = status;
  return body.dump();
}

std::uint64_t fresh_log_epoch() {
  std::random_device rd;
  std::uint64_t e = 0;
  while (e == 0) e = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return e;
}

json record_json(const core::stream_record& r) {
  return {{"leader", r.leader}, {"leader_epoch", r.leader_epoch}, {"isr", r.isr}};
}

// What forcing this node loses, as the operator reads it before agreeing.
json statement(const core::stream_record& r, const std::optional<persistence::stream_meta>& copy) {
  std::string isr;
  for (const auto& m : r.isr) isr += (isr.empty() ? "" : ", ") + m;
  json s{{"record", record_json(r)}};
  if (copy) {
    s["this_node"] = {{"epoch", core::format_epoch(copy->epoch)}, {"head", copy->head_seq}};
    s["loses"] = "every event past " + core::format_epoch(copy->epoch) + ":" +
                 std::to_string(copy->head_seq) + " that the in-sync replicas (" + isr +
                 ") held; how many is unknown while none of them is alive. The log goes on from this node's "
                 "copy under a new epoch, and every session of the stream gets resync (epoch_changed)";
  } else {
    s["this_node"] = nullptr;
    s["loses"] = "the whole log: this node holds no copy, and only the in-sync replicas (" + isr +
                 ") held it. The stream starts again empty under a new epoch, and every session gets resync";
  }
  return s;
}

}  // namespace

caf::result<std::string> on_force(self_ptr self, const actors::stream_key& key, bool accept_loss) {
  auto& st = self->state;
  if (!st.cfg.view->has_record(key))
    return answer(400, {{"error", "the stream is not replicated: it has no record to force"}});
  auto owner = st.cfg.view->owner_of(key.tenant, key.name);
  if (!owner.empty())
    return answer(409, {{"error", "this node is not the stream's owner by placement; ask " + owner}});
  auto records = *st.cfg.view->records();
  auto ask = std::make_shared<record_request>();
  ask->what = record_request::kind::read;
  ask->stream = key;
  auto rp = self->make_response_promise<std::string>();
  self->request(records, std::chrono::seconds(10), record_atom::value, record_request_ptr(std::move(ask)))
      .then(
          [self, rp, key, accept_loss, records](const record_answer_ptr& a) mutable {
            auto& st = self->state;
            if (!a->ok) return void(rp.deliver(answer(503, {{"error", a->reason}})));
            if (!a->record)
              return void(rp.deliver(answer(409, {{"error", "the stream has no record: nothing to force"}})));
            auto live = st.cfg.view->current()->holders;
            for (const auto& m : a->record->isr)
              if (std::find(live.begin(), live.end(), m) != live.end())
                return void(rp.deliver(answer(
                    409,
                    {{"error", "the in-sync replica " + m + " holds a live lease: it leads without force"},
                     {"record", record_json(*a->record)}})));
            std::optional<persistence::stream_meta> copy;
            if (auto s = st.cfg.store->get_stream(key.tenant, key.name, &copy); !s.ok())
              return void(rp.deliver(answer(500, {{"error", s.message()}})));
            auto said = statement(*a->record, copy);
            if (!accept_loss) {
              said["error"] =
                  "forcing a leader loses acknowledged events (see loses); send again with "
                  "\"accept_loss\": true to do it";
              return void(rp.deliver(answer(409, std::move(said))));
            }
            auto force = std::make_shared<record_request>();
            force->what = record_request::kind::force;
            force->stream = key;
            force->me = st.table.self().id;
            force->my_end = copy ? copy->head_seq : 0;
            force->live = live;
            force->new_log_epoch = fresh_log_epoch();
            self->request(records, std::chrono::seconds(10), record_atom::value,
                          record_request_ptr(std::move(force)))
                .then(
                    [rp, said, key](const record_answer_ptr& f) mutable {
                      if (!f->ok) return void(rp.deliver(answer(409, {{"error", f->reason}})));
                      logging::warn(
                          "cluster.leader_forced",
                          {{"stream", key.name}, {"tenant", key.tenant}, {"loses", said.value("loses", "")}});
                      said["forced"] = true;
                      said["record"] = record_json(*f->record);
                      rp.deliver(answer(200, std::move(said)));
                    },
                    [rp](caf::error&) mutable {
                      rp.deliver(answer(503, {{"error", "the record keeper did not answer; retry"}}));
                    });
          },
          [rp](caf::error&) mutable {
            rp.deliver(answer(503, {{"error", "the record keeper did not answer; retry"}}));
          });
  return rp;
}

}  // namespace tidings::cluster
