#include "sources/mcp/http_transport.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "logging/log.hpp"

namespace tidings::sources::mcp {

using nlohmann::json;

namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string snippet(std::string_view body) {
  std::string s(body.substr(0, 200));
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

http_transport::~http_transport() {
  close();
}

void http_transport::open(handlers h, std::function<void(std::string error)> done) {
  handlers_ = std::move(h);
  closed_ = false;
  net::http_url parsed;
  std::string error;
  if (!net::parse_http_url(cfg_.url, &parsed, &error)) error = "bad url " + cfg_.url + ": " + error;
  std::weak_ptr<http_transport> weak = weak_from_this();
  boost::asio::post(ioc_, [weak, done = std::move(done), error]() {
    if (weak.lock()) done(error);
  });
}

net::http_headers http_transport::base_headers(const std::string& method, const std::string& name) const {
  net::http_headers h = {{"Content-Type", "application/json"},
                         {"Accept", "application/json, text/event-stream"}};
  if (!version_.empty()) h.emplace_back("MCP-Protocol-Version", version_);
  if (era_ == era::modern && !method.empty()) {
    h.emplace_back("Mcp-Method", method);
    if (!name.empty() && (method == "tools/call" || method == "resources/read" || method == "prompts/get"))
      h.emplace_back("Mcp-Name", header_value(name));
  }
  if (!session_id_.empty()) h.emplace_back("Mcp-Session-Id", session_id_);
  for (const auto& kv : cfg_.headers) h.push_back(kv);
  return h;
}

void http_transport::send_request(const json& message, const request_info& info) {
  if (closed_) return;
  std::string key = id_key(message.value("id", json()));
  auto c = std::make_shared<call>(cfg_.max_message_bytes);
  c->id = message.value("id", json());
  c->long_lived = info.long_lived;
  calls_[key] = c;
  net::http_request req;
  req.method = "POST";
  req.url = cfg_.url;
  req.tls = cfg_.tls_context;
  req.headers = base_headers(info.method, info.name);
  req.body = message.dump();
  req.timeout = cfg_.request_timeout;
  req.max_body_bytes = cfg_.max_message_bytes;
  // A listen stream may be quiet for hours; other streams end with their response.
  req.idle_timeout = info.long_lived ? std::chrono::milliseconds(0) : cfg_.request_timeout;
  std::weak_ptr<http_transport> weak = weak_from_this();
  net::http_stream_handlers sh;
  sh.head = [weak, key](const net::http_response& head) {
    if (auto self = weak.lock()) self->on_head(key, head);
  };
  sh.data = [weak, key](std::string_view data) {
    if (auto self = weak.lock()) self->on_data(key, data);
  };
  sh.end = [weak, key](const std::string& error) {
    if (auto self = weak.lock()) self->on_end(key, error);
  };
  c->http = net::http_open_stream(ioc_, std::move(req), std::move(sh));
}

void http_transport::on_head(const std::string& key, const net::http_response& head) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  auto& c = *it->second;
  c.status = head.status;
  c.sse = starts_with_ci(head.header("content-type"), "text/event-stream");
  const std::string& sid = head.header("mcp-session-id");
  if (era_ == era::legacy && !sid.empty() && session_id_.empty()) session_id_ = sid;
  if (head.status == 404 && !session_id_.empty()) {
    // Legacy: the server ended our session; a new one needs initialize.
    auto closed = handlers_.closed;
    close();
    if (closed) closed("the server ended the session (HTTP 404)");
  }
}

void http_transport::on_data(const std::string& key, std::string_view data) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  auto keep = it->second;
  auto& c = *keep;
  if (c.sse) {
    std::vector<std::string> texts;
    c.parser.feed(data, [&](core::sse_message&& m) {
      // Priming events carry an id and an empty data field: nothing to parse.
      if (!m.data.empty()) texts.push_back(std::move(m.data));
    });
    for (auto& t : texts) {
      if (!calls_.count(key)) return;
      deliver(key, t);
    }
    if (c.parser.failed()) fail_call(key, failure_kind::transport, "SSE message too large");
    return;
  }
  if (c.body.size() + data.size() > cfg_.max_message_bytes) {
    fail_call(key, failure_kind::transport, "response body too large");
    return;
  }
  c.body.append(data);
}

void http_transport::deliver(const std::string& key, std::string_view text) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  auto keep = it->second;
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    logging::warn("mcp.message.malformed",
                  {{"server", cfg_.name}, {"bytes", static_cast<std::uint64_t>(text.size())}});
    return;
  }
  // An error answer without an id (e.g. "Bad Request: Server not
  // initialized", id null) belongs to the request this POST carried.
  if (j.contains("error") && (!j.contains("id") || j["id"].is_null())) j["id"] = keep->id;
  if ((j.contains("result") || j.contains("error")) && j.contains("id") &&
      id_key(j["id"]) == id_key(keep->id))
    keep->answered = true;
  if (handlers_.message) handlers_.message(std::move(j));
  if (keep->answered && !keep->long_lived) {
    // Answered: the stream has nothing more for us.
    auto still = calls_.find(key);
    if (still != calls_.end() && still->second == keep) {
      if (keep->http) keep->http->cancel();
      calls_.erase(still);
    }
  }
}

void http_transport::on_end(const std::string& key, const std::string& error) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  auto keep = it->second;
  auto& c = *keep;
  if (!c.sse && !c.body.empty()) deliver(key, c.body);
  if (!calls_.count(key) || c.answered) {
    calls_.erase(key);
    return;
  }
  if (c.status != 0 && (c.status < 200 || c.status > 299)) {
    fail_call(key, failure_kind::http_status,
              "HTTP " + std::to_string(c.status) + (c.body.empty() ? "" : ": " + snippet(c.body)));
    return;
  }
  if (!error.empty()) {
    fail_call(key, failure_kind::transport, error);
    return;
  }
  fail_call(key, failure_kind::transport, "the response stream ended before the response");
}

