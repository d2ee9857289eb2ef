#include "apps/tidings_cli/publish_command.hpp"

#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "apps/tidings_cli/event_line.hpp"
#include "apps/tidings_cli/server_auth.hpp"

namespace tidings::cli {

int run_publish(const server_options& server, const publish_options& opts) {
  std::string body;
  if (opts.json) {
    body = *opts.json;
  } else {
    body.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }

  auto headers = with_auth(server, {{"Content-Type", "application/json"}});
  if (opts.idempotency_key) headers.emplace_back("Idempotency-Key", *opts.idempotency_key);

  client::http_response res;
  try {
    res = client::request(server.endpoint, "POST",
                          "/v1/streams/" + client::url_encode(opts.stream) + "/events", body, headers);
  } catch (const client::transport_error& e) {
    std::cerr << "tidings: " << e.what() << "\n";
    return 1;
  }

  if (res.status != 200 && res.status != 201) {
    std::cerr << "tidings: " << res.status << ": " << error_message(res.body) << "\n";
    if (const auto hint = auth_hint(res.status, server)) std::cerr << "tidings: " << *hint << "\n";
    return 1;
  }
  const auto reply = nlohmann::json::parse(res.body, nullptr, false);
  if (reply.is_object() && reply.contains("cursor") && reply["cursor"].is_string()) {
    std::cout << reply["cursor"].get<std::string>() << "\n";
  } else if (reply.is_object() && reply.contains("cursors") && reply["cursors"].is_array()) {
    for (const auto& c : reply["cursors"])
      std::cout << (c.is_string() ? c.get<std::string>() : c.dump()) << "\n";
  } else {
    std::cerr << "tidings: unexpected reply: " << res.body << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tidings::cli
