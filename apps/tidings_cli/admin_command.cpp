#include "apps/tidings_cli/admin_command.hpp"

#include <chrono>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/tidings_cli/admin_table.hpp"
#include "apps/tidings_cli/event_line.hpp"
#include "apps/tidings_cli/node_request.hpp"
#include "apps/tidings_cli/server_auth.hpp"

namespace tidings::cli {

namespace {

using json = nlohmann::json;

// The node said no: its status and message, and for a 401 what to do about the token.
int refused(const client::http_response& res, const server_options& server) {
  std::cerr << "tidings: " << res.status << ": " << error_message(res.body) << "\n";
  if (const auto hint = auth_hint(res.status, server)) std::cerr << "tidings: " << *hint << "\n";
  return 1;
}

int unexpected(const client::http_response& res) {
  std::cerr << "tidings: unexpected reply: " << res.body << "\n";
  return 1;
}

std::string text_field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "?";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int run_view(const server_options& server, const admin_options& opts) {
  const auto res = exchange(server, "GET", "/admin/v1/" + opts.action);
  if (!res) return 1;
  if (res->status != 200) return refused(*res, server);
  if (opts.json) {
    print_body(res->body);
    return 0;
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto table = admin_table(opts.action, res->body, now);
  if (!table) return unexpected(*res);
  std::cout << *table;
  return 0;
}

}  // namespace

int run_admin(const server_options& server, const admin_options& opts) {
  if (opts.action == "drain") {
    const auto res = exchange(server, "POST", "/admin/v1/drain", "{}");
    if (!res) return 1;
    if (res->status != 202) return refused(*res, server);
    const auto reply = json::parse(res->body, nullptr, false);
    if (!reply.is_object()) return unexpected(*res);
    std::cout << "draining node " << text_field(reply, "node") << " (" << text_field(reply, "sessions")
              << " sessions, up to " << text_field(reply, "deadline_ms") << " ms)\n";
    return 0;
  }
  if (opts.action == "reload") {
    const auto res = exchange(server, "POST", "/admin/v1/reload", "{}");
    if (!res) return 1;
    if (res->status != 200) return refused(*res, server);
    const auto reply = json::parse(res->body, nullptr, false);
    if (!reply.is_object()) return unexpected(*res);
    std::cout << "reloaded\n";
    if (const auto it = reply.find("restart_needed"); it != reply.end() && it->is_array() && !it->empty()) {
      std::cout << "these settings changed and need a restart:";
      for (const auto& key : *it) std::cout << " " << (key.is_string() ? key.get<std::string>() : key.dump());
      std::cout << "\n";
    }
    return 0;
  }
  if (opts.action == "revoke") {
    const bool by_jti = opts.jti.has_value();
    json body = {{by_jti ? "jti" : "sub", by_jti ? *opts.jti : *opts.sub}};
    std::string text;
    try {
      text = body.dump();
    } catch (const json::type_error&) {
      std::cerr << "tidings: --jti and --sub must be UTF-8 text\n";
      return 2;
    }
    const auto res = exchange(server, "POST", "/admin/v1/tokens/revoke", text);
    if (!res) return 1;
    if (res->status != 200) return refused(*res, server);
    const auto reply = json::parse(res->body, nullptr, false);
    if (!reply.is_object()) return unexpected(*res);
    std::cout << "revoked " << (by_jti ? "jti " + *opts.jti : "every token of " + *opts.sub) << " in "
              << text_field(reply, "tenant") << "\n";
    return 0;
  }
  return run_view(server, opts);
}

}  // namespace tidings::cli
