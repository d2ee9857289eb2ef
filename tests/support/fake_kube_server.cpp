#include "tests/support/fake_kube_server.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <deque>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace tidings::testing {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;

namespace {

std::string decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

std::map<std::string, std::string> query_params(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = param.find('=');
    out[decode(param.substr(0, eq))] = eq == std::string_view::npos ? "" : decode(param.substr(eq + 1));
  }
  return out;
}

// The discovery prefix of a collection path: /api/v1 or /apis/GROUP/VERSION.
std::string group_version_path(const std::string& path) {
  const auto ns = path.find("/namespaces/");
  return path.substr(0, ns != std::string::npos ? ns : path.rfind('/'));
}

// GET /api/v1 or /apis/GROUP/VERSION: the resources of the collections set
// under it (an APIResourceList, as a real API server answers discovery).
template <class Collections>
std::optional<json> discovery_document(const std::string& path, const Collections& collections) {
  const bool core = path == "/api/v1";
  const bool group = path.starts_with("/apis/") && std::count(path.begin(), path.end(), '/') == 3;
  if (!core && !group) return std::nullopt;
  json resources = json::array();
  for (const auto& [collection_path, c] : collections)
    if (group_version_path(collection_path) == path)
      resources.push_back(
          {{"name", collection_path.substr(collection_path.rfind('/') + 1)}, {"namespaced", true}});
  return json{
      {"kind", "APIResourceList"}, {"groupVersion", path.substr(core ? 5 : 6)}, {"resources", resources}};
}

json status(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}};
}

std::string chunk(std::string_view bytes) {
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", bytes.size());
  return head + std::string(bytes) + "\r\n";
}

}  // namespace

// One accepted connection: reads one request and answers it; a watch stays
// open and writes what the test pushes, one write at a time.
class fake_kube_server::session : public std::enable_shared_from_this<session> {
 public:
  session(fake_kube_server& server, tcp::socket socket) : server_(server), socket_(std::move(socket)) {}

  void start() {
    parser_.body_limit(1024 * 1024);
    http::async_read(
        socket_, buffer_, parser_,
        [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_request(ec); });
  }

  // Queues body bytes of an open watch as chunks.
  void send(const std::string& bytes, std::size_t piece) {
    if (!watching_ || ended_) return;
    if (piece == 0) piece = bytes.size();
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
      const auto part = std::string_view(bytes).substr(at, piece);
      queue(chunk(part), part.size());
    }
  }

  void end(bool clean) {
    if (!watching_ || ended_) return;
    ended_ = true;
    note_watch_ended(false);
    if (clean) {
      queue("0\r\n\r\n", 0);
      close_after_writes_ = true;
      if (!writing_) close();
    } else {
      close();
    }
  }

  bool open_watch() const { return watching_ && !ended_; }

  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void on_request(boost::system::error_code ec) {
    if (ec) return close();
    const auto& req = parser_.get();
    kube_request_record rec;
    rec.method = std::string(req.method_string());
    rec.target = std::string(req.target());
    const auto q = rec.target.find('?');
    rec.path = rec.target.substr(0, q);
    const auto params = query_params(q == std::string::npos ? std::string_view()
                                                            : std::string_view(rec.target).substr(q + 1));
    if (const auto a = req.find(http::field::authorization); a != req.end())
      rec.authorization = std::string(a->value());
    if (const auto w = params.find("watch"); w != params.end())
      rec.watch = w->second == "1" || w->second == "true";
    if (const auto rv = params.find("resourceVersion"); rv != params.end()) rec.resource_version = rv->second;
    if (const auto l = params.find("labelSelector"); l != params.end()) rec.label_selector = l->second;
    if (const auto f = params.find("fieldSelector"); f != params.end()) rec.field_selector = f->second;
    if (const auto c = params.find("continue"); c != params.end()) rec.continue_token = c->second;

    std::optional<collection> coll;
    std::optional<bool> gone;
    std::optional<json> discovery;
    bool authorized = true;
    std::size_t page_size = 0;
    {
      std::lock_guard lock(server_.mutex_);
      page_size = server_.page_size_;
      server_.requests_.push_back(rec);
      authorized = server_.token_.empty() || rec.authorization == "Bearer " + server_.token_;
      if (const auto c = server_.collections_.find(rec.path); c != server_.collections_.end())
        coll = c->second;
      else
        discovery = discovery_document(rec.path, server_.collections_);
      if (authorized && coll && rec.watch && server_.gone_next_) {
        gone = server_.gone_next_;
        server_.gone_next_.reset();
      }
    }
    if (!authorized) return answer(http::status::unauthorized, status(401, "Unauthorized", "Unauthorized"));
    if (rec.method != "GET")
      return answer(http::status::method_not_allowed, status(405, "MethodNotAllowed", "only GET is served"));
    if (!coll && discovery && !rec.watch) return answer(http::status::ok, *discovery);
    if (!coll)
      return answer(http::status::not_found,
                    status(404, "NotFound", "the server could not find the requested resource"));
    if (gone && !*gone)
      return answer(http::status::gone,
                    status(410, "Expired", "too old resource version: " + rec.resource_version));
    if (!rec.watch) {
      json items = coll->items;
      json meta = {{"resourceVersion", coll->resource_version}};
      if (page_size > 0 && items.is_array()) {
        // The continue token is simply the offset of the next item.
        std::size_t offset = 0;
        if (!rec.continue_token.empty()) offset = std::stoul(rec.continue_token);
        json page = json::array();
        for (std::size_t i = offset; i < items.size() && i < offset + page_size; ++i)
          page.push_back(items[i]);
        if (offset + page_size < items.size()) meta["continue"] = std::to_string(offset + page_size);
        items = std::move(page);
      }
      json list = {
          {"kind", coll->list_kind}, {"apiVersion", coll->api_version}, {"metadata", meta}, {"items", items}};
      return answer(http::status::ok, list);
    }
    start_watch();
    if (gone) {
      send(json{{"type", "ERROR"},
                {"object", status(410, "Expired", "too old resource version: " + rec.resource_version)}}
                   .dump() +
               "\n",
           0);
      end(true);
    }
  }

  void answer(http::status s, const json& body) {
    auto res = std::make_shared<http::response<http::string_body>>(s, 11);
    res->set(http::field::content_type, "application/json");
    res->keep_alive(false);
    res->body() = body.dump();
    res->prepare_payload();
    http::async_write(
        socket_, *res,
        [self = shared_from_this(), res](boost::system::error_code, std::size_t) { self->close(); });
  }

  void start_watch() {
    watching_ = true;
    {
      std::lock_guard lock(server_.mutex_);
      ++server_.watches_opened_;
      server_.changed_.notify_all();
      ++server_.watches_open_;
    }
    server_.watches_.push_back(weak_from_this());
    queue("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", 0);
    // A parked read notices the client closing the watch.
    socket_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                              if (ec) self->on_client_gone();
                            });
  }

  void on_client_gone() {
    if (ended_) return;
    ended_ = true;
    note_watch_ended(true);
    close();
  }

  void note_watch_ended(bool by_client) {
    std::lock_guard lock(server_.mutex_);
    --server_.watches_open_;
    if (by_client) {
      ++server_.watches_closed_by_client_;
      server_.changed_.notify_all();
    }
  }

  void queue(std::string bytes, std::size_t body_bytes) {
    out_.emplace_back(std::move(bytes), body_bytes);
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty()) {
      writing_ = false;
      if (close_after_writes_) close();
      return;
    }
    writing_ = true;
    net::async_write(socket_, net::buffer(out_.front().first),
                     [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                       const auto body = self->out_.front().second;
                       self->out_.pop_front();
                       if (ec) {
                         self->out_.clear();
                         self->writing_ = false;
                         return;
                       }
                       {
                         std::lock_guard lock(self->server_.mutex_);
                         self->server_.watch_bytes_written_ += body;
                       }
                       self->write_next();
                     });
  }

  fake_kube_server& server_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  std::deque<std::pair<std::string, std::size_t>> out_;
  bool writing_ = false;
  bool watching_ = false;
  bool ended_ = false;
  bool close_after_writes_ = false;
  char scratch_[512];
};

