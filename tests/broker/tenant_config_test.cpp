#include "broker/tenant_config.hpp"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tests/support/jwt_mint.hpp"

using namespace tidings::broker;
namespace testing = tidings::testing;

namespace {

const std::string secret = "0123456789abcdef0123456789abcdef-secret";

// Generated once: RSA key generation takes a while.
const testing::key_pair& rsa() {
  static const auto k = testing::generate_rsa();
  return k;
}
const testing::key_pair& p256() {
  static const auto k = testing::generate_p256();
  return k;
}

// A PEM as a YAML block scalar at the given indentation.
std::string block(const std::string& pem, int indent) {
  std::string out = "|\n";
  std::string pad(static_cast<std::size_t>(indent), ' ');
  std::size_t pos = 0;
  while (pos < pem.size()) {
    auto nl = pem.find('\n', pos);
    if (nl == std::string::npos) nl = pem.size();
    out += pad + pem.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return out;
}

// A file removed when the test ends.
class temp_file {
 public:
  explicit temp_file(const std::string& content) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("tidings-tenant-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".pem"))
                .string();
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~temp_file() { std::filesystem::remove(path_); }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::optional<std::string> parse(const std::string& yaml, std::vector<tenant_spec>* out) {
  auto doc = YAML::Load(yaml);
  return parse_tenants(doc["tenants"], out);
}

// The error for a config that must be refused (an empty string if it is not).
std::string error_of(const std::string& yaml) {
  std::vector<tenant_spec> out;
  auto e = parse(yaml, &out);
  return e ? *e : std::string();
}

// One tenant with an HS256 key, plus whatever `extra` adds to the tenant.
std::string one_tenant(const std::string& extra = "") {
  return "tenants:\n"
         "  - id: acme\n"
         "    keys:\n"
         "      - {kid: k1, alg: HS256, secret: " +
         secret + "}\n" + extra;
}

// One tenant whose only key is `key` (a flow mapping's insides).
std::string one_key(const std::string& key) {
  return "tenants:\n"
         "  - id: acme\n"
         "    keys:\n"
         "      - {" +
         key + "}\n";
}

}  // namespace

TEST_CASE("tenant_config: a full tenants section parses") {
  ::setenv("TIDINGS_TEST_ACME_SECRET", secret.c_str(), 1);
  temp_file ec_file(p256().public_pem);
  std::string yaml =
      "tenants:\n"
      "  - id: acme\n"
      "    keys:\n"
      "      - kid: k1\n"
      "        alg: HS256\n"
      "        secret: ${env.TIDINGS_TEST_ACME_SECRET}\n"
      "      - alg: RS256\n"
      "        public_key: " +
      block(rsa().public_pem, 10) +
      "      - kid: ec\n"
      "        alg: ES256\n"
      "        public_key_file: " +
      ec_file.path() +
      "\n"
      "    limits: {sse_sessions: 10, sse_sessions_per_subject: 2, streams_per_session: 128,\n"
      "             watches: 1, publish_rate: 2.5, publish_burst: 5, max_body_bytes: 4096}\n"
      "    allowed_origins: [https://app.example, 'http://127.0.0.1:8080', 'http://[::1]:3000']\n"
      "    notification_scopes:\n"
      "      - {stream: inbox, scope: subject, field: /data/owner}\n"
      "      - {stream: \"fin-*\", scope: expression, expression: 'has(subscriber.groups, \"finance\")'}\n"
      "  - id: beta.2_x-y\n"
      "    keys: [{alg: HS256, secret: " +
      secret + "}]\n";
  std::vector<tenant_spec> out;
  auto err = parse(yaml, &out);
  INFO(err.value_or(""));
  REQUIRE_FALSE(err);
  REQUIRE(out.size() == 2);
  const auto& t = out[0];
  CHECK(t.id == "acme");
  REQUIRE(t.keys.size() == 3);
  CHECK(t.keys[0].kid == "k1");
  CHECK(t.keys[0].alg == key_alg::hs256);
  CHECK(t.keys[0].material == secret);
  CHECK(t.keys[1].kid.empty());
  CHECK(t.keys[1].alg == key_alg::rs256);
  CHECK(t.keys[1].material == rsa().public_pem);
  CHECK(t.keys[2].alg == key_alg::es256);
  CHECK(t.keys[2].material == p256().public_pem);
  CHECK(t.limits.sse_sessions == 10);
  CHECK(t.limits.sse_sessions_per_subject == 2);
  CHECK(t.limits.streams_per_session == 128);
  CHECK(t.limits.watches == 1);
  CHECK(t.limits.publish_rate == 2.5);
  CHECK(t.limits.publish_burst == 5);
  CHECK(t.limits.max_body_bytes == 4096);
  CHECK(t.allowed_origins ==
        std::vector<std::string>{"https://app.example", "http://127.0.0.1:8080", "http://[::1]:3000"});
  REQUIRE(t.scopes.size() == 2);
  CHECK(t.scopes[0].stream == "inbox");
  CHECK(t.scopes[0].kind == scope_kind::subject);
  CHECK(t.scopes[0].field == "/data/owner");
  CHECK(t.scopes[1].stream == "fin-*");
  CHECK(t.scopes[1].kind == scope_kind::expression);
  CHECK(t.scopes[1].expression == "has(subscriber.groups, \"finance\")");
  CHECK(key_id(t, 0) == "acme#k1");
  // A kid-less key is named by its material, so inserting a key before it
  // does not rename it.
  CHECK(key_id(t, 1).starts_with("acme#sha256:"));
  auto shifted = t;
  shifted.keys.insert(shifted.keys.begin(), shifted.keys[2]);
  CHECK(key_id(shifted, 2) == key_id(t, 1));
  CHECK(key_id(t, 2) == "acme#ec");

  const auto& b = out[1];
  CHECK(b.id == "beta.2_x-y");
  tenant_limits defaults;
  CHECK(b.limits.sse_sessions == defaults.sse_sessions);
  CHECK(b.limits.streams_per_session == 64);
  CHECK(b.limits.max_body_bytes == std::size_t{1} << 20);
  CHECK(b.allowed_origins.empty());
  CHECK(b.scopes.empty());
  ::unsetenv("TIDINGS_TEST_ACME_SECRET");
}

TEST_CASE("tenant_config: operator marks the tenant whose admins run the node") {
  std::vector<tenant_spec> out;
  REQUIRE_FALSE(parse(one_tenant("    operator: true\n") + "  - id: other\n    keys: [{alg: HS256, secret: " +
                          secret + "-other}]\n    operator: false\n",
                      &out));
  REQUIRE(out.size() == 2);
  CHECK(out[0].node_operator);
  CHECK_FALSE(out[1].node_operator);
  REQUIRE_FALSE(parse(one_tenant(), &out));
  CHECK_FALSE(out[0].node_operator);
}

TEST_CASE("tenant_config: an operator tenant may not share a key with another tenant") {
  // Whoever signs the other tenant's tokens could mint an operator's.
  std::vector<tenant_spec> out;
  auto err = parse(one_tenant("    operator: true\n") +
                       "  - id: other\n    keys: [{alg: HS256, secret: " + secret + "}]\n",
                   &out);
  REQUIRE(err);
  CHECK(err->find("tenants[0].keys[0]: an operator tenant needs keys of its own") != std::string::npos);
  CHECK(err->find(secret) == std::string::npos);
}

TEST_CASE("tenant_config: an empty tenants list is no tenants") {
  std::vector<tenant_spec> out(1);
  CHECK_FALSE(parse("tenants: []\n", &out));
  CHECK(out.empty());
}

TEST_CASE("tenant_config: a refused section leaves the output alone") {
  std::vector<tenant_spec> out(1);
  out[0].id = "kept";
  CHECK(parse(one_tenant("    colour: blue\n"), &out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "kept");
}

TEST_CASE("tenant_config: each error names its path") {
  using row = std::pair<std::string, std::string>;
  auto rows = GENERATE(values<row>({
      {"tenants: {acme: {}}\n", "tenants: must be a list of tenants"},
      {"tenants:\n", "tenants: must be a list of tenants"},
      {"tenants: [7]\n", "tenants[0]: must be a mapping"},
      {one_tenant("    colour: blue\n"), "tenants[0].colour: unknown setting"},
      {one_tenant("    operator: yes please\n"), "tenants[0].operator: must be true or false"},
      {one_tenant("    operator: [true]\n"), "tenants[0].operator: must be a single value"},
      {"tenants: [{keys: [{alg: HS256, secret: " + secret + "}]}]\n", "tenants[0]: needs id"},
      {"tenants: [{id: Acme, keys: [{alg: HS256, secret: " + secret + "}]}]\n",
       "tenants[0].id: must be 1-64 of a-z 0-9 . _ -"},
      {"tenants: [{id: " + std::string(65, 'a') + ", keys: [{alg: HS256, secret: " + secret + "}]}]\n",
       "tenants[0].id: must be 1-64 of a-z 0-9 . _ -"},
      {"tenants: [{id: [a], keys: []}]\n", "tenants[0].id: must be a single value"},
      {"tenants: [{id: acme}]\n", "tenants[0]: needs keys (at least one)"},
      {"tenants: [{id: acme, keys: []}]\n", "tenants[0].keys: needs at least one key"},
      {"tenants: [{id: acme, keys: {alg: HS256}}]\n", "tenants[0].keys: must be a list"},
      {one_key("alg: HS256, secret: " + secret + ", colour: blue"),
       "tenants[0].keys[0].colour: unknown setting"},
      {one_key("secret: " + secret), "tenants[0].keys[0]: needs alg (HS256, RS256 or ES256)"},
      {"tenants:\n  - id: a\n    keys: [{alg: HS256, secret: " + secret + "}]\n  - id: b\n" +
           "    keys: [{alg: HS999, secret: " + secret + "}]\n",
       "tenants[1].keys[0]: unknown alg \"HS999\""},
      {one_key("alg: hs256, secret: " + secret), "tenants[0].keys[0]: unknown alg \"hs256\""},
      {one_key("alg: none"), "tenants[0].keys[0]: unknown alg \"none\""},
      {one_key("alg: HS256"), "tenants[0].keys[0]: needs secret (HS256)"},
      {one_key("alg: RS256"), "tenants[0].keys[0]: needs public_key (PEM) or public_key_file (RS256)"},
      {one_key("alg: RS256, secret: " + secret),
       "tenants[0].keys[0]: RS256 takes public_key or public_key_file, not a secret"},
      {one_key("alg: HS256, secret: " + secret + ", public_key: x"),
       "tenants[0].keys[0]: HS256 takes a secret, not public_key or public_key_file"},
      {one_key("alg: ES256, public_key: x, public_key_file: /y"),
       "tenants[0].keys[0]: has both public_key and public_key_file; pick one"},
      {one_key("alg: ES256, public_key: not a pem"),
       "tenants[0].keys[0].public_key: is not a PEM public key (-----BEGIN PUBLIC KEY-----)"},
      {one_key("alg: ES256, public_key_file: /nonexistent/key.pem"),
       "tenants[0].keys[0].public_key_file: cannot open /nonexistent/key.pem"},
      {one_key("kid: '', alg: HS256, secret: " + secret),
       "tenants[0].keys[0].kid: must be 1-256 visible ASCII characters"},
      {one_key("kid: 'a b', alg: HS256, secret: " + secret),
       "tenants[0].keys[0].kid: must be 1-256 visible ASCII characters"},
      {one_tenant("    limits: {sse_sessions: 0}\n"),
       "tenants[0].limits.sse_sessions: must be a whole number from 1 to 1000000"},
      {one_tenant("    limits: {sse_sessions: -1}\n"),
       "tenants[0].limits.sse_sessions: must be a whole number from 1 to 1000000"},
      {one_tenant("    limits: {sse_sessions: 1e3}\n"),
       "tenants[0].limits.sse_sessions: must be a whole number from 1 to 1000000"},
      {one_tenant("    limits: {sse_sessions_per_subject: many}\n"),
       "tenants[0].limits.sse_sessions_per_subject: must be a whole number from 1 to 1000000"},
      {one_tenant("    limits: {streams_per_session: 0}\n"),
       "tenants[0].limits.streams_per_session: must be a whole number from 1 to 128"},
      {one_tenant("    limits: {streams_per_session: 129}\n"),
       "tenants[0].limits.streams_per_session: must be a whole number from 1 to 128"},
      {one_tenant("    limits: {watches: [1]}\n"), "tenants[0].limits.watches: must be a single value"},
      {one_tenant("    limits: {max_body_bytes: 10}\n"),
       "tenants[0].limits.max_body_bytes: must be a whole number from 64 to 67108864"},
      {one_tenant("    limits: {publish_rate: 0}\n"),
       "tenants[0].limits.publish_rate: must be a number above 0 and at most 10000000"},
      {one_tenant("    limits: {publish_rate: .nan}\n"),
       "tenants[0].limits.publish_rate: must be a number above 0 and at most 10000000"},
      {one_tenant("    limits: {publish_burst: 0.5}\n"),
       "tenants[0].limits.publish_burst: must be at least 1 (one event)"},
      {one_tenant("    limits: {burst: 5}\n"), "tenants[0].limits.burst: unknown setting"},
      {one_tenant("    limits: 5\n"), "tenants[0].limits: must be a mapping"},
      {one_tenant("    allowed_origins: https://a.example\n"), "tenants[0].allowed_origins: must be a list"},
      {one_tenant("    allowed_origins: ['https://a.example/']\n"),
       "tenants[0].allowed_origins[0]: \"https://a.example/\" is not an origin (lower-case "
       "http(s)://host[:port], no path)"},
      {one_tenant("    allowed_origins: ['https://a.example', 'HTTPS://B.example']\n"),
       "tenants[0].allowed_origins[1]: \"HTTPS://B.example\" is not an origin (lower-case "
       "http(s)://host[:port], no path)"},
      {one_tenant("    allowed_origins: ['*']\n"),
       "tenants[0].allowed_origins[0]: \"*\" is not an origin (lower-case http(s)://host[:port], no path)"},
      {one_tenant("    allowed_origins: ['http://a:99999']\n"),
       "tenants[0].allowed_origins[0]: \"http://a:99999\" is not an origin (lower-case "
       "http(s)://host[:port], no path)"},
      {one_tenant("    notification_scopes: {stream: x}\n"),
       "tenants[0].notification_scopes: must be a list"},
      {one_tenant("    notification_scopes: [{scope: subject, field: /a}]\n"),
       "tenants[0].notification_scopes[0]: needs stream (a stream name, '*' allowed)"},
      {one_tenant("    notification_scopes: [{stream: 'in box', scope: subject, field: /a}]\n"),
       "tenants[0].notification_scopes[0].stream: grants are visible ASCII without spaces"},
      {one_tenant("    notification_scopes: [{stream: 'inbox:/a/*', scope: subject, field: /a}]\n"),
       "tenants[0].notification_scopes[0].stream: names streams only, not a path pattern"},
      {one_tenant("    notification_scopes: [{stream: inbox, field: /a}]\n"),
       "tenants[0].notification_scopes[0]: needs scope (subject or expression)"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: owner}]\n"),
       "tenants[0].notification_scopes[0].scope: must be subject or expression, not \"owner\""},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: subject}]\n"),
       "tenants[0].notification_scopes[0]: needs field (a JSON pointer such as /data/owner)"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: subject, field: data.owner}]\n"),
       "tenants[0].notification_scopes[0].field: is not a JSON pointer into the event (such as /data/owner)"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: subject, field: /a~2b}]\n"),
       "tenants[0].notification_scopes[0].field: is not a JSON pointer into the event (such as /data/owner)"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: subject, field: /a, expression: x}]\n"),
       "tenants[0].notification_scopes[0].expression: only for scope: expression"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: expression}]\n"),
       "tenants[0].notification_scopes[0]: needs expression (Lua)"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: expression, expression: '  '}]\n"),
       "tenants[0].notification_scopes[0].expression: must not be empty"},
      {one_tenant(
           "    notification_scopes: [{stream: inbox, scope: expression, expression: x, field: /a}]\n"),
       "tenants[0].notification_scopes[0].field: only for scope: subject"},
      {one_tenant("    notification_scopes:\n"
                  "      - {stream: inbox, scope: subject, field: /a}\n"
                  "      - {stream: inbox, scope: expression, expression: x}\n"),
       "tenants[0].notification_scopes[1].stream: \"inbox\" already has a scope (notification_scopes[0])"},
      {one_tenant("    notification_scopes: [{stream: inbox, scope: subject, field: /a, colour: blue}]\n"),
       "tenants[0].notification_scopes[0].colour: unknown setting"},
  }));
  INFO(rows.first);
  CHECK(error_of(rows.first) == rows.second);
}

