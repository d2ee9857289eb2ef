#include "sources/web/nats_upstream.hpp"

#include <nats/nats.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "core/read_extraction.hpp"
#include "logging/log.hpp"
#include "net/tls_context.hpp"
#include "sources/web/backend_read.hpp"

namespace tidings::sources::web {
namespace {

// Enough that a burst between two reads is not cut; a longer one shows as a GAP.
constexpr std::size_t max_events_kept = 256;
// Between reconnect attempts while the server is away.
constexpr std::int64_t reconnect_wait_ms = 1000;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The first server of a nats_topic url, "host:port".
std::string first_server(std::string_view url) {
  return std::string(nats_address(url.substr(0, url.find(','))));
}

// Its host alone ("[::1]:4222" -> "::1").
std::string first_host(std::string_view url) {
  auto server = first_server(url);
  if (server.starts_with('[')) return server.substr(1, server.find(']') - 1);
  return server.substr(0, server.find(':'));
}

// The verification result of a TLS handshake that failed, from libnats's
// last error on this thread ("SSL handshake error: 20:unable to get local
// issuer certificate:depth=0:..."); nullopt when something else failed.
std::optional<long> failed_verification() {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  if (!text) return std::nullopt;
  static constexpr std::string_view handshake = "SSL handshake error: ";
  const char* at = std::strstr(text, handshake.data());
  if (!at) return std::nullopt;
  const char* code = at + handshake.size();
  char* end = nullptr;
  long verify = std::strtol(code, &end, 10);
  if (end == code || *end != ':') return std::nullopt;
  return verify;
}

// libnats's TLS: secure when the url says tls:// or any setting is given;
// the CA file or the system's bundle, the client certificate, and the first
// server's host name checked (libnats checks none unless told).
natsStatus set_tls(natsOptions* opts, const nats_topic_config& cfg) {
  const auto& t = cfg.tls;
  if (!t.any() && cfg.url.find("tls://") == std::string::npos) return NATS_OK;
  auto s = natsOptions_SetSecure(opts, true);
  // Without a ca_file, the system's bundle; a machine without one trusts
  // nothing, and the handshake says "unknown CA".
  const char* trusted = t.ca_file.empty() ? X509_get_default_cert_file() : t.ca_file.c_str();
  if (s == NATS_OK && (!t.ca_file.empty() || ::access(trusted, R_OK) == 0))
    s = natsOptions_LoadCATrustedCertificates(opts, trusted);
  if (s == NATS_OK && !t.client_cert.empty())
    s = natsOptions_LoadCertificatesChain(opts, t.client_cert.c_str(), t.client_key.c_str());
  if (s == NATS_OK && t.insecure_skip_verify) s = natsOptions_SkipServerVerification(opts, true);
  if (s == NATS_OK && !t.insecure_skip_verify)
    s = natsOptions_SetExpectedHostname(opts, first_host(cfg.url).c_str());
  return s;
}

std::string describe(natsStatus s) {
  std::string out = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  std::string detail = nats_GetLastError(&last) ? nats_GetLastError(&last) : "";
  // "(conn.c:2088): No server available for connection": the client's source line is no help.
  if (detail.starts_with('(')) {
    auto end = detail.find("): ");
    if (end != std::string::npos) detail.erase(0, end + 3);
  }
  // Named as the HTTP upstreams name it.
  if (auto verify = failed_verification())
    return "TLS handshake failed: " + net::tls_failure_reason(*verify, {});
  if (!detail.empty() && detail != out) out += " (" + detail + ")";
  return out;
}

}  // namespace

// Shared by the upstream (sources thread) and libnats' threads. The
// callbacks get a number, not a pointer: they look the bridge up here, so
// one that comes after the upstream is gone finds nothing.
struct nats_upstream::bridge {
  explicit bridge(boost::asio::io_context& io) : ioc(io) {}

  // Runs `f` on the sources thread unless closed (checked again there).
  template <class F>
  void post(F f) {
    std::lock_guard lock(mutex);
    if (closed) return;
    boost::asio::post(ioc, std::move(f));
  }

