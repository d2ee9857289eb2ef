#include "apps/tidings_cli/server_auth.hpp"

#include <utility>

namespace tidings::cli {

client::header_list with_auth(const server_options& server, client::header_list headers) {
  if (server.token) headers.emplace_back("Authorization", "Bearer " + *server.token);
  return headers;
}

std::optional<std::string> auth_hint(int status, const server_options& server) {
  if (status != 401) return std::nullopt;
  if (!server.token) return std::string("the node wants a token: pass --token TOKEN or set TIDINGS_TOKEN");
  return "the node refused the token from " + server.token_origin;
}

}  // namespace tidings::cli