TEST_CASE("tenant_config: an HS256 secret shorter than 32 bytes is refused without quoting it") {
  auto e = error_of(one_key("alg: HS256, secret: short-but-secret-31-bytes-long"));
  CHECK(e ==
        "tenants[0].keys[0].secret: is shorter than 32 bytes (RFC 7518 3.2); use a longer random secret");
  CHECK(e.find("short-but-secret") == std::string::npos);
  // 32 bytes exactly is enough.
  CHECK(error_of(one_key("alg: HS256, secret: " + std::string(32, 'x'))).empty());
}

TEST_CASE("tenant_config: a public key must suit its alg") {
  SECTION("an EC key for RS256") {
    CHECK(error_of("tenants:\n  - id: acme\n    keys:\n      - alg: RS256\n        public_key: " +
                   block(p256().public_pem, 10)) ==
          "tenants[0].keys[0].public_key: is not an RSA key, which RS256 needs");
  }
  SECTION("an RSA key for ES256") {
    temp_file f(rsa().public_pem);
    CHECK(error_of(one_key("alg: ES256, public_key_file: " + f.path())) ==
          "tenants[0].keys[0].public_key_file: is not an EC key, which ES256 needs (P-256)");
  }
  SECTION("a P-384 key for ES256") {
    temp_file f(testing::generate_ec("P-384").public_pem);
    CHECK(error_of(one_key("alg: ES256, public_key_file: " + f.path())) ==
          "tenants[0].keys[0].public_key_file: is not a P-256 key, which ES256 needs");
  }
  SECTION("a 1024-bit RSA key") {
    temp_file f(testing::generate_rsa(1024).public_pem);
    CHECK(error_of(one_key("alg: RS256, public_key_file: " + f.path())) ==
          "tenants[0].keys[0].public_key_file: is a 1024-bit RSA key; RS256 needs at least 2048 bits");
  }
  SECTION("a private key") {
    temp_file f(p256().private_pem);
    auto e = error_of(one_key("alg: ES256, public_key_file: " + f.path()));
    CHECK(e == "tenants[0].keys[0].public_key_file: holds a private key; configure only the public key");
    CHECK(e.find("BEGIN") == std::string::npos);
  }
  SECTION("two keys in one PEM") {
    temp_file f(p256().public_pem + rsa().public_pem);
    CHECK(error_of(one_key("alg: ES256, public_key_file: " + f.path())) ==
          "tenants[0].keys[0].public_key_file: holds more than one PEM block; give each key its own entry");
  }
  SECTION("a public key in place of an HS256 secret is only a (long) secret") {
    // Not refusable by shape; what matters is that it is never used for RS256.
    CHECK(error_of("tenants:\n  - id: acme\n    keys:\n      - alg: HS256\n        secret: " +
                   block(rsa().public_pem, 10))
              .empty());
  }
}

