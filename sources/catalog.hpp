#pragma once

// The node's configured upstreams and the routing of a URI to one of them
// (ADR 0005 "Routing"). Lives on the sources thread like the connectors.
//
// Connectors start lazily, on the first subscribe, read or listing, so a
// node with an unreachable upstream still starts; one whose start failed
// is tried again on the next use.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "sources/upstream.hpp"

namespace tidings::sources {

struct route_result {
  connector* upstream = nullptr;  // nullptr: see error
  std::string uri;                // canonical, as the connector spells it
  std::string key;                // "<connector>|<canonical uri>": one source per key
  std::string error;
  bool transient = false;  // an upstream that might serve it is not running now
};

class catalog {
 public:
  catalog(boost::asio::io_context& ioc, std::vector<std::unique_ptr<connector>> connectors);
  ~catalog();
  catalog(const catalog&) = delete;
  catalog& operator=(const catalog&) = delete;

  // Starts every connector that is not running; `done` runs once all have
  // answered (each failure is logged and kept for start_errors()).
  void ensure_started(std::function<void()> done);

  // After ensure_started: where the URI goes.
  route_result route(std::string_view uri) const;

  // After ensure_started: every connector's resources and templates.
  std::vector<resource_info> resources() const;

  // "<connector>: <error>" for each connector whose last start failed.
  std::vector<std::string> start_errors() const;

  connector* find(std::string_view name) const;
  bool empty() const { return connectors_.empty(); }

  // A reload: `fresh` connectors join (a new name) or replace the one of
  // their name; a connector whose name is not in `order` leaves. Afterwards
  // the connectors follow `order` (routing's fallback goes by it). The new
  // ones start lazily like the others. The replaced and removed ones leave
  // routing at once and are handed back still running: their sources hold
  // upstreams of theirs, so the caller stops them once those have ended.
  std::vector<std::unique_ptr<connector>> reconfigure(const std::vector<std::string>& order,
                                                      std::vector<std::unique_ptr<connector>> fresh);

  // Ends every connector (child processes, connections).
  void stop();

 private:
  struct slot {
    std::unique_ptr<connector> conn;
    enum class phase { idle, starting, started, failed } at = phase::idle;
    std::string error;
    std::uint64_t attempt = 0;  // answers of older attempts are ignored
    std::chrono::steady_clock::time_point failed_at;
  };
  void finish_start(slot& s, std::uint64_t attempt, std::string error);
  void release_waiting();

  boost::asio::io_context& ioc_;
  std::vector<std::unique_ptr<slot>> connectors_;
  // Slots of connectors a reload took out; kept (without their connector)
  // because a start timer of theirs may still fire, and then finds them stale.
  std::vector<std::unique_ptr<slot>> retired_;
  std::vector<std::function<void()>> waiting_;
  std::size_t starting_ = 0;
  bool stopped_ = false;
};

}  // namespace tidings::sources
