#pragma once

#include "apps/tidings_cli/cli_options.hpp"

namespace tidings::cli {

// Follows the streams over SSE, printing each data event (see event_line) and
// reconnecting (resuming by Last-Event-ID) until --count or --once says stop.
// Returns the process exit code.
int run_watch(const server_options& server, const watch_options& opts);

}  // namespace tidings::cli