fake_kube_server::fake_kube_server()
    : work_(net::make_work_guard(ioc_)),
      acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] { ioc_.run(); });
}

fake_kube_server::~fake_kube_server() {
  net::post(ioc_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& w : sessions_)
      if (auto s = w.lock()) s->close();
  });
  work_.reset();
  // Closed sockets complete their handlers, then run() returns; stop() is the
  // bound in case a handler would re-arm.
  net::post(ioc_, [this] { ioc_.stop(); });
  thread_.join();
}

std::string fake_kube_server::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void fake_kube_server::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) return;
    auto s = std::make_shared<session>(*this, std::move(socket));
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    std::erase_if(watches_, [](const auto& w) { return w.expired(); });
    sessions_.push_back(s);
    s->start();
    accept();
  });
}

void fake_kube_server::require_token(std::string token) {
  std::lock_guard lock(mutex_);
  token_ = std::move(token);
}

void fake_kube_server::set_collection(const std::string& path, json items, std::string resource_version,
                                      std::string list_kind, std::string api_version) {
  std::lock_guard lock(mutex_);
  collections_[path] =
      collection{std::move(items), std::move(resource_version), std::move(list_kind), std::move(api_version)};
}

void fake_kube_server::set_page_size(std::size_t n) {
  std::lock_guard lock(mutex_);
  page_size_ = n;
}

void fake_kube_server::fail_next_watch_with_gone(bool in_band) {
  std::lock_guard lock(mutex_);
  gone_next_ = in_band;
}

std::shared_ptr<fake_kube_server::session> fake_kube_server::newest_watch() {
  for (auto it = watches_.rbegin(); it != watches_.rend(); ++it)
    if (auto s = it->lock(); s && s->open_watch()) return s;
  return nullptr;
}

void fake_kube_server::send_watch_bytes(const std::string& bytes, std::size_t piece) {
  net::post(ioc_, [this, bytes, piece] {
    if (auto s = newest_watch()) s->send(bytes, piece);
  });
}

void fake_kube_server::send_watch_event(const std::string& type, const json& object, std::size_t piece) {
  send_watch_bytes(json{{"type", type}, {"object", object}}.dump() + "\n", piece);
}

void fake_kube_server::end_watch() {
  net::post(ioc_, [this] {
    if (auto s = newest_watch()) s->end(true);
  });
}

void fake_kube_server::drop_watch() {
  net::post(ioc_, [this] {
    if (auto s = newest_watch()) s->end(false);
  });
}

std::vector<kube_request_record> fake_kube_server::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

int fake_kube_server::watches_opened() const {
  std::lock_guard lock(mutex_);
  return watches_opened_;
}

int fake_kube_server::watches_open() const {
  std::lock_guard lock(mutex_);
  return watches_open_;
}

bool fake_kube_server::await_watches_opened(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return watches_opened_ >= n; });
}

bool fake_kube_server::await_watches_closed_by_client(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return watches_closed_by_client_ >= n; });
}

int fake_kube_server::watches_closed_by_client() const {
  std::lock_guard lock(mutex_);
  return watches_closed_by_client_;
}

std::uint64_t fake_kube_server::watch_bytes_written() const {
  std::lock_guard lock(mutex_);
  return watch_bytes_written_;
}

}  // namespace tidings::testing
