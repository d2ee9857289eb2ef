#pragma once

// Configuration of one PostgreSQL LISTEN/NOTIFY connector (issue 4). The lead
// fills it from the node's YAML; nothing here reads files.

#include <chrono>
#include <cstddef>
#include <string>

namespace tidings::sources::postgres {

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
