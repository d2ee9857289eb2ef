#pragma once

// A tidingsd with two tenants, for the security tests: `acme` verifies HS256
// tokens (kid "k1") and RS256 tokens (kid "r1"), `globex` ES256 tokens; and
// a third, `ops`, the operator tenant (HS256, kid "o1"), whose admins may
// drain and reload the node and see every tenant in the admin views. The
// config file lives in the node's temp dir, so a test can rewrite it and
// reload. Tokens are minted on demand with whatever claims a case needs.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "tests/support/jwt_mint.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace tidings::testing {

// The claims of a test token, set by chaining: token_spec().sub("ann").admin(true).
class token_spec {
 public:
  token_spec& tenant(std::string v) { return set(tenant_, std::move(v)); }
  token_spec& sub(std::string v) { return set(sub_, std::move(v)); }
  token_spec& read(std::vector<std::string> v) { return set(read_, std::move(v)); }
  token_spec& write(std::vector<std::string> v) { return set(write_, std::move(v)); }
  token_spec& admin(bool v) { return set(admin_, v); }
  token_spec& ttl_s(long long v) { return set(ttl_s_, v); }  // exp = now + ttl
  token_spec& jti(std::string v) { return set(jti_, std::move(v)); }
  token_spec& extra(nlohmann::json v) { return set(extra_, std::move(v)); }  // merged into the payload

  const std::string& tenant() const { return tenant_; }
  nlohmann::json payload() const;

 private:
  template <class T, class V>
  token_spec& set(T& field, V&& value) {
    field = std::forward<V>(value);
    return *this;
  }
  std::string tenant_ = "acme";
  std::string sub_ = "ann";
  std::vector<std::string> read_ = {"*"};
  std::vector<std::string> write_ = {"*"};
  bool admin_ = false;
  long long ttl_s_ = 600;
  std::string jti_;
  nlohmann::json extra_ = nlohmann::json::object();
};

class tenant_node {
 public:
  // `acme_extra`: YAML lines appended to acme's entry (limits, scopes...),
  // indented for it. `file_extra`: top-level YAML appended to the file
  // (an upstreams: section, say).
  explicit tenant_node(std::string acme_extra = {}, std::vector<std::string> args = {},
                       std::string file_extra = {});

  client::endpoint endpoint() const { return node_->endpoint(); }
  tidingsd_process& process() { return *node_; }
  const std::filesystem::path& data_dir() const { return dir_.path(); }
  std::filesystem::path audit_path() const { return dir_.path() / "audit.ndjson"; }

  // A token signed by the tenant's key (acme: HS256 "k1"; globex: ES256;
  // ops: HS256 "o1").
  std::string token(const token_spec& spec) const;
  std::string token_rs256(const token_spec& spec) const;
  static nlohmann::json payload(const token_spec& spec);

  // Rewrites the config with acme's HS256 key (k1) left out or kept.
  void write_config(bool with_acme_hs256) const;
  void restart();

  const std::string& acme_secret() const { return acme_secret_; }

 private:
  temp_dir dir_;
  std::string acme_extra_;
  std::string file_extra_;
  std::vector<std::string> args_;
  std::string acme_secret_;
  std::string ops_secret_;
  key_pair acme_rsa_;
  key_pair globex_ec_;
  std::unique_ptr<tidingsd_process> node_;
};

// Request helpers with a bearer token.
client::header_list bearer(const std::string& token);
// POST of a JSON body with a bearer token.
client::http_response post_json(const client::endpoint& ep, const std::string& token,
                                const std::string& target, const std::string& body);
// The response's {"error"} text, or its whole body when it has none.
std::string error_of(const client::http_response& r);

}  // namespace tidings::testing
