#include "net/etcd_client.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "net/base64.hpp"

namespace tidings::net {
namespace {

using json = nlohmann::json;

// The gateway writes 64-bit numbers as JSON strings and leaves out zeros.
std::int64_t number_of(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_string()) {
    const auto& text = it->get_ref<const std::string&>();
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size()) return v;
  }
  throw std::runtime_error(std::string("not a number: ") + name);
}

std::string bytes_of(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return {};
  auto decoded = base64_decode(it->get<std::string>());
  if (!decoded) throw std::runtime_error(std::string("not base64: ") + name);
  return std::move(*decoded);
}

etcd_kv kv_of(const json& j) {
  etcd_kv kv;
  kv.key = bytes_of(j, "key");
  kv.value = bytes_of(j, "value");
  kv.create_revision = number_of(j, "create_revision");
  kv.mod_revision = number_of(j, "mod_revision");
  kv.version = number_of(j, "version");
  kv.lease = number_of(j, "lease");
  return kv;
}

std::vector<etcd_kv> kvs_of(const json& j) {
  std::vector<etcd_kv> out;
  if (const auto it = j.find("kvs"); it != j.end() && it->is_array())
    for (const auto& kv : *it) out.push_back(kv_of(kv));
  return out;
}

std::int64_t revision_of(const json& reply) {
  const auto it = reply.find("header");
  return it == reply.end() ? 0 : number_of(*it, "revision");
}

json op_json(const etcd_op& op) {
  switch (op.what) {
    case etcd_op::kind::put: {
      json put = {{"key", base64_encode(op.key)}, {"value", base64_encode(op.value)}};
      if (op.lease != 0) put["lease"] = std::to_string(op.lease);
      return {{"request_put", put}};
    }
    case etcd_op::kind::remove: {
      json del = {{"key", base64_encode(op.key)}};
      if (!op.range_end.empty()) del["range_end"] = base64_encode(op.range_end);
      return {{"request_delete_range", del}};
    }
    case etcd_op::kind::range: {
      json range = {{"key", base64_encode(op.key)}};
      if (!op.range_end.empty()) range["range_end"] = base64_encode(op.range_end);
      return {{"request_range", range}};
    }
  }
  return {};
}

json compare_json(const etcd_compare& c) {
  json j = {{"key", base64_encode(c.key)}, {"result", "EQUAL"}};
  switch (c.what) {
    case etcd_compare::target::mod_revision:
      j["target"] = "MOD";
      j["mod_revision"] = std::to_string(c.number);
      break;
    case etcd_compare::target::create_revision:
      j["target"] = "CREATE";
      j["create_revision"] = std::to_string(c.number);
      break;
    case etcd_compare::target::version:
      j["target"] = "VERSION";
      j["version"] = std::to_string(c.number);
      break;
    case etcd_compare::target::value:
      j["target"] = "VALUE";
      j["value"] = base64_encode(c.value);
      break;
  }
  return j;
}

// Splits a watch response's body into its JSON objects as they complete
// (the gateway writes one object per message, not always one per chunk).
class object_splitter {
 public:
  template <class F>
  void feed(std::string_view data, F&& each) {
    for (const char c : data) {
      if (depth_ == 0 && c != '{') continue;  // whitespace between objects
      buffer_ += c;
      if (in_string_) {
        if (escaped_)
          escaped_ = false;
        else if (c == '\\')
          escaped_ = true;
        else if (c == '"')
          in_string_ = false;
        continue;
      }
      if (c == '"')
        in_string_ = true;
      else if (c == '{')
        ++depth_;
      else if (c == '}' && --depth_ == 0) {
        each(buffer_);
        buffer_.clear();
      }
    }
  }
  std::size_t pending() const { return buffer_.size(); }

 private:
  std::string buffer_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

constexpr std::chrono::milliseconds retry_pause{50};

// A watch message larger than this is not one etcd sends for our keys.
constexpr std::size_t max_watch_message = std::size_t{16} * 1024 * 1024;

}  // namespace

