#include "sources/web/webhook_signature.hpp"

#include "sources/content_hash.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace tidings::sources::web {
namespace {

using namespace std::chrono;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool is_hex_digest(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> parse_seconds(std::string_view s) {
  s = trim(s);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// What the sender claims: its digests (lower-case hex) and, for the
// timestamped forms, the time it signed at. `error` when malformed.
struct claim {
  std::vector<std::string> digests;
  std::optional<std::int64_t> timestamp;
  std::string error;
};

claim parse_stripe(std::string_view value) {
  claim c;
  while (!value.empty()) {
    auto comma = value.find(',');
    auto part = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = part.substr(0, eq);
    auto val = part.substr(eq + 1);
    if (key == "t") c.timestamp = parse_seconds(val);
    // Other schemes (v0) are Stripe's test ones; only v1 signs with the secret.
    if (key == "v1" && is_hex_digest(val)) c.digests.push_back(lower(val));
  }
  if (!c.timestamp || c.digests.empty())
    c.error =
        "webhook signature malformed: Stripe-Signature must hold t=<unix seconds> and v1=<64 hex digits>";
  return c;
}

claim parse_hex(std::string_view value, const std::string& header) {
  claim c;
  value = trim(value);
  if (value.starts_with("sha256=")) value.remove_prefix(7);
  if (!is_hex_digest(value)) {
    c.error = "webhook signature malformed: " + header + " must be sha256=<64 hex digits>";
    return c;
  }
  c.digests.push_back(lower(value));
  return c;
}

bool same_digest(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::optional<signature_scheme> parse_signature_scheme(std::string_view name) {
  if (name == "github") return signature_scheme::github;
  if (name == "stripe") return signature_scheme::stripe;
  if (name == "hmac-sha256") return signature_scheme::hmac_sha256;
  return std::nullopt;
}

std::string scheme_name(signature_scheme scheme) {
  switch (scheme) {
    case signature_scheme::github:
      return "github";
    case signature_scheme::stripe:
      return "stripe";
    case signature_scheme::hmac_sha256:
      break;
  }
  return "hmac-sha256";
}

std::string signature_config::signature_header() const {
  switch (scheme) {
    case signature_scheme::github:
      return "X-Hub-Signature-256";
    case signature_scheme::stripe:
      return "Stripe-Signature";
    case signature_scheme::hmac_sha256:
      break;
  }
  return header.empty() ? "X-Signature-256" : header;
}

std::string hmac_sha256_hex(std::string_view secret, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &len);
  return lower_hex(mac.data(), len);
}

signature_verdict check_signature(const signature_config& cfg, const header_lookup& headers,
                                  std::string_view body, system_clock::time_point now) {
  const auto header = cfg.signature_header();
  const auto* value = headers(lower(header));
  if (value == nullptr) return {"webhook signature missing: expected header " + header, {}};
  claim c = cfg.scheme == signature_scheme::stripe ? parse_stripe(*value) : parse_hex(*value, header);
  if (!c.error.empty()) return {c.error, {}};
  if (cfg.scheme == signature_scheme::hmac_sha256 && !cfg.timestamp_header.empty()) {
    const auto* t = headers(lower(cfg.timestamp_header));
    if (t == nullptr) return {"webhook timestamp missing: expected header " + cfg.timestamp_header, {}};
    c.timestamp = parse_seconds(*t);
    if (!c.timestamp)
      return {"webhook timestamp malformed: " + cfg.timestamp_header + " must be unix seconds", {}};
  }
  std::string signed_text;
  if (c.timestamp) {
    // Far outside any window (and kept from overflowing the subtraction).
    constexpr std::int64_t latest = std::int64_t{1} << 40;
    if (*c.timestamp < 0 || *c.timestamp > latest)
      return {"webhook timestamp " + std::to_string(*c.timestamp) + " is not a time in unix seconds", {}};
    const auto age = duration_cast<seconds>(now.time_since_epoch()).count() - *c.timestamp;
    if (age > cfg.window.count() || -age > cfg.window.count())
      return {"webhook timestamp " + std::to_string(*c.timestamp) + " is " +
                  std::to_string(age < 0 ? -age : age) + " s " + (age < 0 ? "ahead" : "old") +
                  ", outside the " + std::to_string(cfg.window.count()) + " s replay window",
              {}};
    signed_text = std::to_string(*c.timestamp) + ".";
  }
  signed_text.append(body);
  // Every secret against every digest, so the time taken says nothing of
  // which (if any) was close.
  bool matched = false;
  auto against = [&](const std::string& secret) {
    const auto expected = hmac_sha256_hex(secret, signed_text);
    for (const auto& d : c.digests)
      if (same_digest(expected, d)) matched = true;
  };
  against(cfg.secret);
  for (const auto& s : cfg.previous_secrets) against(s);
  if (!matched) return {"webhook signature does not match the body (" + header + ")", {}};
  // The delivery is what was signed, not the digest that matched: a header
  // may carry several (one per secret), and dropping one must not make the
  // same delivery new.
  return {{}, sha256_hex(signed_text)};
}

std::optional<replay_guard::time_point> replay_guard::remember(const std::string& key, time_point now,
                                                               seconds window) {
  expire(now, window);
  if (auto it = seen_.find(key); it != seen_.end()) return it->second;
  if (seen_.size() >= capacity_ && !order_.empty()) {
    seen_.erase(order_.front().second);
    order_.pop_front();
  }
  seen_.emplace(key, now);
  order_.emplace_back(now, key);
  return std::nullopt;
}

// Twice the window: a timestamp may be as far ahead of now as behind, so a
// signature accepted now can stay within the window that long (and a second
// more: timestamps are whole seconds).
void replay_guard::expire(time_point now, seconds window) {
  while (!order_.empty() && now - order_.front().first > 2 * window + seconds(1)) {
    seen_.erase(order_.front().second);
    order_.pop_front();
  }
}

}  // namespace tidings::sources::web
