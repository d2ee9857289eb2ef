#include "tests/support/tenant_node.hpp"

#include <chrono>
#include <fstream>

namespace tidings::testing {
namespace {

std::string indent(const std::string& pem, const std::string& pad) {
  std::string out;
  std::size_t start = 0;
  while (start < pem.size()) {
    auto nl = pem.find('\n', start);
    auto line = pem.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty()) out += pad + line + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

client::header_list bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}};
}

client::http_response post_json(const client::endpoint& ep, const std::string& token,
                                const std::string& target, const std::string& body) {
  return client::request(ep, "POST", target, body,
                         {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}});
}

std::string error_of(const client::http_response& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                        : r.body;
}

tenant_node::tenant_node(std::string acme_extra, std::vector<std::string> args, std::string file_extra)
    : acme_extra_(std::move(acme_extra)),
      file_extra_(std::move(file_extra)),
      args_(std::move(args)),
      acme_secret_("acme-test-secret-0123456789abcdef-0123456789"),
      ops_secret_("ops-test-secret-0123456789abcdef-0123456789ab"),
      acme_rsa_(generate_rsa()),
      globex_ec_(generate_p256()) {
  write_config(true);
  restart();
}

void tenant_node::write_config(bool with_acme_hs256) const {
  std::ofstream f(dir_.path() / "tidings.yaml", std::ios::trunc);
  f << "tenants:\n"
    << "  - id: acme\n"
    << "    keys:\n";
  if (with_acme_hs256)
    f << "      - kid: k1\n"
      << "        alg: HS256\n"
      << "        secret: " << acme_secret_ << "\n";
  f << "      - kid: r1\n"
    << "        alg: RS256\n"
    << "        public_key: |\n"
    << indent(acme_rsa_.public_pem, "          ") << acme_extra_ << "  - id: globex\n"
    << "    keys:\n"
    << "      - alg: ES256\n"
    << "        public_key: |\n"
    << indent(globex_ec_.public_pem, "          ") << "  - id: ops\n"
    << "    operator: true\n"
    << "    keys:\n"
    << "      - kid: o1\n"
    << "        alg: HS256\n"
    << "        secret: " << ops_secret_ << "\n"
    << file_extra_;
}

void tenant_node::restart() {
  node_.reset();
  auto data = dir_.path() / "data";
  std::vector<std::string> args = {"--config", (dir_.path() / "tidings.yaml").string(), "--audit-log",
                                   audit_path().string()};
  args.insert(args.end(), args_.begin(), args_.end());
  node_ = std::make_unique<tidingsd_process>(data, args);
}

nlohmann::json tenant_node::payload(const token_spec& spec) {
  return spec.payload();
}

nlohmann::json token_spec::payload() const {
  auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  nlohmann::json p = {{"tenant", tenant_},
                      {"sub", sub_},
                      {"iat", now},
                      {"exp", now + ttl_s_},
                      {"tidings", {{"read", read_}, {"write", write_}, {"admin", admin_}}}};
  if (!jti_.empty()) p["jti"] = jti_;
  for (auto& [k, v] : extra_.items()) p[k] = v;
  return p;
}

std::string tenant_node::token(const token_spec& spec) const {
  if (spec.tenant() == "globex") return mint(broker::key_alg::es256, globex_ec_.private_pem, payload(spec));
  if (spec.tenant() == "ops") return mint(broker::key_alg::hs256, ops_secret_, payload(spec), "o1");
  return mint(broker::key_alg::hs256, acme_secret_, payload(spec), "k1");
}

std::string tenant_node::token_rs256(const token_spec& spec) const {
  return mint(broker::key_alg::rs256, acme_rsa_.private_pem, payload(spec), "r1");
}

}  // namespace tidings::testing
