#pragma once

// The connector "resources": every webhook, poll, sql_polling and
// nats_topic resource of the configuration (web_config.hpp), each listed by
// its exact URI or its template (every URI the template matches is a
// resource of its own, resource_template.hpp). It also answers POST
// /webhooks/resource-updated/{token}: fire() routes a token to its resource
// (a template's token with ?uri= naming which), checks the call's
// signature where one is configured, and, when something is subscribed,
// tells its live upstream.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>

#include "core/uri_template.hpp"
#include "sources/upstream.hpp"
#include "sources/web/web_config.hpp"

namespace tidings::sources::web {

class webhook_upstream;

// One POST /webhooks/resource-updated/{token}.
struct webhook_call {
  std::string_view token;
  std::string_view uri;  // ?uri=: which resource of a template's token
  std::string_view body;
  header_lookup headers;
  std::chrono::system_clock::time_point now;
};

struct webhook_answer {
  unsigned status =
      200;          // 404 unknown token, 400 a template's without ?uri=, 401 bad signature, 409 a replay
  std::string uri;  // 200: the resource fired
  std::string error;
};

// A webhook resource as an operator's admin view shows it (the token in
// full: GET /admin/v1/webhooks is how a generated one is learnt).
struct webhook_info {
  std::string uri;  // a template's: POST with ?uri= naming one of its URIs
  bool is_template = false;
  std::string token;
  bool generated = false;
  std::size_t previous_tokens = 0;
  std::string signature;  // the scheme, "" for none
  bool subscribed = false;
};

class web_connector final : public connector {
 public:
  // Derives the tokens left empty from cfg.token_key (and logs that it did,
  // never the token). The config must have passed check_web_config.
  web_connector(boost::asio::io_context& ioc, web_config cfg);
  ~web_connector() override;

  const std::string& name() const override { return name_; }
  void start(std::function<void(std::string error)> done) override;
  std::vector<resource_info> resources() const override;
  std::unique_ptr<upstream> open(const std::string& uri, std::string* error) override;
  void read(const std::string& uri, std::function<void(read_outcome)> done) override;
  void stop() override;

  // Routes the token (comparing every token in constant time), checks the
  // signature if the resource has one, and tells its live upstream, if any.
  webhook_answer fire(const webhook_call& call);

  // A reload's new tokens and signatures: from now on fire() accepts these
  // (and no other) for each listed resource; resources not listed keep theirs.
  void update_tokens(const std::vector<webhook_tokens>& tokens);

  std::vector<webhook_info> webhooks() const;

  const std::vector<std::string>& allowed_origins() const { return cfg_.allowed_origins; }

 private:
  const web_resource_config* find(std::string_view uri) const;
  // The resource serving `uri`: the one configured as such, else the first
  // template that matches it; null for none.
  const web_resource_config* owner(std::string_view uri) const;
  // The resource of `uri`: configured as such, or a template's instance;
  // nullopt with *error saying why not.
  std::optional<web_resource_config> resolve(std::string_view uri, std::string* error) const;
  // Whether a URI the resource serves (its own, or a template's) is subscribed now.
  bool subscribed(const web_resource_config& r) const;

  boost::asio::io_context& ioc_;
  web_config cfg_;
  std::string name_ = "resources";
  std::set<std::string, std::less<>> generated_;  // uris whose token was generated, not configured
  std::map<std::string, webhook_upstream*, std::less<>> live_;  // uri -> the subscribed upstream
  // sql_polling reads without a source (resources/read): one upstream per
  // resource runs the query for all of them, closed by stop() if still running.
  std::map<std::string, std::pair<std::uint64_t, std::unique_ptr<upstream>>> one_shots_;  // by uri
  std::uint64_t next_one_shot_ = 0;
  std::shared_ptr<char> lifetime_ = std::make_shared<char>();         // posted handlers check it
  std::map<std::string, replay_guard, std::less<>> replays_;          // uri -> signatures accepted lately
  std::map<std::string, core::uri_template, std::less<>> templates_;  // parsed, by template text
};

// A random UUIDv4 (from the OS's random source).
std::string random_uuid_v4();

// The token of a webhook resource configured without one: 32 hex digits of
// an HMAC of its URI under `key`, so the same key gives the same token after
// a restart and on every node. An empty key gives a random one.
std::string generated_token(const std::string& key, std::string_view uri);

}  // namespace tidings::sources::web