void http_transport::fail_call(const std::string& key, failure_kind kind, const std::string& error) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  auto c = it->second;
  calls_.erase(it);
  if (c->http) c->http->cancel();
  if (handlers_.request_failed) handlers_.request_failed(c->id, kind, error);
}

void http_transport::send_notification(const json& message) {
  if (closed_) return;
  net::http_request req;
  req.method = "POST";
  req.url = cfg_.url;
  req.tls = cfg_.tls_context;
  req.headers = base_headers("", "");
  req.body = message.dump();
  req.timeout = cfg_.request_timeout;
  req.max_body_bytes = std::size_t{64} * 1024;
  std::string name = cfg_.name;
  std::string method = message.value("method", std::string("response"));
  std::uint64_t index = next_notification_++;
  std::weak_ptr<http_transport> weak = weak_from_this();
  notifications_[index] =
      net::http_fetch(ioc_, std::move(req), [weak, name, method, index](const net::http_result& r) {
        auto self = weak.lock();
        if (!self) return;
        self->notifications_.erase(index);
        if (!r.error.empty() || r.response.status >= 300)
          logging::warn("mcp.notification.failed",
                        {{"server", name},
                         {"method", method},
                         {"error", r.error.empty() ? "HTTP " + std::to_string(r.response.status) : r.error}});
      });
}

void http_transport::cancel_request(const json& id, const std::string&) {
  // Closing the request's stream is the cancellation (no notifications/cancelled over HTTP).
  auto it = calls_.find(id_key(id));
  if (it == calls_.end()) return;
  auto c = it->second;
  calls_.erase(it);
  if (c->http) c->http->cancel();
}

void http_transport::set_protocol(era e, const std::string& version) {
  era_ = e;
  version_ = version;
}

void http_transport::initialized() {
  if (era_ == era::legacy) open_get_stream();
}

void http_transport::open_get_stream() {
  net::http_request req;
  req.method = "GET";
  req.url = cfg_.url;
  req.tls = cfg_.tls_context;
  req.headers = {{"Accept", "text/event-stream"}};
  if (!version_.empty()) req.headers.emplace_back("MCP-Protocol-Version", version_);
  if (!session_id_.empty()) req.headers.emplace_back("Mcp-Session-Id", session_id_);
  for (const auto& kv : cfg_.headers) req.headers.push_back(kv);
  req.timeout = cfg_.request_timeout;
  req.idle_timeout = std::chrono::milliseconds(0);
  get_parser_ = std::make_unique<core::sse_parser>(cfg_.max_message_bytes);
  get_established_ = false;
  std::weak_ptr<http_transport> weak = weak_from_this();
  net::http_stream_handlers sh;
  sh.head = [weak](const net::http_response& head) {
    auto self = weak.lock();
    if (!self) return;
    if (head.status == 200) {
      self->get_established_ = true;
      return;
    }
    // 405: this server sends nothing unsolicited; updates cannot arrive.
    logging::warn("mcp.get_stream.refused",
                  {{"server", self->cfg_.name}, {"status", static_cast<std::int64_t>(head.status)}});
  };
  sh.data = [weak](std::string_view data) {
    auto self = weak.lock();
    if (!self || !self->get_established_) return;
    std::vector<std::string> texts;
    self->get_parser_->feed(data, [&](core::sse_message&& m) {
      if (!m.data.empty()) texts.push_back(std::move(m.data));
    });
    for (auto& t : texts) {
      if (self->closed_) return;
      json j = json::parse(t, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        logging::warn("mcp.message.malformed",
                      {{"server", self->cfg_.name}, {"bytes", static_cast<std::uint64_t>(t.size())}});
        continue;
      }
      if (self->handlers_.message) self->handlers_.message(std::move(j));
    }
  };
  sh.end = [weak](const std::string& error) {
    auto self = weak.lock();
    if (!self || self->closed_ || !self->get_established_) return;
    // Unsolicited updates arrive only here: without it the watches are deaf.
    auto closed = self->handlers_.closed;
    self->close();
    if (closed) closed("the GET stream ended" + (error.empty() ? std::string() : ": " + error));
  };
  get_stream_ = net::http_open_stream(ioc_, std::move(req), std::move(sh));
}

void http_transport::close() {
  if (closed_) return;
  closed_ = true;
  handlers_ = {};
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& [_, c] : calls)
    if (c->http) c->http->cancel();
  if (get_stream_) get_stream_->cancel();
  get_stream_.reset();
  for (auto& [_, n] : notifications_)
    if (n) n->cancel();
  notifications_.clear();
  if (era_ == era::legacy && !session_id_.empty()) {
    // End the legacy session; nobody waits for the answer.
    net::http_request req;
    req.method = "DELETE";
    req.url = cfg_.url;
    req.tls = cfg_.tls_context;
    req.headers = {{"Mcp-Session-Id", session_id_}};
    if (!version_.empty()) req.headers.emplace_back("MCP-Protocol-Version", version_);
    for (const auto& kv : cfg_.headers) req.headers.push_back(kv);
    req.timeout = std::chrono::milliseconds(2000);
    net::http_fetch(ioc_, std::move(req), [](const net::http_result&) {});
    session_id_.clear();
  }
}

}  // namespace tidings::sources::mcp