std::string etcd_prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = end.back();
    if (static_cast<unsigned char>(last) < 0xff) {
      last = static_cast<char>(static_cast<unsigned char>(last) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd's "from key to the end"
}

std::shared_ptr<etcd_client> etcd_client::make(boost::asio::io_context& ioc,
                                               std::vector<std::string> endpoints,
                                               std::chrono::milliseconds timeout,
                                               std::shared_ptr<tls_context> tls) {
  return std::shared_ptr<etcd_client>(new etcd_client(ioc, std::move(endpoints), timeout, std::move(tls)));
}

etcd_client::etcd_client(boost::asio::io_context& ioc, std::vector<std::string> endpoints,
                         std::chrono::milliseconds timeout, std::shared_ptr<tls_context> tls)
    : ioc_(ioc), endpoints_(std::move(endpoints)), timeout_(timeout), tls_(std::move(tls)) {
  if (endpoints_.empty()) endpoints_.emplace_back("http://127.0.0.1:2379");
}

void etcd_client::forget_finished() {
  calls_.erase(std::remove_if(calls_.begin(), calls_.end(), [](const auto& w) { return w.expired(); }),
               calls_.end());
}

void etcd_client::cancel_all() {
  ++generation_;  // retries waiting on a timer belong to the calls ended here
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& weak : calls)
    if (auto call = weak.lock()) call->cancel();
}

namespace {

// etcd's answers that say nothing was done and another try may work: no
// leader yet, a leader change dropped the request, or the member is going.
bool transient(int status, const std::string& message) {
  return status == 503 || message.find("leader changed") != std::string::npos ||
         message.find("no leader") != std::string::npos || message.find("stopped") != std::string::npos ||
         message.find("timed out") != std::string::npos;
}

// etcd's refusal: {"message": ...} from unary calls, {"error": {"message":
// ...}} from the streaming ones (keep-alive, watch).
std::string error_message(int status, const std::string& body) {
  const auto reply = json::parse(body, nullptr, false);
  if (reply.is_object()) {
    if (const auto it = reply.find("message"); it != reply.end() && it->is_string())
      return it->get<std::string>();
    if (const auto it = reply.find("error"); it != reply.end() && it->is_object())
      if (const auto m = it->find("message"); m != it->end() && m->is_string()) return m->get<std::string>();
  }
  return "HTTP " + std::to_string(status);
}

}  // namespace

void etcd_client::call(std::string path, std::string body, bool idempotent,
                       std::function<void(std::string error, std::string json)> cb) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  attempt(std::move(path), std::move(body), idempotent, deadline, std::move(cb));
}

void etcd_client::attempt(std::string path, std::string body, bool idempotent,
                          std::chrono::steady_clock::time_point deadline,
                          std::function<void(std::string error, std::string json)> cb) {
  http_request req;
  req.method = "POST";
  const std::size_t endpoint = current_;
  req.url = endpoints_[endpoint] + path;
  req.tls = tls_;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body;
  req.timeout = std::max(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
      std::chrono::milliseconds(1));
  forget_finished();
  std::weak_ptr<etcd_client> weak = weak_from_this();
  calls_.push_back(http_fetch(
      ioc_, std::move(req),
      [weak, endpoint, path, body, idempotent, deadline, cb = std::move(cb)](http_result r) mutable {
        auto self = weak.lock();
        if (!self) return;
        const std::string& where = self->endpoints_[endpoint];
        std::string error;
        bool retry = false;
        // Whether the request may have reached etcd and been applied: not
        // when the connection was never made (nor its TLS), nor when etcd refused it.
        bool outcome_unknown = false;
        if (!r.error.empty()) {
          error = r.error;
          retry = true;
          outcome_unknown = r.error.rfind("resolve ", 0) != 0 && r.error.rfind("connect ", 0) != 0 &&
                            r.error.rfind("TLS handshake ", 0) != 0;
        } else if (r.response.status != 200) {
          error = error_message(r.response.status, r.response.body);
          retry = transient(r.response.status, error);
          outcome_unknown = retry;  // a leader change or a timeout may come after the commit
        } else {
          cb("", std::move(r.response.body));
          return;
        }
        // Later calls go to the next member.
        if (retry && self->current_ == endpoint) self->current_ = (endpoint + 1) % self->endpoints_.size();
        // A read or a keep-alive is tried again, on the next member, until the
        // call's time is up; a write is the caller's to judge (it may have been
        // applied).
        if (idempotent && retry && std::chrono::steady_clock::now() + retry_pause < deadline) {
          auto timer = std::make_shared<boost::asio::steady_timer>(self->ioc_, retry_pause);
          timer->async_wait([weak, timer, generation = self->generation_, path = std::move(path),
                             body = std::move(body), deadline,
                             cb = std::move(cb)](const boost::system::error_code& ec) mutable {
            auto again = weak.lock();
            if (ec || !again || again->generation_ != generation) return;
            again->attempt(std::move(path), std::move(body), true, deadline, std::move(cb));
          });
          return;
        }
        cb("etcd " + where + ": " + error +
               (!idempotent && outcome_unknown ? " (a write: it may have been applied)" : ""),
           {});
      }));
}

