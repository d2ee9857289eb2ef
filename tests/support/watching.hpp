#pragma once

// Watches against a running node: start, list and stop through the HTTP API,
// publish state snapshots for them to diff, and await their notices on the
// watch:NAME stream. Nothing here sleeps: waits are bounded SSE reads.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"

namespace tidings::testing {

// POST /v1/watches with `spec` as the body; the response as it came.
client::http_response start_watch(const client::endpoint& ep, const nlohmann::json& spec);
// The same, expecting 201 or 200; returns the body. Throws otherwise.
nlohmann::json start_watch_ok(const client::endpoint& ep, const nlohmann::json& spec);
// GET /v1/watches, expecting 200 and an array.
nlohmann::json list_watches(const client::endpoint& ep);
// DELETE /v1/watches/NAME, expecting 200; returns "stopped".
bool stop_watch(const client::endpoint& ep, const std::string& name);

// Publishes {"shape":"state","state":STATE} at `path` of `stream`.
std::string publish_state(const client::endpoint& ep, const std::string& stream, const std::string& path,
                          const nlohmann::json& state);

// The notice lines of a NOTICE event; throws when it is not one.
std::vector<std::string> notice_lines(const data_event& event);

// Collects `count` notices (or fewer on timeout) from a session on watch:NAME.
std::vector<data_event> await_notices(client::sse_stream& session, std::size_t count,
                                      std::chrono::milliseconds timeout);

// A file to watch: DIR/etc/app.json holding `content` (its root, etc/, is
// what a files upstream's config names).
std::filesystem::path write_watched_file(const std::filesystem::path& dir, const std::string& content);

// Writes `content` next to `path` and renames it over it, as editors and
// config management do: a file watch must follow the new inode.
void replace_file(const std::filesystem::path& path, const std::string& content);

}  // namespace tidings::testing