TEST_CASE("tenant_config: kids are unique within a tenant, tenant ids across tenants") {
  CHECK(error_of("tenants:\n"
                 "  - id: acme\n"
                 "    keys:\n"
                 "      - {kid: k1, alg: HS256, secret: " +
                 secret + "}\n      - {kid: k2, alg: HS256, secret: " + secret +
                 "}\n      - {kid: k1, alg: HS256, secret: " + secret + "}\n") ==
        "tenants[0].keys[2].kid: \"k1\" is already used by keys[0]");
  // Keys without a kid may be several; the same kid in two tenants is fine.
  CHECK(error_of("tenants:\n"
                 "  - id: acme\n"
                 "    keys:\n"
                 "      - {alg: HS256, secret: " +
                 secret + "}\n      - {alg: HS256, secret: " + secret +
                 "}\n"
                 "  - id: beta\n"
                 "    keys: [{kid: k1, alg: HS256, secret: " +
                 secret + "}]\n")
            .empty());
  CHECK(error_of("tenants:\n"
                 "  - id: acme\n"
                 "    keys: [{alg: HS256, secret: " +
                 secret +
                 "}]\n"
                 "  - id: acme\n"
                 "    keys: [{alg: HS256, secret: " +
                 secret + "}]\n") == "tenants[1].id: \"acme\" is already used by tenants[0]");
}

