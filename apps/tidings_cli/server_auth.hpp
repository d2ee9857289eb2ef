#pragma once

// How every command shows its token to the node, and what it adds to the
// node's own message when the node refuses one. Kept apart from the I/O like
// event_line; nothing here ever puts the token into text meant for a person.

#include <optional>
#include <string>

#include "apps/tidings_cli/cli_options.hpp"

namespace tidings::cli {

// `headers` plus "Authorization: Bearer TOKEN" when `server` carries a token.
client::header_list with_auth(const server_options& server, client::header_list headers = {});

// A second line for a 401: how to send a token when none was sent, else which
// setting the refused one came from (a stale $TIDINGS_TOKEN is easy to miss).
// nullopt for any other status: a 403's message already names the grant.
std::optional<std::string> auth_hint(int status, const server_options& server);

}  // namespace tidings::cli
