#pragma once

// Typed interface of the hub: one actor per owned stream (DESIGN.md "Actors").

#include <caf/all.hpp>

#include "actors/messages.hpp"

namespace tidings::actors {

using publish_atom = caf::atom_constant<caf::atom("publish")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
using unsub_atom = caf::atom_constant<caf::atom("unsub")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using trim_atom = caf::atom_constant<caf::atom("trim")>;

using hub_actor = caf::typed_actor<
    // Assign seqs, persist through the group committer, reply when durable.
    caf::reacts_to<publish_atom, publish_request_ptr>,
    // Read after a cursor (ring, then store); on catching up, register the sink.
    caf::reacts_to<fetch_atom, fetch_request_ptr>,
    // One subscription of this sink ended.
    caf::reacts_to<unsub_atom, fanout_sink_ptr>,
    // The group committer finished write number `token` (error text if it failed).
    caf::reacts_to<committed_atom, std::uint64_t, std::string>,
    // Age retention: drop events older than the stream's max age.
    caf::reacts_to<trim_atom>>;

}  // namespace tidings::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::publish_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::fetch_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidings::actors::fanout_sink_ptr)
