#pragma once

// Helpers for the connector tests against real MCP servers: where the
// servers are (tests/mcp-servers, installed by tests/mcp-servers/setup),
// configs for them, awaiting a condition on the io_context (never a sleep),
// and HTTP servers run as child processes that are always cleaned up.

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "sources/mcp/child_process.hpp"
#include "sources/mcp/mcp_config.hpp"
#include "sources/mcp/mcp_connector.hpp"
#include "tests/support/build_paths.hpp"

namespace tidings::sources::mcp::test {

inline std::string servers_dir() {
  return tidings::testing::source_dir() + "/tests/mcp-servers";
}

// Fails (not skips) when the npm servers are not installed.
inline void require_servers() {
  auto nm = std::filesystem::path(servers_dir()) / "node_modules" / "@modelcontextprotocol";
  if (!std::filesystem::exists(nm / "server-memory") || !std::filesystem::exists(nm / "server-everything") ||
      !std::filesystem::exists(nm / "server")) {
    FAIL("the MCP test servers are not installed: run " + servers_dir() + "/setup");
  }
}

inline std::string module_path(const std::string& package) {
  return servers_dir() + "/node_modules/@modelcontextprotocol/" + package + "/dist/index.js";
}

// Runs the io_context until pred() holds or timeout passes; returns pred().
inline bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(15000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (ioc.stopped()) ioc.restart();
    ioc.run_one_for(deadline - now);
  }
  return true;
}

inline bool process_gone(pid_t pid) {
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

inline mcp_config stdio_config(std::string name, std::vector<std::string> command) {
  mcp_config c;
  c.name = std::move(name);
  c.transport = transport_kind::stdio;
  c.command = std::move(command);
  c.cwd = servers_dir();
  c.request_timeout = std::chrono::milliseconds(10000);
  return c;
}

// server-memory keeps its graph in a file: a fresh one per test.
inline mcp_config memory_config(const std::string& file) {
  auto c = stdio_config("memory", {"node", module_path("server-memory")});
  c.env["MEMORY_FILE_PATH"] = file;
  return c;
}

inline mcp_config http_config(std::string name, std::string url) {
  mcp_config c;
  c.name = std::move(name);
  c.transport = transport_kind::http;
  c.url = std::move(url);
  c.request_timeout = std::chrono::milliseconds(10000);
  return c;
}

// What one upstream's handlers saw.
struct watch_log {
  int subscribed = 0;
  int updated = 0;
  int ended = 0;
  int gone = 0;
  std::string reason;  // of the last ended or gone
  upstream::handlers handlers() {
    upstream::handlers h;
    h.subscribed = [this] { ++subscribed; };
    h.updated = [this] { ++updated; };
    h.ended = [this](std::string r) {
      ++ended;
      reason = std::move(r);
    };
    h.gone = [this](std::string r) {
      ++gone;
      reason = std::move(r);
    };
    return h;
  }
};

// Whether the connector's current listing names the URI (a resource).
inline bool lists_resource(const mcp_connector& c, const std::string& uri) {
  for (const auto& r : c.resources())
    if (!r.template_ && r.uri == uri) return true;
  return false;
}

// One tool call, awaited.
inline rpc_reply call_tool(boost::asio::io_context& ioc, mcp_connector& c, const std::string& name,
                           const std::string& args = "{}") {
  std::optional<rpc_reply> reply;
  c.call_tool(name, args, [&](rpc_reply r) { reply = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return reply.has_value(); }));
  return *reply;
}

inline read_outcome read_now(boost::asio::io_context& ioc,
                             const std::function<void(std::function<void(read_outcome)>)>& start) {
  std::optional<read_outcome> out;
  start([&](read_outcome r) { out = std::move(r); });
  REQUIRE(run_until(ioc, [&] { return out.has_value(); }));
  return *out;
}

// Subscribes `up`, switches server-everything's periodic updates on and
// waits for the first one: the walk every test of that server takes.
inline void subscribe_until_updated(boost::asio::io_context& ioc, mcp_connector& c, upstream& up,
                                    watch_log& w) {
  up.subscribe(w.handlers());
  REQUIRE(run_until(ioc, [&] { return w.subscribed == 1 || w.ended; }));
  REQUIRE(w.subscribed == 1);
  CHECK(call_tool(ioc, c, "toggle-subscriber-updates").ok());
  REQUIRE(run_until(ioc, [&] { return w.updated >= 1; }));
}

// What start() reported: "" when the connector started.
inline std::string start_outcome(boost::asio::io_context& ioc, mcp_connector& c) {
  std::optional<std::string> error;
  c.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(ioc, [&] { return error.has_value(); }));
  return *error;
}

inline void start_connector(boost::asio::io_context& ioc, mcp_connector& c) {
  REQUIRE(start_outcome(ioc, c) == "");
}

// An HTTP MCP server run for one test; it prints "TIDINGS_URL <url>" on
// stdout. Its lines are kept so tests can await what it observed.
class http_server {
 public:
  http_server(boost::asio::io_context& ioc, std::vector<std::string> argv,
              std::map<std::string, std::string> env = {})
      : ioc_(ioc), child_(std::make_shared<child_process>(ioc)) {
    child_options o;
    o.argv = std::move(argv);
    o.env = std::move(env);
    o.cwd = servers_dir();
    child_handlers h;
    h.stdout_line = [this](const std::string& line) { on_line(line); };
    h.stderr_line = [](std::string) {};
    std::string err = child_->start(o, std::move(h));
    REQUIRE(err == "");
    REQUIRE(run_until(ioc_, [this] { return !url_.empty(); }));
  }
  ~http_server() { child_->stop(std::chrono::milliseconds(300)); }

  const std::string& url() const { return url_; }
  pid_t pid() const { return child_->pid(); }
  // Waits for a stdout line containing `needle` after the first `skip` lines.
  bool await_line(const std::string& needle, std::size_t skip = 0) {
    return run_until(ioc_, [&] {
      for (std::size_t i = skip; i < lines_.size(); ++i)
        if (lines_[i].find(needle) != std::string::npos) return true;
      return false;
    });
  }
  std::size_t line_count() const { return lines_.size(); }

 private:
  void on_line(const std::string& line) {
    static const std::string marker = "TIDINGS_URL ";
    if (line.compare(0, marker.size(), marker) == 0) url_ = line.substr(marker.size());
    lines_.push_back(line);
  }

  boost::asio::io_context& ioc_;
  std::shared_ptr<child_process> child_;
  std::string url_;
  std::vector<std::string> lines_;
};

inline std::string temp_file(const std::string& stem) {
  std::string path =
      (std::filesystem::temp_directory_path() /
       (stem + "-" + std::to_string(getpid()) + "-" +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".jsonl"))
          .string();
  return path;
}

}  // namespace tidings::sources::mcp::test
