#pragma once

// The connector "resources": every webhook and poll resource of the
// configuration (web_config.hpp), each listed by its exact URI. It also
// answers POST /webhooks/resource-updated/{token}: fire() routes a token to
// its resource and, when something is subscribed, to its live upstream.

#include <map>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>

#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

class webhook_upstream;

class web_connector final : public connector {
 public:
  // Generates the tokens left empty (and logs their URLs). The config must
  // have passed check_web_config.
  web_connector(boost::asio::io_context& ioc, web_config cfg);
  ~web_connector() override;

  const std::string& name() const override { return name_; }
  void start(std::function<void(std::string error)> done) override;
  std::vector<resource_info> resources() const override;
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

  // The URI the token routes to (comparing every token in constant time),
  // after telling its live upstream, if any; nullopt for an unknown token.
  std::optional<std::string> fire(std::string_view token);

  // A reload's new tokens: from now on fire() accepts these (and no other)
  // for each listed resource; resources not listed keep theirs.
  void update_tokens(const std::vector<webhook_tokens>& tokens);

  const std::vector<std::string>& allowed_origins() const { return cfg_.allowed_origins; }

 private:
  const web_resource_config* find(std::string_view uri) const;

  boost::asio::io_context& ioc_;
  web_config cfg_;
  std::string name_ = "resources";
  std::set<std::string, std::less<>> generated_;  // uris whose token was generated, not configured
  std::map<std::string, webhook_upstream*, std::less<>> live_;  // uri -> the subscribed upstream
};

// "ab12…" for logs: a token is never logged in full.
std::string token_hint(std::string_view token);

// A random UUIDv4 (from the OS's random source).
std::string random_uuid_v4();

}  // namespace tidings::sources::web
