// Webhook signatures (sources/web/webhook_signature): GitHub's, Stripe's and
// a generic HMAC header, each checked against digests computed outside
// (GitHub's documented example; openssl dgst -sha256 -hmac for the others),
// the replay window with a fake clock, and secret rotation.

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>

#include "sources/web/webhook_signature.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings::sources::web;
using clock_type = std::chrono::system_clock;

struct headers {
  std::map<std::string, std::string> values;  // lower-case names
  header_lookup lookup() const {
    return [this](const std::string& name) -> const std::string* {
      auto it = values.find(name);
      return it == values.end() ? nullptr : &it->second;
    };
  }
};

clock_type::time_point at(std::int64_t unix_seconds) {
  return clock_type::time_point(std::chrono::seconds(unix_seconds));
}

signature_config config(signature_scheme scheme, std::string secret) {
  signature_config c;
  c.scheme = scheme;
  c.secret = std::move(secret);
  return c;
}

// openssl dgst -sha256 -hmac whsec_test over "1492774577.{"id":"evt_1"}" and over the body alone.
constexpr auto stripe_digest = "7656fc2882a7ca0a651666b36bf2f2f22ee204f54f608f227498a2419f2890b2";
constexpr auto body_digest = "030fa3b2413d1993c551364bd53bb9b3edb5c0c34d55dba6ada6041245632811";
constexpr auto stripe_body = R"({"id":"evt_1"})";

}  // namespace

TEST_CASE("GitHub's X-Hub-Signature-256 as its documentation computes it", "[webhook_signature]") {
  const auto cfg = config(signature_scheme::github, "It's a Secret to Everybody");
  headers h{
      {{"x-hub-signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}}};
  auto good = check_signature(cfg, h.lookup(), "Hello, World!", at(0));
  CHECK(good.error.empty());
  // The delivery is its body (sha256sum of "Hello, World!").
  CHECK(good.replay_key == "dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f");
  // Upper-case hex is the same digest.
  h.values["x-hub-signature-256"] = "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17";
  CHECK(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error.empty());

  CHECK(check_signature(cfg, h.lookup(), "Hello, World?", at(0)).error ==
        "webhook signature does not match the body (X-Hub-Signature-256)");
  CHECK(
      check_signature(config(signature_scheme::github, "another secret"), h.lookup(), "Hello, World!", at(0))
          .error == "webhook signature does not match the body (X-Hub-Signature-256)");
  h.values["x-hub-signature-256"] = "sha1=abc";
  CHECK(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error ==
        "webhook signature malformed: X-Hub-Signature-256 must be sha256=<64 hex digits>");
  h.values.clear();
  CHECK(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error ==
        "webhook signature missing: expected header X-Hub-Signature-256");
}

TEST_CASE("Stripe's timestamped signature: any v1 may match, the timestamp must be within the window",
          "[webhook_signature]") {
  const auto cfg = config(signature_scheme::stripe, "whsec_test");
  headers h{{{"stripe-signature", std::string("t=1492774577,v1=") + std::string(64, '0') +
                                      ",v1=" + stripe_digest + ",v0=" + std::string(64, 'f')}}};
  auto good = check_signature(cfg, h.lookup(), stripe_body, at(1492774577 + 300));
  CHECK(good.error.empty());
  // What was signed, whichever v1 matched: the same delivery with one
  // signature fewer is the same delivery (sha256sum of "<t>.<body>").
  CHECK(good.replay_key == "3f4ba115b7c5d8fcb3c09a694a332cace607c5881666c79f97e5c221fac6869a");
  headers fewer{{{"stripe-signature", std::string("t=1492774577,v1=") + stripe_digest}}};
  CHECK(check_signature(cfg, fewer.lookup(), stripe_body, at(1492774577)).replay_key == good.replay_key);
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577 - 300)).error.empty());

  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577 + 301)).error ==
        "webhook timestamp 1492774577 is 301 s old, outside the 300 s replay window");
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577 - 400)).error ==
        "webhook timestamp 1492774577 is 400 s ahead, outside the 300 s replay window");
  // The timestamp is signed: moving it to now breaks the signature.
  h.values["stripe-signature"] = std::string("t=1492774600,v1=") + stripe_digest;
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774600)).error ==
        "webhook signature does not match the body (Stripe-Signature)");
  h.values["stripe-signature"] = std::string("t=-9223372036854775807,v1=") + stripe_digest;
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577)).error ==
        "webhook timestamp -9223372036854775807 is not a time in unix seconds");
  h.values["stripe-signature"] = std::string("v1=") + stripe_digest;
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577)).error ==
        "webhook signature malformed: Stripe-Signature must hold t=<unix seconds> and v1=<64 hex digits>");
}

TEST_CASE("a generic HMAC header, bare or with its own timestamp header", "[webhook_signature]") {
  auto cfg = config(signature_scheme::hmac_sha256, "whsec_test");
  cfg.header = "X-Tidings-Signature";
  headers h{{{"x-tidings-signature", body_digest}}};
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(0)).error.empty());
  h.values["x-tidings-signature"] = std::string("sha256=") + body_digest;
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(0)).error.empty());

  cfg.timestamp_header = "X-Tidings-Timestamp";
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(0)).error ==
        "webhook timestamp missing: expected header X-Tidings-Timestamp");
  h.values["x-tidings-timestamp"] = "soon";
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(0)).error ==
        "webhook timestamp malformed: X-Tidings-Timestamp must be unix seconds");
  h.values["x-tidings-timestamp"] = "1492774577";
  h.values["x-tidings-signature"] = stripe_digest;  // over "<t>.<body>"
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577)).error.empty());
  CHECK(check_signature(cfg, h.lookup(), stripe_body, at(1492774577 + 1000)).error.find("replay window") !=
        std::string::npos);
  CHECK(config(signature_scheme::hmac_sha256, "s").signature_header() == "X-Signature-256");
}

TEST_CASE("a rotated secret: the previous one still signs until it is removed", "[webhook_signature]") {
  auto cfg = config(signature_scheme::github, "new secret");
  cfg.previous_secrets = {"It's a Secret to Everybody"};
  headers h{
      {{"x-hub-signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}}};
  CHECK(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error.empty());
  cfg.previous_secrets.clear();
  CHECK_FALSE(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error.empty());
  h.values["x-hub-signature-256"] = "sha256=" + hmac_sha256_hex("new secret", "Hello, World!");
  CHECK(check_signature(cfg, h.lookup(), "Hello, World!", at(0)).error.empty());
}

TEST_CASE("a signature is accepted once within twice the window, then forgotten, and the guard is bounded",
          "[webhook_signature]") {
  replay_guard guard(3);
  CHECK_FALSE(guard.remember("a", at(1000), 300s).has_value());
  auto again = guard.remember("a", at(1601), 300s);  // 600 s and a second: still within
  REQUIRE(again);
  CHECK(*again == at(1000));
  // Forgotten after that: its timestamp is stale by then.
  CHECK_FALSE(guard.remember("a", at(1602), 300s).has_value());
  CHECK_FALSE(guard.remember("b", at(1602), 300s).has_value());
  CHECK_FALSE(guard.remember("c", at(1603), 300s).has_value());
  CHECK_FALSE(guard.remember("d", at(1604), 300s).has_value());  // full: "a" (the oldest) goes early
  CHECK(guard.size() == 3);
  CHECK_FALSE(guard.remember("a", at(1605), 300s).has_value());
  CHECK(guard.remember("d", at(1606), 300s).has_value());
}