  boost::asio::io_context& ioc;
  nats_upstream* owner = nullptr;  // the sources thread's; null once closed
  std::mutex mutex;                // guards closed, conn and sub
  bool closed = false;
  natsConnection* conn = nullptr;
  natsSubscription* sub = nullptr;
  std::atomic<std::uint64_t> unread{0};
  std::atomic<bool> posted{false};  // a handoff of `unread` is on its way
};

namespace {

using bridge_ptr = std::shared_ptr<nats_upstream::bridge>;

struct bridge_table {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, std::weak_ptr<nats_upstream::bridge>> live;
  std::uintptr_t next = 1;
};

// Never destroyed: libnats' threads may still look a bridge up while the
// process exits.
bridge_table& table() {
  static auto* t = new bridge_table;
  return *t;
}

std::uintptr_t enlist(const bridge_ptr& b) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  auto id = t.next++;
  t.live[id] = b;
  return id;
}

void delist(std::uintptr_t id) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  t.live.erase(id);
}

bridge_ptr find(void* closure) {
  auto& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.live.find(reinterpret_cast<std::uintptr_t>(closure));
  return it == t.live.end() ? nullptr : it->second.lock();
}

void nats_message(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  natsMsg_Destroy(msg);  // not inspected: any message means "changed"
  auto b = find(closure);
  if (!b) return;
  b->unread.fetch_add(1);
  if (b->posted.exchange(true)) return;
  b->post([b] {
    b->posted = false;
    auto n = b->unread.exchange(0);
    if (b->owner && b->owner->subscribed() && n > 0) b->owner->on_messages(n);
  });
}

void nats_disconnected(natsConnection* nc, void* closure) {
  auto b = find(closure);
  if (!b) return;
  const char* text = nullptr;
  natsConnection_GetLastError(nc, &text);
  std::string why = text && *text ? text : "the connection was lost";
  b->post([b, why] {
    if (b->owner && b->owner->subscribed()) b->owner->on_disconnected(why);
  });
}

void nats_reconnected(natsConnection*, void* closure) {
  auto b = find(closure);
  if (!b) return;
  b->post([b] {
    if (b->owner && b->owner->subscribed()) b->owner->on_reconnected();
  });
}

// Destroying a connection may wait for its reconnect thread (up to a
// connect timeout): never on the sources thread.
void destroy_later(natsConnection* conn, natsSubscription* sub) {
  if (!conn && !sub) return;
  std::thread([conn, sub] {
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(conn);
  }).detach();
}

}  // namespace

nats_upstream::nats_upstream(boost::asio::io_context& ioc, const web_resource_config& resource)
    : ioc_(ioc), resource_(resource), events_(max_events_kept) {}

nats_upstream::~nats_upstream() {
  close();
}

