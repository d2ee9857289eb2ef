#pragma once

#include "apps/tidings_cli/cli_options.hpp"

namespace tidings::cli {

// POSTs the event(s) and prints each returned cursor on its own line.
// Returns the process exit code.
int run_publish(const server_options& server, const publish_options& opts);

}  // namespace tidings::cli
