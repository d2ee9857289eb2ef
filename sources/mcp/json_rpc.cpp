#include "sources/mcp/json_rpc.hpp"

#include <utility>

namespace tidings::sources::mcp {

using nlohmann::json;

rpc_message classify_message(const json& j) {
  rpc_message m;
  if (!j.is_object()) {
    m.problem = "not a JSON object";
    return m;
  }
  auto method = j.find("method");
  auto id = j.find("id");
  bool has_id = id != j.end() && !id->is_null();
  if (id != j.end() && !(id->is_null() || id->is_string() || id->is_number_integer())) {
    m.problem = "id is neither a string nor an integer";
    return m;
  }
  if (method != j.end()) {
    if (!method->is_string()) {
      m.problem = "method is not a string";
      return m;
    }
    m.method = method->get<std::string>();
    auto params = j.find("params");
    if (params != j.end()) m.params = *params;
    if (has_id) {
      m.kind = message_kind::request;
      m.id = *id;
    } else {
      m.kind = message_kind::notification;
    }
    return m;
  }
  auto result = j.find("result");
  auto error = j.find("error");
  if (result != j.end() || error != j.end()) {
    m.kind = message_kind::response;
    if (id != j.end()) m.id = *id;
    if (error != j.end()) {
      if (!error->is_object()) {
        m.kind = message_kind::invalid;
        m.problem = "error is not an object";
        return m;
      }
      m.error = *error;
    } else {
      m.result = *result;
    }
    return m;
  }
  m.problem = "neither a request, a notification nor a response";
  return m;
}

rpc_message parse_message(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    rpc_message m;
    m.problem = "malformed JSON";
    return m;
  }
  return classify_message(j);
}

std::string id_key(const json& id) {
  return id.dump();
}

json make_request(const json& id, std::string_view method, json params) {
  json j = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j;
}

json make_notification(std::string_view method, json params) {
  json j = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j;
}

std::string rpc_reply::describe() const {
  switch (failure) {
    case failure_kind::none:
      return "ok";
    case failure_kind::rpc_error:
      return message + " (code " + std::to_string(code) + ")";
    default:
      return message;
  }
}

rpc_reply rpc_reply::from_response(const rpc_message& m) {
  rpc_reply r;
  if (m.error.is_object()) {
    r.failure = failure_kind::rpc_error;
    auto code = m.error.find("code");
    if (code != m.error.end() && code->is_number_integer()) r.code = code->get<int>();
    auto msg = m.error.find("message");
    r.message = msg != m.error.end() && msg->is_string() ? msg->get<std::string>() : "error";
    auto data = m.error.find("data");
    if (data != m.error.end()) r.data = *data;
  } else {
    r.result = m.result;
  }
  return r;
}

rpc_reply rpc_reply::failed(failure_kind k, std::string message) {
  rpc_reply r;
  r.failure = k;
  r.message = std::move(message);
  return r;
}

json_rpc::~json_rpc() {
  clear();
}

void json_rpc::expect(const json& id, std::string method, std::chrono::milliseconds timeout, reply_fn done) {
  std::string key = id_key(id);
  pending_request p{id, std::move(method), std::move(done), nullptr};
  if (timeout.count() > 0) {
    p.timer = std::make_unique<boost::asio::steady_timer>(ioc_, timeout);
    std::weak_ptr<json_rpc*> weak = self_;
    p.timer->async_wait([weak, key, timeout](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      json_rpc& rpc = **self;
      auto it = rpc.pending_.find(key);
      if (it == rpc.pending_.end()) return;
      json id = it->second.id;
      std::string method = it->second.method;
      auto secs = std::chrono::duration_cast<std::chrono::duration<double>>(timeout).count();
      std::string text = method + " timed out after " + std::to_string(secs);
      text.erase(text.find_last_not_of('0') + 1);
      if (!text.empty() && text.back() == '.') text.pop_back();
      text += " s";
      rpc.finish(key, rpc_reply::failed(failure_kind::timeout, std::move(text)));
      if (rpc.on_timeout_) rpc.on_timeout_(id, method);
    });
  }
  pending_[key] = std::move(p);
}

void json_rpc::finish(const std::string& key, rpc_reply r) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  reply_fn done = std::move(it->second.done);
  if (it->second.timer) it->second.timer->cancel();
  pending_.erase(it);
  if (done) done(std::move(r));
}

bool json_rpc::on_response(const rpc_message& m) {
  std::string key = id_key(m.id);
  if (!pending_.count(key)) return false;
  finish(key, rpc_reply::from_response(m));
  return true;
}

void json_rpc::fail(const json& id, failure_kind k, std::string message) {
  finish(id_key(id), rpc_reply::failed(k, std::move(message)));
}

void json_rpc::forget(const json& id) {
  auto it = pending_.find(id_key(id));
  if (it == pending_.end()) return;
  if (it->second.timer) it->second.timer->cancel();
  pending_.erase(it);
}

void json_rpc::fail_all(const std::string& message) {
  // Callbacks may issue new requests; fail only the ones pending now.
  std::vector<std::string> keys;
  for (auto& [k, _] : pending_) keys.push_back(k);
  for (auto& k : keys) finish(k, rpc_reply::failed(failure_kind::transport, message));
}

void json_rpc::clear() {
  for (auto& [_, p] : pending_)
    if (p.timer) p.timer->cancel();
  pending_.clear();
}

}  // namespace tidings::sources::mcp
