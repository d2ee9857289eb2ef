#pragma once

// The contract every upstream connector implements (issue 4, DESIGN "source").
//
// Threading: everything in sources/ runs on ONE thread, the node's sources
// I/O thread (its io_context is handed to each connector). Connector and
// upstream methods are called only on that thread and every callback runs
// on it, so connectors keep plain state and take no locks. The source actor
// (CAF) talks to an upstream only by posting to that io_context.
//
// Errors are values (read_outcome::error, the `ended` reason): no exception
// crosses an async boundary.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace tidings::sources {

// One read of a resource. A mime_type equal to core::event_log_mime_type
// ("application/vnd.asyncai.events+json") makes it an event-log read whose
// text is {"events":[{"seq":N,"type":"...",...}]}; anything else is a state
// read (text parsed as JSON when it is JSON, else kept as text).
struct read_result {
  std::string mime_type;
  std::string text;
};

// Either a result or an error message meant for the user, e.g.
// "memory: resources/read failed: Resource not found (code -32002)".
struct read_outcome {
  std::optional<read_result> result;
  std::string error;

  static read_outcome ok(read_result r) { return {std::move(r), {}}; }
  static read_outcome failed(std::string message) { return {std::nullopt, std::move(message)}; }
};

// One upstream subscription for one source key. Owned by its source; lives
// on the sources thread.
class upstream {
 public:
  struct handlers {
    // The subscription is established (first time or again after `ended`).
    std::function<void()> subscribed;
    // The resource changed: read it. No payload; may be coalesced.
    std::function<void()> updated;
    // The subscription ended or could not be made. The source decides about
    // backoff and calls subscribe() again; the upstream never retries alone.
    std::function<void(std::string reason)> ended;
    // A check failed but the subscription holds (a poll that could not
    // fetch and will try again at its next tick). Optional.
    std::function<void(std::string error)> degraded;
    // The resource no longer exists upstream (an MCP server's listing
    // dropped it): the source ends with this notice and is not retried.
    // Optional; without it the end is an `ended`.
    std::function<void(std::string notice)> gone;
  };

  virtual ~upstream() = default;

  // How changes reach us, for the admin view and metric labels (a fixed,
  // small set): subscribe, webhook, poll, listen, inotify or watch.
  virtual const char* strategy() const = 0;
  // Its TLS peer is not verified (insecure_skip_verify written in the
  // config, issue 24): shown on the source in /v1/sources.
  virtual bool tls_unverified() const { return false; }

  // Starts (or restarts after `ended`) the upstream subscription. Exactly one
  // of subscribed / ended follows; after subscribed, any number of updated
  // and at most one ended.
  virtual void subscribe(handlers h) = 0;

  // Reads the resource now. `done` runs exactly once (unless close() came
  // first), on the sources thread.
  virtual void read(std::function<void(read_outcome)> done) = 0;

  // Ends the subscription on the upstream side (unsubscribe, cancel, close
  // the stream or connection). No handler and no pending `done` runs after
  // close() returns. The object may be destroyed right after.
  virtual void close() = 0;
};

// What GET /v1/resources lists, one entry per resource or template.
struct resource_info {
  std::string uri;  // the RFC 6570 template when `template_` is true
  bool template_ = false;
  std::string name;
  std::string description;
  std::string example;  // the description's "Example:" line, without the label
  std::string mime_type;
  std::string server;  // the connector's name
  bool subscribable = false;
};

// One configured upstream: an MCP server, a Kubernetes context, a
// PostgreSQL database, the file roots, the webhook and poll resources.
class connector {
 public:
  virtual ~connector() = default;

  // Unique among the node's connectors, e.g. "memory", "kube:test", "files".
  virtual const std::string& name() const = 0;

  // Prepares the connector (connect, probe, fetch listings). `done` gets ""
  // or an error; a connector that failed to start may still be asked again
  // later (start is retried by the catalog on the next use).
  virtual void start(std::function<void(std::string error)> done) = 0;

  // Resources and templates this connector serves, for routing and listing.
  virtual std::vector<resource_info> resources() const = 0;

  // Whether, as a last resort, any URI may be sent here (an MCP server that
  // advertises resources.subscribe).
  virtual bool accepts_any_uri() const { return false; }

  // The canonical form of a URI this connector was routed (e.g. query
  // parameters sorted), so equal resources share one source key.
  virtual std::string canonical(std::string_view uri) const { return std::string(uri); }

  // A new, not yet subscribed upstream for the URI; nullptr with *error set
  // when the URI is malformed for this connector.
  virtual std::unique_ptr<upstream> open(const std::string& uri, std::string* error) = 0;

  // A one-off read (GET /v1/resources/read) that needs no subscription.
  virtual void read(const std::string& uri, std::function<void(read_outcome)> done) = 0;

  // Ends every connection and child process; no callback runs afterwards.
  virtual void stop() = 0;
};

}  // namespace tidings::sources
