#pragma once

// One connection to one configured MCP server, shared by the connector and
// by every upstream of that server. It connects on first use, probes the
// protocol era with server/discover, and serves lists, reads, tool calls
// and watches on whichever era the server speaks:
//
//   idle --connect()--> opening --transport open--> probing
//   probing --DiscoverResult--> ready (modern, 2026-07-28)
//   probing --other error / no answer--> initializing --initialize ok--> ready (legacy)
//   any --transport closed / failed--> idle   (every watch ends, pending requests fail)
//
// A watch is one upstream's interest in one URI. Legacy: resources/subscribe
// (reference-counted per URI, resources/unsubscribe when the last one goes),
// and unsolicited notifications/resources/updated routed by URI. Modern: one
// subscriptions/listen per watch, acknowledged before it counts as
// subscribed, updates routed by subscription id, a `complete` result or a
// dropped stream ends it, unwatch() cancels it (notifications/cancelled on
// stdio, closing the stream over HTTP).
//
// A server that advertises resources.listChanged is asked for
// notifications/resources/list_changed (legacy: it sends them anyway;
// modern: each listen opts in). The session lists again, and a watch on a
// URI the old listing named and the new one does not ends as `gone`.
//
// Everything runs on the sources thread; callbacks too; none after stop().

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "sources/mcp/json_rpc.hpp"
#include "sources/mcp/mcp_config.hpp"
#include "sources/mcp/mcp_protocol.hpp"
#include "sources/mcp/transport.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::mcp {

class mcp_session : public std::enable_shared_from_this<mcp_session> {
 public:
  using done_fn = std::function<void(std::string error)>;
  using watch_id = std::uint64_t;
  struct watch_handlers {
    std::function<void()> subscribed;
    std::function<void()> updated;
    std::function<void(std::string reason)> ended;
    // The server's listing no longer names the URI (it did before): the
    // watch is over for good. Falls back to `ended` when unset.
    std::function<void(std::string notice)> gone;
  };

  mcp_session(boost::asio::io_context& ioc, mcp_config cfg);
  ~mcp_session();
  mcp_session(const mcp_session&) = delete;
  mcp_session& operator=(const mcp_session&) = delete;

  const mcp_config& config() const { return cfg_; }

  // Connects unless connected; done("") or an error. Callers queue while a
  // connection is being made.
  void connect(done_fn done);
  bool connected() const { return state_ == state::ready; }
  era protocol_era() const { return era_; }
  const std::string& protocol_version() const { return version_; }
  const nlohmann::json& capabilities() const { return capabilities_; }
  bool can_subscribe() const { return advertises_subscribe(capabilities_); }

  // resources/list and resources/templates/list, every page. A successful
  // list becomes listing().
  void list(std::function<void(std::vector<resource_info>, std::string error)> done);
  void read(const std::string& uri, std::function<void(read_outcome)> done);
  // tools/call; the reply's result is the CallToolResult.
  void call_tool(const std::string& name, nlohmann::json arguments, std::function<void(rpc_reply)> done);
  // The resources and templates of the last successful list: refreshed on
  // notifications/resources/list_changed, when watches on URIs it no
  // longer names end as gone.
  const std::vector<resource_info>& listing() const { return listing_; }
  // Any request on the connected session (modern: with `_meta`).
  void request(const std::string& method, nlohmann::json params, std::function<void(rpc_reply)> done);

  // Starts a watch (connecting first when needed). Exactly one of subscribed
  // or ended follows; after subscribed any number of updated and at most
  // one ended. An ended watch is gone; a new watch() starts over.
  watch_id watch(const std::string& uri, watch_handlers h);
  // Ends a watch on the server side; no handler of it runs afterwards.
  void unwatch(watch_id id);

  // Ends the connection (and the child); no callback runs afterwards.
  // connect() may be called again later.
  void stop();

  // The stdio child's pid, or -1 (tests).
  pid_t child_pid() const;

  // Sees every notification before it is routed or ignored. Tests observe
  // through it what a server reports with notifications/message (e.g. that
  // it received resources/unsubscribe).
  using notification_observer = std::function<void(const std::string& method, const nlohmann::json& params)>;
  void observe_notifications(notification_observer f) { observer_ = std::move(f); }

 private:
  enum class state { idle, connecting, ready };
  struct watch_state {
    std::string uri;
    watch_handlers h;
    bool active = false;       // subscribed was called
    bool started = false;      // the subscribe / listen request was sent
    nlohmann::json listen_id;  // modern
    std::unique_ptr<boost::asio::steady_timer> ack_timer;
  };

  void begin_connect();
  void probe();
  void on_probe(const rpc_reply& r);
  void initialize(const std::string& version);
  void finish_connect(const std::string& error);
  void on_message(const nlohmann::json& j);
  void on_notification(const rpc_message& m);
  void on_server_request(const rpc_message& m);
  void on_closed(const std::string& reason);
  void start_watch(watch_id id);
  // resources/subscribe or subscriptions/listen for a started watch.
  void subscribe_watch(watch_id id);
  void start_listen(watch_id id);
  void end_watch(watch_id id, const std::string& reason, bool cancel_upstream);
  // Takes the watch out of the tables and ends its listen request (telling
  // the server `why` when cancel_upstream); nullopt when there is none.
  std::optional<watch_state> detach_watch(watch_id id, bool cancel_upstream, const char* why);
  // One legacy subscriber of `uri` fewer; true when it was the last.
  bool release_legacy_ref(const std::string& uri);
  void send(const std::string& method, nlohmann::json params, std::chrono::milliseconds timeout,
            bool long_lived, const nlohmann::json& id, std::function<void(rpc_reply)> done);
  void list_page(const std::string& method, const std::string& cursor, int pages,
                 const std::shared_ptr<std::vector<resource_info>>& out,
                 const std::function<void(std::string error)>& done);
  watch_state* find_watch(watch_id id);
  // notifications/resources/list_changed: lists again, one list at a time
  // (notifications meanwhile make one more).
  void refresh_listing();
  // Both lists on the connected session, every page.
  void fetch_listing(const std::function<void(std::vector<resource_info>, std::string error)>& done);
  void apply_listing(std::vector<resource_info> next);
  // Ends the watch as `gone`: its resource was removed.
  void end_watch_gone(watch_id id);

  boost::asio::io_context& ioc_;
  mcp_config cfg_;
  state state_ = state::idle;
  era era_ = era::legacy;
  std::string version_;
  nlohmann::json capabilities_;
  std::shared_ptr<transport> transport_;
  json_rpc rpc_;
  std::vector<done_fn> waiters_;
  std::map<watch_id, watch_state> watches_;
  std::map<std::string, watch_id> by_listen_id_;  // id_key(listen id) -> watch
  std::map<std::string, int> legacy_refs_;        // uri -> active legacy watches
  watch_id next_watch_ = 1;
  std::uint64_t generation_ = 0;  // bumps on every new connection and on stop
  notification_observer observer_;
  std::vector<resource_info> listing_;
  std::set<std::string> removed_;  // URIs a listing dropped (exact) or a watch ended gone on
  std::set<std::string> watched_;  // URIs watched lately (bounded), to tell which a listing dropped
  bool refreshing_ = false;
  bool refresh_again_ = false;
};

}  // namespace tidings::sources::mcp
