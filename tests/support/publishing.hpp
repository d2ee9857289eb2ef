#pragma once

// Publishing and history reads against a running node, for tests that care
// about what happens to the events rather than about the publish reply itself.
// Every helper throws std::runtime_error (status and body in the message) when
// the node answers something other than what the helper exists for.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"

namespace tidings::testing {

// "/v1/streams/STREAM/events".
std::string events_target(const std::string& stream);

// The body as JSON; throws with the body text when it is not JSON.
nlohmann::json parse_body(const client::http_response& response);

// POSTs one event object; expects 201 {"cursor"} and returns the cursor.
std::string publish(client::http_connection& conn, const std::string& stream, const std::string& event_json,
                    const client::header_list& headers = {});
std::string publish(const client::endpoint& ep, const std::string& stream, const std::string& event_json,
                    const client::header_list& headers = {});

// POSTs a JSON array of events; expects 201 {"cursors"} and returns them.
std::vector<std::string> publish_batch(client::http_connection& conn, const std::string& stream,
                                       const std::string& array_json);
std::vector<std::string> publish_batch(const client::endpoint& ep, const std::string& stream,
                                       const std::string& array_json);

// A compact event object: {"path":PATH,"type":TYPE,"data":DATA}.
std::string event_json(const std::string& path, const std::string& type, const nlohmann::json& data);

// Reads the whole retained history after `since` (empty: from the first
// retained event), following `next` page by page. Expects 200 on every page.
std::vector<nlohmann::json> read_history(const client::endpoint& ep, const std::string& stream,
                                         const std::string& since = {});

}  // namespace tidings::testing
