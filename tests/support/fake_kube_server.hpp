#pragma once

// A fake Kubernetes-style API server for tests (issue 4): Beast on its own
// thread, 127.0.0.1 on an ephemeral port. The test sets the collections it
// serves (list answers), pushes watch events into the open chunked watch
// response, in pieces cut anywhere, ends the watch, makes the next watch
// answer 410 Gone, and reads back the requests it got (paths, Authorization)
// and what happened to the watch connections.
//
// Every method may be called from the test thread; pushes are posted to the
// server thread in order and return at once, observations take a lock.
// Nothing blocks: a test runs its own io_context until an observation holds.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

namespace tidings::testing {

struct kube_request_record {
  std::string method;
  std::string target;  // path?query as sent
  std::string path;
  std::string authorization;  // the header's value, "" when absent
  bool watch = false;
  std::string resource_version;  // the query parameter, "" when absent
  std::string label_selector;    // decoded
  std::string field_selector;    // decoded
  std::string continue_token;    // the `continue` parameter
};

class fake_kube_server {
 public:
  fake_kube_server();
  ~fake_kube_server();
  fake_kube_server(const fake_kube_server&) = delete;
  fake_kube_server& operator=(const fake_kube_server&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT
  unsigned short port() const { return port_; }

  // Every request must carry "Authorization: Bearer <token>", else 401.
  // "" (the default) accepts any request.
  void require_token(std::string token);

  // Serves `path` (e.g. /api/v1/namespaces/default/configmaps): a GET lists
  // `items` at `resource_version`; with ?watch=1 it opens a watch stream.
  // Other paths answer 404 with a Kubernetes Status. Items are sent as given.
  void set_collection(const std::string& path, nlohmann::json items, std::string resource_version,
                      std::string list_kind = "ConfigMapList", std::string api_version = "v1");

  // Lists answer at most `n` items per page with a continue token (0, the
  // default: everything at once, whatever `limit` says).
  void set_page_size(std::size_t n);

  // The next watch request is answered with 410 Gone: an HTTP 410 Status, or
  // (in_band) HTTP 200 with one ERROR event whose Status code is 410, then
  // the end of the stream, as a real API server does.
  void fail_next_watch_with_gone(bool in_band = false);

  // Writes bytes into the newest open watch, as chunks of at most `piece`
  // bytes (0: one chunk), each a separate socket write.
  void send_watch_bytes(const std::string& bytes, std::size_t piece = 0);
  // {"type":type,"object":object} plus a newline, as send_watch_bytes.
  void send_watch_event(const std::string& type, const nlohmann::json& object, std::size_t piece = 0);
  // Ends the newest open watch with the last chunk (a server-side timeout).
  void end_watch();
  // Closes the newest open watch's connection without the last chunk.
  void drop_watch();

  std::vector<kube_request_record> requests() const;
  int watches_opened() const;            // 200 watch heads sent
  int watches_open() const;              // opened and not yet ended by either side
  int watches_closed_by_client() const;  // the client closed an open watch
  // Wait (bounded) until at least `n` watches were opened (200 heads sent),
  // or until the client has closed at least `n` watches.
  bool await_watches_opened(int n, std::chrono::milliseconds timeout) const;
  bool await_watches_closed_by_client(int n, std::chrono::milliseconds timeout) const;
  std::uint64_t watch_bytes_written() const;  // watch body bytes fully written

 private:
  class session;
  struct collection {
    nlohmann::json items;
    std::string resource_version;
    std::string list_kind;
    std::string api_version;
  };

  void accept();
  std::shared_ptr<session> newest_watch();

  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread thread_;

  // Server thread only.
  std::vector<std::weak_ptr<session>> watches_;
  std::vector<std::weak_ptr<session>> sessions_;

  // Shared with the test thread.
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::string token_;
  std::map<std::string, collection> collections_;
  std::size_t page_size_ = 0;
  std::optional<bool> gone_next_;  // set: the next watch gets 410 (value: in band)
  std::vector<kube_request_record> requests_;
  int watches_opened_ = 0;
  int watches_open_ = 0;
  int watches_closed_by_client_ = 0;
  std::uint64_t watch_bytes_written_ = 0;
};

}  // namespace tidings::testing
