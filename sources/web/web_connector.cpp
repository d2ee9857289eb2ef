#include "sources/web/web_connector.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>

#include <boost/asio/post.hpp>

#include "core/resource_routing.hpp"
#include "logging/log.hpp"
#include "sources/web/backend_read.hpp"
#include "sources/web/nats_upstream.hpp"
#include "sources/web/poll_upstream.hpp"
#include "sources/web/resource_template.hpp"
#include "sources/web/sql_poll_upstream.hpp"
#include "sources/web/webhook_upstream.hpp"

namespace tidings::sources::web {

std::string random_uuid_v4() {
  std::array<unsigned char, 16> b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1)
    throw std::runtime_error("no random bytes for a token");
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[b[i] >> 4];
    out += hex[b[i] & 0xf];
  }
  return out;
}

std::string generated_token(const std::string& key, std::string_view uri) {
  if (key.empty()) return random_uuid_v4();
  // A label of its own, so the token is no digest anything else computes
  // with the same key (the cluster secret signs member records).
  return hmac_sha256_hex(key, "tidings webhook token\n" + std::string(uri)).substr(0, 32);
}

web_connector::web_connector(boost::asio::io_context& ioc, web_config cfg) : ioc_(ioc), cfg_(std::move(cfg)) {
  for (auto& r : cfg_.resources) {
    if (r.is_template)
      if (auto parsed = core::uri_template::parse(r.uri, nullptr))
        templates_.emplace(r.uri, std::move(*parsed));
    if (r.polled() && r.interval < cfg_.poll_floor) {
      logging::warn("source.poll_interval_raised",
                    {{"uri", r.uri},
                     {"configured_ms", static_cast<std::int64_t>(r.interval.count())},
                     {"interval_ms", static_cast<std::int64_t>(cfg_.poll_floor.count())}});
      r.interval = cfg_.poll_floor;
    }
    if (r.kind == strategy::webhook && r.token.empty()) {
      r.token = generated_token(cfg_.token_key, r.uri);
      generated_.insert(r.uri);
      // A token is a credential: not even a hint of it goes to the log.
      logging::info("webhook.token_generated", {{"uri", r.uri}, {"shown_by", "GET /admin/v1/webhooks"}});
    }
  }
}

web_connector::~web_connector() {
  stop();
}

void web_connector::start(std::function<void(std::string error)> done) {
  // Nothing to connect to; answered later like every connector's start.
  boost::asio::post(ioc_, [done = std::move(done)] { done({}); });
}

std::vector<resource_info> web_connector::resources() const {
  std::vector<resource_info> out;
  for (const auto& r : cfg_.resources) {
    resource_info info;
    info.uri = r.uri;
    info.template_ = r.is_template;
    info.name = r.name;
    info.description = r.description;
    info.example = core::description_example(r.description);
    info.mime_type = r.mime_type;
    info.server = name_;
    info.subscribable = true;
    out.push_back(std::move(info));
  }
  return out;
}

const web_resource_config* web_connector::find(std::string_view uri) const {
  for (const auto& r : cfg_.resources)
    if (!r.is_template && r.uri == uri) return &r;
  return nullptr;
}

const web_resource_config* web_connector::owner(std::string_view uri) const {
  if (const auto* r = find(uri)) return r;
  // The first template that matches, as routing chose this connector.
  for (const auto& r : cfg_.resources) {
    if (!r.is_template) continue;
    auto t = templates_.find(r.uri);
    if (t != templates_.end() && t->second.match(uri)) return &r;
  }
  return nullptr;
}

std::optional<web_resource_config> web_connector::resolve(std::string_view uri, std::string* error) const {
  const auto* r = owner(uri);
  if (!r) {
    *error = std::string(uri) + " is not a configured resource, nor one of a configured template";
    return std::nullopt;
  }
  if (!r->is_template) return *r;
  return instantiate(*r, templates_.at(r->uri), uri, error);
}

bool web_connector::subscribed(const web_resource_config& r) const {
  return std::any_of(live_.begin(), live_.end(), [&](const auto& entry) { return owner(entry.first) == &r; });
}

std::unique_ptr<upstream> web_connector::open(const std::string& uri, std::string* error) {
  auto resolved = resolve(uri, error);
  if (!resolved) return nullptr;
  const auto* r = &*resolved;
  if (r->kind == strategy::poll) return std::make_unique<poll_upstream>(ioc_, *r);
  if (r->kind == strategy::sql_polling) return std::make_unique<sql_poll_upstream>(ioc_, *r);
  if (r->kind == strategy::nats_topic) return std::make_unique<nats_upstream>(ioc_, *r);
  if (auto old = live_.find(uri); old != live_.end()) {
    // The registry opens a key again only after the previous source ended;
    // should a close still be on its way, the new upstream takes over.
    old->second->close();
  }
  auto up = std::make_unique<webhook_upstream>(ioc_, *r, [this, uri] { live_.erase(uri); });
  live_[uri] = up.get();
  return up;
}