void nats_upstream::subscribe(handlers h) {
  if (closed_) return;
  handlers_ = std::move(h);
  subscribed_ = false;
  close_bridge();
  auto b = std::make_shared<bridge>(ioc_);
  b->owner = this;
  bridge_ = b;
  auto id = enlist(b);
  bridge_id_ = id;
  const auto cfg = *resource_.nats;  // a copy for the thread
  // Connecting blocks (up to the timeout): on a thread of its own, which
  // hands the connection over unless the upstream closed meanwhile.
  std::thread([b, id, cfg] {
    // A number in pointer's clothing, never dereferenced: find() looks it up.
    auto* closure = reinterpret_cast<void*>(id);  // NOLINT(performance-no-int-to-ptr)
    natsOptions* opts = nullptr;
    natsConnection* conn = nullptr;
    natsSubscription* sub = nullptr;
    auto s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, cfg.url.c_str());
    if (s == NATS_OK) s = natsOptions_SetName(opts, "tidings");
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, cfg.timeout.count());
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, reconnect_wait_ms);
    if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, nats_disconnected, closure);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, nats_reconnected, closure);
    std::string error;
    if (s == NATS_OK) {
      s = set_tls(opts, cfg);
      if (s != NATS_OK) error = "TLS settings refused: " + describe(s);
    }
    if (s == NATS_OK) s = natsConnection_Connect(&conn, opts);
    if (s != NATS_OK && error.empty()) {
      // Counted as the HTTP client counts its own (tidings_upstream_tls_failures_total).
      if (auto verify = failed_verification())
        net::count_tls_failure(first_server(cfg.url), net::tls_failure_kind(*verify));
      error = "cannot connect to " + cfg.url + ": " + describe(s);
    }
    if (s == NATS_OK) s = natsConnection_Subscribe(&sub, conn, cfg.subject.c_str(), nats_message, closure);
    // The server's answer to a PING: the subscription is in place.
    if (s == NATS_OK) s = natsConnection_FlushTimeout(conn, cfg.timeout.count());
    if (s != NATS_OK && error.empty()) error = "cannot subscribe to " + cfg.subject + ": " + describe(s);
    natsOptions_Destroy(opts);
    std::lock_guard lock(b->mutex);
    const bool cancelled = b->closed;
    if (cancelled || !error.empty()) {
      // Nothing of this connection reaches the upstream any more (its
      // disconnect as it is destroyed included); the error below does.
      b->closed = true;
      destroy_later(conn, sub);
      conn = nullptr;
      sub = nullptr;
    }
    b->conn = conn;
    b->sub = sub;
    if (cancelled) return;
    // Under the mutex, as every post: close() cannot come in between.
    boost::asio::post(b->ioc, [b, error] {
      if (b->owner) b->owner->on_connected(error);
    });
  }).detach();
}

void nats_upstream::on_connected(const std::string& error) {
  if (!error.empty()) {
    if (handlers_.ended) handlers_.ended(resource_.uri + ": " + error);
    return;
  }
  subscribed_ = true;
  if (handlers_.subscribed) handlers_.subscribed();
}

void nats_upstream::on_messages(std::uint64_t count) {
  // A flood between two handoffs: the log keeps the newest anyway, and
  // what it drops, a reader behind it sees as a GAP.
  if (!resource_.backend)
    for (std::uint64_t i = 0; i < std::min<std::uint64_t>(count, max_events_kept); ++i)
      events_.append({{"type", "CHANGED"}, {"key", ""}, {"received_ms", now_ms()}});
  if (handlers_.updated) handlers_.updated();
}

void nats_upstream::on_disconnected(const std::string& why) {
  logging::warn("source.nats_disconnected", {{"uri", resource_.uri}, {"error", why}});
  if (handlers_.degraded) handlers_.degraded(resource_.uri + ": disconnected from NATS: " + why);
}

void nats_upstream::on_reconnected() {
  logging::info("source.nats_reconnected", {{"uri", resource_.uri}});
  // Core NATS keeps nothing for a subscriber that was away.
  if (!resource_.backend)
    events_.append({{"type", "GAP"},
                    {"key", ""},
                    {"reason", "reconnected to NATS: messages published while disconnected are lost"}});
  if (handlers_.updated) handlers_.updated();
}

void nats_upstream::read(std::function<void(read_outcome)> done) {
  if (closed_) return;
  if (!resource_.backend)
    return done(read_outcome::ok({std::string(core::event_log_mime_type), events_.text()}));
  reading_ = read_backend(ioc_, resource_, std::move(done));
}

void nats_upstream::close() {
  if (closed_) return;
  closed_ = true;
  handlers_ = {};
  if (reading_) reading_->cancel();
  reading_.reset();
  close_bridge();
}

void nats_upstream::close_bridge() {
  if (!bridge_) return;
  delist(bridge_id_);
  natsConnection* conn = nullptr;
  natsSubscription* sub = nullptr;
  {
    std::lock_guard lock(bridge_->mutex);
    bridge_->closed = true;
    bridge_->owner = nullptr;
    conn = std::exchange(bridge_->conn, nullptr);
    sub = std::exchange(bridge_->sub, nullptr);
  }
  destroy_later(conn, sub);
  bridge_.reset();
}

}  // namespace tidings::sources::web
