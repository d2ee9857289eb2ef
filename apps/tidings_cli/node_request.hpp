#pragma once

// One request to the node with the command's token, for the commands that
// make one call and print its answer (watch admin, admin views).

#include <optional>
#include <string>

#include "apps/tidings_cli/cli_options.hpp"
#include "client/http_client.hpp"

namespace tidings::cli {

// A JSON `body` is sent as such. A transport failure is reported on stderr
// ("tidings: ...") and gives nullopt; any HTTP status is a response.
std::optional<client::http_response> exchange(const server_options& server, const std::string& method,
                                              const std::string& target, const std::string& body = {});

// The node's answer as it came (--json), ending with one newline.
void print_body(const std::string& body);

}  // namespace tidings::cli
