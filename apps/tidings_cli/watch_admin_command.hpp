#pragma once

// The watch API from the shell: watch-start, watch-list and watch-stop, each
// one request to /v1/watches. Each returns the process exit code: 0 done,
// 1 the server or the network refused, 2 a local input (the filter file)
// could not be read.

#include "apps/tidings_cli/cli_options.hpp"

namespace tidings::cli {

// POSTs the watch (the filter read from its file first) and prints
// "started NAME on URI (shape: SHAPE)", or "replaced ..." when the server
// replaced a watch of that name.
int run_watch_start(const server_options& server, const watch_start_options& opts);

// Prints the watches as a table (see watch_table), or the server's JSON.
int run_watch_list(const server_options& server, const watch_list_options& opts);

// Prints "stopped NAME"; a watch that did not exist is
// "tidings: no watch named NAME" on stderr and exit 1.
int run_watch_stop(const server_options& server, const watch_stop_options& opts);

}  // namespace tidings::cli
