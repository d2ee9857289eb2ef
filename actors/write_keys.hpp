#pragma once

// Idempotency-Keys for the broker's own writers (a watch's notices, a
// source's reads): a write refused for now or answered "uncertain" is sent
// again with its key, so the stream stores it once (ADR 0016's amendment).

#include <string>
#include <string_view>

namespace tidings::actors {

// "<kind>-<16 random hex digits>-": unique to one writer's life, so its
// keys (prefix + a counter) never match what an earlier run of the same
// watch or source stored under the stream's keys.
std::string writer_key_prefix(std::string_view kind);

}  // namespace tidings::actors