void web_connector::read(const std::string& uri, std::function<void(read_outcome)> done) {
  std::string error;
  auto resolved = resolve(uri, &error);
  if (!resolved) return done(read_outcome::failed(error));
  const auto* r = &*resolved;
  if (r->kind == strategy::sql_polling && !r->backend) {
    // Its state is the tracking query's value: one query on a connection of
    // its own, shared by the reads that come while it runs (so a burst of
    // reads is one connection to the database), dropped once answered.
    auto [it, fresh] = one_shots_.try_emplace(uri);
    if (fresh) it->second = {next_one_shot_++, std::make_unique<sql_poll_upstream>(ioc_, *r)};
    return it->second.second->read(
        [this, uri, id = it->second.first, done = std::move(done)](read_outcome o) {
          done(std::move(o));
          // Only this one: a later read may have made the next by then.
          boost::asio::post(ioc_, [this, uri, id, alive = std::weak_ptr<char>(lifetime_)] {
            if (alive.expired()) return;
            if (auto f = one_shots_.find(uri); f != one_shots_.end() && f->second.first == id)
              one_shots_.erase(f);
          });
        });
  }
  if (!r->backend)
    return done(read_outcome::failed(uri + " has no backend to read; it only announces changes"));
  read_backend(ioc_, *r, std::move(done));
}

void web_connector::stop() {
  // Each live upstream's close() erases itself.
  while (!live_.empty()) live_.begin()->second->close();
  one_shots_.clear();  // their destructors close them: no answer comes after stop
}

void web_connector::update_tokens(const std::vector<webhook_tokens>& tokens) {
  for (const auto& t : tokens) {
    auto it = std::find_if(cfg_.resources.begin(), cfg_.resources.end(),
                           [&](const web_resource_config& r) { return r.uri == t.uri; });
    if (it == cfg_.resources.end() || it->kind != strategy::webhook) continue;
    bool changed = it->previous_tokens != t.previous_tokens || it->signature != t.signature;
    it->previous_tokens = t.previous_tokens;
    it->signature = t.signature;
    if (!t.token.empty()) {
      changed = changed || it->token != t.token;
      it->token = t.token;
      generated_.erase(t.uri);
    } else if (!generated_.contains(t.uri)) {
      // The configured token was removed: it must stop working.
      it->token = generated_token(cfg_.token_key, t.uri);
      generated_.insert(t.uri);
      changed = true;
    }
    if (changed)
      logging::info("webhook.tokens_updated",
                    {{"uri", it->uri},
                     {"generated", generated_.contains(t.uri)},
                     {"previous_tokens", static_cast<std::uint64_t>(it->previous_tokens.size())},
                     {"signature", it->signature ? scheme_name(it->signature->scheme) : "none"}});
  }
}

webhook_answer web_connector::fire(const webhook_call& call) {
  const web_resource_config* match = nullptr;
  auto check = [&](const std::string& candidate, const web_resource_config& r) {
    // Every candidate is compared, equal lengths with CRYPTO_memcmp, so the
    // time taken does not tell how much of a token was right.
    bool equal = candidate.size() == call.token.size() && !candidate.empty() &&
                 CRYPTO_memcmp(candidate.data(), call.token.data(), call.token.size()) == 0;
    if (equal) match = &r;
  };
  for (const auto& r : cfg_.resources) {
    if (r.kind != strategy::webhook) continue;
    check(r.token, r);
    for (const auto& old : r.previous_tokens) check(old, r);
  }
  if (!match) {
    // Not even a part of it: it may be a token that was valid once.
    logging::info("webhook.unknown_token", {{"length", static_cast<std::uint64_t>(call.token.size())}});
    return {404, {}, "unknown webhook token"};
  }
  // A template's token names one of its URIs in ?uri=.
  std::string uri = match->uri;
  if (match->is_template) {
    if (call.uri.empty())
      return {400, {}, "this token is resource template " + match->uri + "'s: name the resource with ?uri="};
    // Only a URI this template serves: not an exact resource's, nor one an
    // earlier template matches (each has its own token and signature).
    if (owner(call.uri) != match)
      return {400, {}, "?uri=" + std::string(call.uri) + " is not a URI of resource template " + match->uri};
    uri = call.uri;
  }
  if (match->signature) {
    const auto& sig = *match->signature;
    auto verdict = check_signature(sig, call.headers, call.body, call.now);
    if (!verdict.error.empty()) {
      logging::warn("webhook.signature_refused", {{"uri", match->uri}, {"error", verdict.error}});
      return {401, {}, verdict.error};
    }
    if (auto first = replays_[match->uri].remember(verdict.replay_key, call.now, sig.window)) {
      auto ago = std::chrono::duration_cast<std::chrono::seconds>(call.now - *first).count();
      auto error = "webhook delivery replayed: this signature was accepted " + std::to_string(ago) + " s ago";
      logging::warn("webhook.replay_refused", {{"uri", match->uri}, {"error", error}});
      return {409, {}, error};
    }
  }
  auto live = live_.find(uri);
  logging::info("webhook.fired", {{"uri", uri}, {"subscribed", live != live_.end()}});
  if (live != live_.end()) live->second->fire();
  return {200, uri, {}};
}

std::vector<webhook_info> web_connector::webhooks() const {
  std::vector<webhook_info> out;
  for (const auto& r : cfg_.resources) {
    if (r.kind != strategy::webhook) continue;
    out.push_back({r.uri, r.is_template, r.token, generated_.contains(r.uri), r.previous_tokens.size(),
                   r.signature ? scheme_name(r.signature->scheme) : "", subscribed(r)});
  }
  return out;
}

}  // namespace tidings::sources::web