TEST_CASE("tenant_config: at most 16 keys a tenant") {
  std::string yaml = "tenants:\n  - id: acme\n    keys:\n";
  for (int i = 0; i < 17; ++i) yaml += "      - {alg: HS256, secret: " + secret + "}\n";
  CHECK(error_of(yaml) == "tenants[0].keys: has more than 16 keys");
}

TEST_CASE("tenant_config: ${env.NAME} is replaced in every string") {
  ::setenv("TIDINGS_TEST_TENANT_ID", "from-env", 1);
  ::setenv("TIDINGS_TEST_TENANT_SECRET", secret.c_str(), 1);
  ::setenv("TIDINGS_TEST_TENANT_RATE", "12", 1);
  std::vector<tenant_spec> out;
  auto err = parse(
      "tenants:\n"
      "  - id: ${env.TIDINGS_TEST_TENANT_ID}\n"
      "    keys: [{alg: HS256, secret: \"${env.TIDINGS_TEST_TENANT_SECRET}\"}]\n"
      "    limits: {publish_rate: \"${env.TIDINGS_TEST_TENANT_RATE}\"}\n",
      &out);
  REQUIRE_FALSE(err);
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "from-env");
  CHECK(out[0].keys[0].material == secret);
  CHECK(out[0].limits.publish_rate == 12);

  ::unsetenv("TIDINGS_TEST_TENANT_UNSET");
  CHECK(error_of(one_key("alg: HS256, secret: \"${env.TIDINGS_TEST_TENANT_UNSET}\"")) ==
        "tenants[0].keys[0].secret: environment variable TIDINGS_TEST_TENANT_UNSET is not set");
  // A secret from the environment that is too short is refused, unquoted.
  ::setenv("TIDINGS_TEST_TENANT_SHORT", "tiny-secret", 1);
  auto e = error_of(one_key("alg: HS256, secret: \"${env.TIDINGS_TEST_TENANT_SHORT}\""));
  CHECK(e.starts_with("tenants[0].keys[0].secret: is shorter than 32 bytes"));
  CHECK(e.find("tiny-secret") == std::string::npos);
  for (auto name : {"TIDINGS_TEST_TENANT_ID", "TIDINGS_TEST_TENANT_SECRET", "TIDINGS_TEST_TENANT_RATE",
                    "TIDINGS_TEST_TENANT_SHORT"})
    ::unsetenv(name);
}
