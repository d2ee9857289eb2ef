#include "apps/tidings_cli/node_request.hpp"

#include <iostream>

#include "apps/tidings_cli/server_auth.hpp"

namespace tidings::cli {

std::optional<client::http_response> exchange(const server_options& server, const std::string& method,
                                              const std::string& target, const std::string& body) {
  auto headers = with_auth(server);
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  try {
    return client::request(server.endpoint, method, target, body, headers);
  } catch (const client::transport_error& e) {
    std::cerr << "tidings: " << e.what() << "\n";
    return std::nullopt;
  }
}

void print_body(const std::string& body) {
  std::cout << body;
  if (body.empty() || body.back() != '\n') std::cout << "\n";
}

}  // namespace tidings::cli