namespace {

// Runs parse on the reply's JSON; a reply we cannot read is an error, never an exception.
template <class T, class Parse>
std::function<void(std::string, std::string)> parsed(etcd_client::done<T> cb, std::string what, Parse parse) {
  return [cb = std::move(cb), what = std::move(what), parse = std::move(parse)](std::string error,
                                                                                std::string body) {
    if (!error.empty()) {
      cb(std::move(error), T{});
      return;
    }
    T result{};
    try {
      const auto reply = json::parse(body);
      result = parse(reply);
    } catch (const std::exception& e) {
      cb("etcd " + what + ": unreadable reply (" + e.what() + ")", T{});
      return;
    }
    cb("", std::move(result));
  };
}

}  // namespace

void etcd_client::grant_lease(std::int64_t ttl_seconds, done<etcd_lease> cb) {
  call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_seconds)}}.dump(), false,
       parsed<etcd_lease>(std::move(cb), "lease grant", [](const json& reply) {
         return etcd_lease{number_of(reply, "ID"), number_of(reply, "TTL")};
       }));
}

void etcd_client::keep_alive(std::int64_t lease, done<etcd_lease> cb) {
  // The gateway answers a one-message stream with {"result": {...}}; a lease
  // that has expired comes back without a TTL.
  call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump(), true,
       parsed<etcd_lease>(std::move(cb), "lease keep-alive", [](const json& reply) {
         const auto& result = reply.at("result");
         return etcd_lease{number_of(result, "ID"), number_of(result, "TTL")};
       }));
}

void etcd_client::revoke_lease(std::int64_t lease, done<bool> cb) {
  // A lease etcd does not know is gone already: what a revoke wants, and
  // what a retried revoke whose first answer was lost hears.
  auto gone_is_done = [cb = std::move(cb)](std::string error, bool revoked) {
    if (error.find("requested lease not found") != std::string::npos)
      cb("", true);
    else
      cb(std::move(error), revoked);
  };
  call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump(), true,
       parsed<bool>(std::move(gone_is_done), "lease revoke", [](const json&) { return true; }));
}

void etcd_client::put(std::string key, std::string value, std::int64_t lease, done<std::int64_t> cb) {
  json body = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  call("/v3/kv/put", body.dump(), false, parsed<std::int64_t>(std::move(cb), "put", revision_of));
}

void etcd_client::range(std::string key, std::string range_end, done<etcd_range_result> cb) {
  json body = {{"key", base64_encode(key)}};
  if (!range_end.empty()) body["range_end"] = base64_encode(range_end);
  call("/v3/kv/range", body.dump(), true,
       parsed<etcd_range_result>(std::move(cb), "range", [](const json& reply) {
         return etcd_range_result{revision_of(reply), kvs_of(reply)};
       }));
}

void etcd_client::txn(std::vector<etcd_compare> compares, std::vector<etcd_op> success,
                      std::vector<etcd_op> failure, done<etcd_txn_result> cb) {
  json body = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : compares) body["compare"].push_back(compare_json(c));
  for (const auto& op : success) body["success"].push_back(op_json(op));
  for (const auto& op : failure) body["failure"].push_back(op_json(op));
  call("/v3/kv/txn", body.dump(), false, parsed<etcd_txn_result>(std::move(cb), "txn", [](const json& reply) {
         etcd_txn_result r;
         r.succeeded = reply.value("succeeded", false);
         r.revision = revision_of(reply);
         if (const auto it = reply.find("responses"); it != reply.end() && it->is_array())
           for (const auto& response : *it) {
             const auto range = response.find("response_range");
             r.ranges.push_back(range == response.end() ? std::vector<etcd_kv>{} : kvs_of(*range));
           }
         return r;
       }));
}

