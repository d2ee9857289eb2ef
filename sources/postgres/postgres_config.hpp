#pragma once

// Configuration of one PostgreSQL LISTEN/NOTIFY connector (issue 4). The lead
// fills it from the node's YAML; nothing here reads files.

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "net/tls_context.hpp"

namespace tidings::sources::postgres {

using libpq_keywords = std::vector<std::pair<std::string, std::string>>;

// The TLS settings every other upstream takes (issue 24), in libpq's words:
// ca_file as sslrootcert, client_cert and client_key as sslcert and sslkey,
// and with any of them sslmode verify-full (the chain and the host name
// checked, never a fall back to plaintext); insecure_skip_verify alone as
// sslmode require (encrypted, nobody checked). They override the same
// keywords in the connection string: a weaker sslmode there cannot undo them.
inline libpq_keywords libpq_tls_keywords(const net::tls_settings& tls) {
  libpq_keywords out;
  if (!tls.ca_file.empty()) out.emplace_back("sslrootcert", tls.ca_file);
  if (!tls.client_cert.empty()) out.emplace_back("sslcert", tls.client_cert);
  if (!tls.client_key.empty()) out.emplace_back("sslkey", tls.client_key);
  if (tls.insecure_skip_verify)
    out.emplace_back("sslmode", "require");
  else if (tls.any())
    out.emplace_back("sslmode", "verify-full");
  return out;
}

struct postgres_config {
  // Names the database in URIs, pg://{name}/{channel}; the connector itself
  // is called "pg:{name}" (like "kube:{context}"). Must not contain '/'.
  std::string name;

  // A libpq connection string, either key=value pairs
  // ("host=127.0.0.1 port=5432 dbname=app user=tidings") or a URI
  // ("postgresql://tidings@db.internal/app"). Passed to libpq as is, so every
  // libpq keyword works (sslmode, keepalives_idle, ...). Each subscribed
  // channel holds its own connection. A host name is resolved by libpq
  // synchronously on the sources thread: prefer hostaddr= or an address when
  // the resolver can be slow. libpq's connect_timeout does not apply to the
  // non-blocking connect used here; `connect_timeout` below does. Unless
  // the string sets them, TCP keepalives probe an idle connection after 30 s
  // (keepalives_idle=30 keepalives_interval=10 keepalives_count=3), so a
  // vanished server ends the subscription within about a minute.
  std::string conninfo;
  // ca_file, client_cert, client_key, insecure_skip_verify (libpq_tls_keywords).
  net::tls_settings tls;

  // Where an event's path comes from: "" = the channel name; a name = that
  // top-level field of a JSON object payload; "/a/b" = a JSON pointer into the
  // payload. A string value is used as is, a number or boolean as its JSON
  // text; when the payload is not JSON or lacks the field, the channel.
  std::string path_field;

  // Bound on connecting, authenticating and LISTEN together; past it the
  // attempt ends (the source then backs off and subscribes again).
  std::chrono::milliseconds connect_timeout{10000};

  // Events each channel keeps for reads. A reader that falls further behind
  // sees a seq jump, which event-log extraction reports as a GAP.
  std::size_t ring_capacity = 1024;
};

}  // namespace tidings::sources::postgres
