#pragma once

// Resources configured by URI whose changes arrive as webhooks, or, opted
// into explicitly, by polling (the gateway guide's ResourceWatchConfig,
// seeds/001): each maps one URI to a strategy and, optionally, a backend
// read (an HTTP GET whose body is the resource's state).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_client.hpp"
#include "sources/web/webhook_signature.hpp"

namespace tidings::sources::web {

struct backend_config {
  std::string url;             // http[s]://host:port/path
  std::string method = "GET";  // or POST, with `body`
  std::string body;
  net::http_headers headers;
  // https:// only: the trust and client certificate (issue 24), and the
  // context made from them when the config was read (null: the system store).
  net::tls_settings tls;
  std::shared_ptr<net::tls_context> tls_context;

  std::vector<int> expected_status_codes = {
      200};  // others fail the read (404 may be listed: a delete as a change)
  std::chrono::milliseconds timeout{10000};
  std::size_t max_body_bytes = 4 * 1024 * 1024;
  // A body that is not JSON fails the read (an HTML error page with 200,
  // a captive portal) instead of becoming the resource's state.
  bool require_json_response = false;
};

// A poll whose watch: block names no strategy (the operator's opt-in,
// seeds/001).
inline constexpr std::chrono::milliseconds default_poll_interval{60000};

enum class strategy { webhook, poll, sql_polling, nats_topic };

// sql_polling (seeds/001): a scalar tracking query run on the interval over
// libpq, on a monotonic column ("SELECT max(updated_at) FROM orders"); the
// resource changed when its value moved. The portable alternative to
// LISTEN/NOTIFY: any table with such a column, nothing to install.
struct sql_poll_config {
  // A libpq connection string or URI, passed as is (every libpq keyword works).
  std::string conninfo;
  std::string query;
  // $1, $2, ... of the query, as text (libpq's parameters: never spliced
  // into the SQL). On a template, {variables} in them are filled in.
  std::vector<std::string> params;
  // ca_file, client_cert, client_key, insecure_skip_verify: libpq's
  // sslrootcert, sslcert, sslkey and sslmode, as for postgres: upstreams.
  net::tls_settings tls;
  // Bounds connecting and each run of the query.
  std::chrono::milliseconds timeout{10000};
};

// nats_topic (seeds/001): any message on the subject means the resource
// changed; the payload is not inspected.
struct nats_topic_config {
  // nats://[user:password@]host:port; several, comma-separated, for a NATS
  // cluster. tls:// (or any TLS setting) makes it TLS.
  std::string url = "nats://127.0.0.1:4222";
  // ca_file (else the system's CAs), client_cert + client_key, and
  // insecure_skip_verify; the host name is always checked otherwise.
  net::tls_settings tls;
  std::string subject;  // wildcards (*, >) as NATS has them
  // Bounds connecting, subscribing and each reconnect attempt.
  std::chrono::milliseconds timeout{10000};
};

// One server of a nats_topic url without its scheme and user:password@:
// "tls://u:p@h:4222" -> "h:4222".
std::string_view nats_address(std::string_view server);

// The poll interval floor unless the operator sets another
// (upstreams.poll_floor_ms): a misconfigured watch cannot hammer a backend.
inline constexpr std::chrono::milliseconds default_poll_floor{10000};
inline constexpr std::chrono::milliseconds lowest_poll_floor{100};

struct web_resource_config {
  std::string uri;  // the RFC 6570 template when `is_template`
  // uri_template: in the config (seeds/001: a watch: block on a resource
  // template). Each URI it matches is a resource of its own, its backend,
  // subject and query parameters with the {variables} filled in
  // (resource_template.hpp).
  bool is_template = false;
  std::string name;
  std::string description;
  std::string mime_type;  // of the backend's body; "" = the response's Content-Type
  std::optional<backend_config> backend;
  strategy kind = strategy::webhook;
  // webhook: the current token and those still accepted during a rotation.
  // An empty token is replaced by one derived from web_config::token_key
  // when the connector starts (the same after a restart, and on every
  // node of a cluster).
  std::string token;
  std::vector<std::string> previous_tokens;
  // webhook: a signature every call must carry besides the token.
  std::optional<signature_config> signature;
  // sql_polling: the database and the tracking query.
  std::optional<sql_poll_config> sql;
  // nats_topic: the server and the subject.
  std::optional<nats_topic_config> nats;
  // poll (needs a backend) and sql_polling: raised to web_config::poll_floor when smaller.
  std::chrono::milliseconds interval = default_poll_interval;

  // Its backend's TLS peer goes unchecked (insecure_skip_verify).
  bool tls_unverified() const {
    return (backend && backend->tls.insecure_skip_verify) || (sql && sql->tls.insecure_skip_verify) ||
           (nats && nats->tls.insecure_skip_verify);
  }
  // Polled on an interval (poll, sql_polling), so the floor applies.
  bool polled() const { return kind == strategy::poll || kind == strategy::sql_polling; }
};

struct web_config {
  std::vector<web_resource_config> resources;
  std::vector<std::string> allowed_origins;  // for POST /webhooks/...; no Origin header always passes
  // An operator's bound, not a resource's (at least lowest_poll_floor); the
  // tests lower it so that a poll is seen in a second rather than ten.
  std::chrono::milliseconds poll_floor = default_poll_floor;
  // The key generated tokens are derived from: the cluster secret in a
  // cluster, else a key kept in the node's store. Set by the node, not read
  // from the file.
  std::string token_key;
};

// A webhook resource's tokens, as a reload hands them to the running
// connector (web_connector::update_tokens).
struct webhook_tokens {
  std::string uri;
  std::string token;  // empty: the generated one
  std::vector<std::string> previous_tokens;
  std::optional<signature_config> signature;
};

// The configuration's mistakes, each naming the resources involved: a token
// shared by two resources (the gateway lets the later win silently; we
// refuse), a duplicate URI, a poll without a backend, a bad backend URL, a
// signature without a secret.
std::vector<std::string> check_web_config(const web_config& cfg);

}  // namespace tidings::sources::web
