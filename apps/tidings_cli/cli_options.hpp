#pragma once

// Command-line grammar of `tidings`. Parsing is separate from running so the
// exit codes stay simple: usage_error -> 2.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/http_client.hpp"

namespace tidings::cli {

class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct publish_options {
  std::string stream;
  std::optional<std::string> json;  // absent: read stdin
  std::optional<std::string> idempotency_key;
};

struct watch_options {
  std::vector<std::string> streams;  // STREAM or STREAM:PREFIX, as given
  std::optional<std::string> since;
  bool once = false;
  std::optional<std::uint64_t> count;
};

struct watch_start_options {
  std::string name;
  std::string uri;
  std::optional<std::string> on_event_file;  // Lua source; "-" is stdin
  std::optional<std::int64_t> debounce_ms;
  std::optional<std::int64_t> max_wait_ms;
};

struct watch_list_options {
  bool json = false;  // the server's JSON array as it came, not the table
};

struct watch_stop_options {
  std::string name;
};

// `admin VIEW [--json]`, `admin drain`, `admin reload`,
// `admin revoke --jti ID | --sub SUBJECT`: the node's admin API.
struct admin_options {
  std::string action;  // watches, streams, sessions, nodes, tenants, drain, reload or revoke
  bool json = false;   // views: the server's JSON as it came, not the table
  std::optional<std::string> jti;
  std::optional<std::string> sub;
};

// The node every command talks to, and the token it shows that node.
struct server_options {
  client::endpoint endpoint;
  // Sent as "Authorization: Bearer TOKEN" on every request and on the SSE
  // connection. Never printed: messages name only where it came from.
  std::optional<std::string> token;
  std::string token_origin;  // "--token" or "TIDINGS_TOKEN"; empty without a token
};

struct cli_options {
  server_options server;
  bool help = false;
  std::string command;  // "publish", "watch", "watch-start", "watch-list", "watch-stop" or "admin"
  publish_options publish;
  watch_options watch;
  watch_start_options watch_start;
  watch_list_options watch_list;
  watch_stop_options watch_stop;
  admin_options admin;
};

// `env_server` is $TIDINGS_SERVER and `env_token` $TIDINGS_TOKEN (nullptr when
// unset; empty counts as unset); --server and --token win over them. A token
// that is empty (--token) or not one word of printable ASCII is a usage error
// whose message does not quote it.
cli_options parse_cli(const std::vector<std::string>& args, const char* env_server, const char* env_token);

extern const char* const usage_text;

}  // namespace tidings::cli
