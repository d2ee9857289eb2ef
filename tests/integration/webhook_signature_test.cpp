// Hardened webhooks against the real tidingsd (issue 24): GitHub- and
// Stripe-signed calls fire the resource, a missing or wrong signature, a
// stale timestamp and a replayed delivery are refused with their reasons,
// and a token the config leaves empty is generated once, kept across a
// restart, shown in full only by GET /admin/v1/webhooks and never logged.
// Signatures are computed here with OpenSSL's HMAC, apart from the code
// under test.

#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <chrono>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

std::string hmac_hex(const std::string& secret, const std::string& message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &len);
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    static constexpr char hex[] = "0123456789abcdef";
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 0xf];
  }
  return out;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

client::http_response post_hook(const client::endpoint& ep, const std::string& token, const std::string& body,
                                const client::header_list& headers = {}) {
  return client::request(ep, "POST", "/webhooks/resource-updated/" + token, body, headers);
}

std::string error_of(const client::http_response& r) {
  return json::parse(r.body).value("error", std::string());
}

json webhooks_of(const client::endpoint& ep) {
  auto r = client::request(ep, "GET", "/admin/v1/webhooks");
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body)["webhooks"];
}

const char* signed_config = R"(
upstreams:
  resources:
    - uri: hook://github
      watch:
        strategy:
          type: webhook
          token: github-token-0123456789
          signature: {scheme: github, secret: "gh-secret", previous_secrets: ["gh-old-secret"]}
    - uri: hook://stripe
      watch:
        strategy:
          type: webhook
          token: stripe-token-0123456789
          signature: {scheme: stripe, secret: whsec_test, window_s: 60}
    - uri: hook://generated
      watch: {strategy: {type: webhook}}
)";

}  // namespace

TEST_CASE(
    "signed webhooks fire, bad signatures, stale timestamps and replays are refused, and a generated "
    "token survives a restart without ever being logged",
    "[sources][webhook]") {
  temp_dir dir;
  auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << signed_config;
  std::string generated;
  {
    tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
    auto ep = node.endpoint();
    start_watch_ok(ep, {{"name", "gh"}, {"uri", "hook://github"}, {"debounce_ms", 20}});
    client::sse_stream notices(ep, sse_target({"watch:gh"}));
    await_hello(notices);

    const std::string body = R"({"ref":"refs/heads/main","after":"1a2b"})";
    auto unsigned_call = post_hook(ep, "github-token-0123456789", body);
    CHECK(unsigned_call.status == 401);
    CHECK(error_of(unsigned_call) == "webhook signature missing: expected header X-Hub-Signature-256");
    auto wrong = post_hook(ep, "github-token-0123456789", body,
                           {{"X-Hub-Signature-256", "sha256=" + hmac_hex("not-the-secret", body)}});
    CHECK(wrong.status == 401);
    CHECK(error_of(wrong) == "webhook signature does not match the body (X-Hub-Signature-256)");
    // A signature for another body: the body is what is signed.
    auto moved = post_hook(ep, "github-token-0123456789", body + " ",
                           {{"X-Hub-Signature-256", "sha256=" + hmac_hex("gh-secret", body)}});
    CHECK(moved.status == 401);

    const client::header_list good{{"X-Hub-Signature-256", "sha256=" + hmac_hex("gh-secret", body)}};
    auto fired = post_hook(ep, "github-token-0123456789", body, good);
    INFO(fired.body);
    CHECK(fired.status == 200);
    auto notice = await_notices(notices, 1, 10s);
    CHECK(notice.size() == 1);
    auto replayed = post_hook(ep, "github-token-0123456789", body, good);
    CHECK(replayed.status == 409);
    CHECK(error_of(replayed).starts_with("webhook delivery replayed"));
    // The secret before a rotation still signs.
    const std::string second = R"({"ref":"refs/heads/main","after":"3c4d"})";
    CHECK(post_hook(ep, "github-token-0123456789", second,
                    {{"X-Hub-Signature-256", "sha256=" + hmac_hex("gh-old-secret", second)}})
              .status == 200);

    const std::string event = R"({"id":"evt_1","type":"invoice.paid"})";
    auto stripe_at = [&](std::int64_t t) {
      return client::header_list{
          {"Stripe-Signature",
           "t=" + std::to_string(t) + ",v1=" + hmac_hex("whsec_test", std::to_string(t) + "." + event)}};
    };
    CHECK(post_hook(ep, "stripe-token-0123456789", event, stripe_at(unix_now())).status == 200);
    auto stale = post_hook(ep, "stripe-token-0123456789", event, stripe_at(unix_now() - 120));
    CHECK(stale.status == 401);
    CHECK(error_of(stale).find("outside the 60 s replay window") != std::string::npos);

    auto hooks = webhooks_of(ep);
    REQUIRE(hooks.size() == 3);
    CHECK(hooks[0]["uri"] == "hook://github");
    CHECK(hooks[0]["signature"] == "github");
    CHECK(hooks[0]["generated"] == false);
    CHECK(hooks[0]["subscribed"] == true);
    CHECK(hooks[1]["signature"] == "stripe");
    CHECK(hooks[2]["uri"] == "hook://generated");
    CHECK(hooks[2]["generated"] == true);
    CHECK(hooks[2]["signature"].is_null());
    generated = hooks[2]["token"].get<std::string>();
    CHECK(generated.size() == 32);
    CHECK(hooks[2]["url_path"] == "/webhooks/resource-updated/" + generated);
    CHECK(post_hook(ep, generated, "{}").status == 200);
    REQUIRE(node.await_log("\"webhook.token_generated\"", 5s));
    // Not the token, not a part of it: the line has no token field at all.
    const auto log = node.log();
    const auto at = log.find("\"webhook.token_generated\"");
    const auto line = log.substr(log.rfind('\n', at) + 1, log.find('\n', at) - log.rfind('\n', at) - 1);
    CHECK(line.find("\"uri\":\"hook://generated\"") != std::string::npos);
    CHECK(line.find("\"token\"") == std::string::npos);
    CHECK(log.find(generated.substr(0, 12)) == std::string::npos);
    CHECK(node.terminate() == 0);
  }
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  auto ep = node.endpoint();
  auto hooks = webhooks_of(ep);
  REQUIRE(hooks.size() == 3);
  CHECK(hooks[2]["token"] == generated);
  CHECK(post_hook(ep, generated, "{}").status == 200);
  REQUIRE(node.await_log("\"webhook.fired\"", 5s));
  CHECK(node.log().find(generated.substr(0, 12)) == std::string::npos);
}
