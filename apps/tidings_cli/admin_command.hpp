#pragma once

// `tidings admin ...`: one request to the node's /admin/v1 API each. Returns
// the process exit code: 0 done, 1 the server or the network refused.

#include "apps/tidings_cli/cli_options.hpp"

namespace tidings::cli {

// Views print a table (see admin_table) or, with --json, the server's JSON;
// drain prints "draining node ID (N sessions, up to D ms)", reload
// "reloaded" and what needs a restart, revoke "revoked jti ID in TENANT".
int run_admin(const server_options& server, const admin_options& opts);

}  // namespace tidings::cli