namespace {

// A watch's shared state: the handlers (released once it ends), the
// splitter, and whether end was said. The handle given out cancels
// through it, so nothing runs after cancel(), not even the rest of a
// piece already being split.
struct watch_state {
  etcd_watch_handlers handlers;
  object_splitter splitter;
  bool ended = false;
  std::string where;
  std::shared_ptr<http_call> stream;
  void end(std::string error) {
    if (ended) return;
    ended = true;
    auto cb = std::move(handlers.end);
    handlers = {};
    if (cb) cb("etcd " + where + ": " + error);
  }
  void stop() {
    ended = true;
    handlers = {};
    if (auto s = std::move(stream)) s->cancel();
  }
};

class watch_call : public http_call {
 public:
  explicit watch_call(std::shared_ptr<watch_state> state) : state_(std::move(state)) {}
  void cancel() override { state_->stop(); }

 private:
  std::shared_ptr<watch_state> state_;
};

// One watch message: the events it brings, or why the watch is over.
std::string read_watch_message(const std::string& text, std::vector<etcd_event>* events,
                               std::int64_t* revision) {
  try {
    const auto message = json::parse(text);
    if (const auto it = message.find("error"); it != message.end())
      return it->is_object() ? it->value("message", std::string("watch error")) : std::string("watch error");
    const auto& result = message.at("result");
    *revision = revision_of(result);
    if (result.value("canceled", false)) {
      std::string why = "watch cancelled";
      if (const auto compact = number_of(result, "compact_revision"); compact > 0)
        why += " (compacted at revision " + std::to_string(compact) + ")";
      else if (result.contains("cancel_reason"))
        why += " (" + result["cancel_reason"].get<std::string>() + ")";
      return why;
    }
    if (const auto it = result.find("events"); it != result.end() && it->is_array())
      for (const auto& e : *it)
        events->push_back(etcd_event{e.value("type", std::string()) == "DELETE", kv_of(e.at("kv"))});
    return {};
  } catch (const std::exception& e) {
    return std::string("unreadable watch message (") + e.what() + ")";
  }
}

}  // namespace

std::shared_ptr<http_call> etcd_client::watch(std::string key, std::string range_end,
                                              std::int64_t start_revision, etcd_watch_handlers handlers,
                                              std::chrono::milliseconds idle_timeout) {
  json create = {{"key", base64_encode(key)}, {"progress_notify", true}};
  if (!range_end.empty()) create["range_end"] = base64_encode(range_end);
  if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
  const std::size_t endpoint = current_;
  http_request req;
  req.method = "POST";
  req.url = endpoints_[endpoint] + "/v3/watch";
  req.tls = tls_;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = json{{"create_request", create}}.dump();
  req.timeout = timeout_;
  req.idle_timeout = idle_timeout;

  auto state = std::make_shared<watch_state>();
  state->handlers = std::move(handlers);
  state->where = endpoints_[endpoint];
  // A watch that fails sends the caller's next watch (and calls) to the
  // next member.
  std::weak_ptr<etcd_client> weak = weak_from_this();
  auto fail = [state, weak, endpoint](std::string error) {
    if (state->ended) return;
    if (auto self = weak.lock(); self && self->current_ == endpoint)
      self->current_ = (endpoint + 1) % self->endpoints_.size();
    state->end(std::move(error));
    state->stop();
  };
  http_stream_handlers h;
  h.head = [fail](const http_response& head) {
    if (head.status != 200) fail("watch refused: " + error_message(head.status, head.body));
  };
  h.data = [state, fail](std::string_view data) {
    state->splitter.feed(data, [&](const std::string& text) {
      if (state->ended) return;
      std::vector<etcd_event> events;
      std::int64_t revision = 0;
      if (auto problem = read_watch_message(text, &events, &revision); !problem.empty()) {
        fail(std::move(problem));
        return;
      }
      if (!events.empty() && state->handlers.events) state->handlers.events(events, revision);
    });
    if (!state->ended && state->splitter.pending() > max_watch_message) fail("watch message over 16 MiB");
  };
  h.end = [fail](std::string error) { fail(error.empty() ? "watch closed by etcd" : std::move(error)); };
  state->stream = http_open_stream(ioc_, std::move(req), std::move(h));
  auto handle = std::make_shared<watch_call>(state);
  forget_finished();
  calls_.push_back(handle);
  return handle;
}

}  // namespace tidings::net
