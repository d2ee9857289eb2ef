#include "sources/web/web_config.hpp"

#include <map>

#include "core/uri_template.hpp"
#include "sources/web/resource_template.hpp"

namespace tidings::sources::web {

std::string_view nats_address(std::string_view server) {
  if (auto scheme = server.find("://"); scheme != std::string_view::npos) server.remove_prefix(scheme + 3);
  if (auto at = server.rfind('@'); at != std::string_view::npos) server.remove_prefix(at + 1);
  return server;
}

std::vector<std::string> check_web_config(const web_config& cfg) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> owner_of_token;  // token -> uri
  std::map<std::string, int> uris;
  for (const auto& r : cfg.resources) {
    if (r.uri.empty()) errors.push_back("a resource has no uri");
    if (++uris[r.uri] == 2) errors.push_back("resource " + r.uri + " is configured twice");
    if (r.is_template) {
      std::string error;
      auto parsed = core::uri_template::parse(r.uri, &error);
      if (!parsed) {
        errors.push_back("resource template " + r.uri + ": " + error);
      } else if (parsed->variable_names().empty()) {
        errors.push_back("resource template " + r.uri + " has no {variable}: write it as uri:");
      } else {
        auto problems = template_problems(r, parsed->variable_names());
        errors.insert(errors.end(), problems.begin(), problems.end());
      }
    }
    if (r.kind == strategy::poll && !r.backend)
      errors.push_back("resource " + r.uri + ": a poll strategy needs a backend to fetch");
    if (r.kind == strategy::sql_polling && (!r.sql || r.sql->conninfo.empty() || r.sql->query.empty()))
      errors.push_back("resource " + r.uri +
                       ": sql_polling needs url (the database) and query (the tracking query)");
    if (r.kind == strategy::nats_topic && (!r.nats || r.nats->subject.empty()))
      errors.push_back("resource " + r.uri + ": nats_topic needs subject");
    if (r.backend) {
      net::http_url url;
      std::string error;
      if (!net::parse_http_url(r.backend->url, &url, &error))
        errors.push_back("resource " + r.uri + ": backend url: " + error);
    }
    if (r.kind != strategy::webhook) continue;
    if (r.signature && r.signature->secret.empty())
      errors.push_back("resource " + r.uri + ": a webhook signature needs a secret");
    std::vector<std::string> tokens = r.previous_tokens;
    if (!r.token.empty()) tokens.push_back(r.token);
    for (const auto& t : tokens) {
      auto [it, fresh] = owner_of_token.emplace(t, r.uri);
      if (!fresh && it->second != r.uri)
        errors.push_back("resources " + it->second + " and " + r.uri +
                         " share a webhook token; each resource needs its own");
    }
  }
  return errors;
}

}  // namespace tidings::sources::web
