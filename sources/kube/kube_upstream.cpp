#include "sources/kube/kube_upstream.hpp"

#include <utility>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "core/read_extraction.hpp"
#include "sources/kube/kube_api.hpp"

namespace tidings::sources::kube {

using nlohmann::json;

namespace {

constexpr std::size_t max_error_body = std::size_t{16} * 1024;

// An in-band ERROR event whose Status says 410 Gone. Checked by hand:
// json::value() throws on a wrongly typed field.
bool is_gone_event(const json& event) {
  if (!event.is_object()) return false;
  const auto type = event.find("type");
  if (type == event.end() || !type->is_string() || *type != "ERROR") return false;
  const auto object = event.find("object");
  if (object == event.end() || !object->is_object()) return false;
  const auto code = object->find("code");
  return code != object->end() && code->is_number_integer() && code->get<std::int64_t>() == 410;
}

}  // namespace

kube_upstream::kube_upstream(boost::asio::io_context& ioc, const kube_config& config, kube_uri uri,
                             std::string path)
    : ioc_(ioc),
      config_(config),
      uri_(std::move(uri)),
      path_(std::move(path)),
      label_("kube:" + config.context + " " + uri_.resource),
      splitter_(config.max_event_bytes),
      log_(config.ring_capacity) {}

kube_upstream::~kube_upstream() {
  close();
}

void kube_upstream::subscribe(handlers h) {
  if (phase_ == phase::closed) return;
  handlers_ = std::move(h);
  if (list_call_) list_call_->cancel();
  if (watch_call_) watch_call_->cancel();
  watch_call_.reset();
  phase_ = phase::listing;
  gap_logged_ = false;
  list_call_ =
      kube_list_request(ioc_, config_, kube_list_target(uri_, path_),
                        [this](const std::string& error, const kube_list& list) { on_list(error, list); });
}

void kube_upstream::on_list(const std::string& error, const kube_list& list) {
  list_call_.reset();
  if (phase_ != phase::listing) return;
  if (!error.empty()) return end(label_ + ": list failed: " + error);
  if (!seeded_) {
    table_.seed(list.items);
    seeded_ = true;
  } else {
    for (auto& e : table_.reconcile(list.items)) {
      log_.append(std::move(e));
      gap_logged_ = true;
    }
  }
  open_watch(list.resource_version);
}

void kube_upstream::open_watch(const std::string& resource_version) {
  phase_ = phase::opening;
  watch_status_ = 0;
  watch_error_body_.clear();
  splitter_.reset();
  net::http_request req;
  req.url = config_.server + kube_watch_target(uri_, path_, resource_version);
  req.tls = config_.tls_context;
  req.headers = kube_headers(config_);
  req.timeout = config_.request_timeout;
  req.idle_timeout = config_.watch_idle_timeout;
  net::http_stream_handlers h;
  h.head = [this](const net::http_response& head) { on_watch_head(head); };
  h.data = [this](std::string_view data) { on_watch_data(data); };
  h.end = [this](const std::string& error) { on_watch_end(error); };
  watch_call_ = net::http_open_stream(ioc_, std::move(req), std::move(h));
}

void kube_upstream::on_watch_head(const net::http_response& head) {
  watch_status_ = head.status;
  if (head.status != 200) return;  // the body says why; reported at the end
  phase_ = phase::watching;
  const bool announce = gap_logged_;
  gap_logged_ = false;
  auto subscribed = handlers_.subscribed;
  auto updated = handlers_.updated;
  auto alive = std::weak_ptr<bool>(alive_);
  if (subscribed) subscribed();
  // The source may have closed us from `subscribed`.
  if (announce && alive.lock() && phase_ == phase::watching && updated) updated();
}

void kube_upstream::on_watch_data(std::string_view data) {
  if (watch_status_ != 200) {
    const auto room = max_error_body - std::min(max_error_body, watch_error_body_.size());
    watch_error_body_.append(data.substr(0, room));
    return;
  }
  bool logged = false;
  std::string stop;  // why the watch must end; end() runs after the loop
  std::string split_error = splitter_.feed(data, [&](std::string_view value) {
    if (stop.empty()) stop = on_watch_event(value, &logged);
  });
  if (!stop.empty()) return end(std::move(stop));
  if (!split_error.empty()) return end(label_ + ": bad watch stream: " + split_error);
  if (logged && handlers_.updated) {
    auto updated = handlers_.updated;
    updated();
  }
}

std::string kube_upstream::on_watch_event(std::string_view text, bool* logged) {
  json event = json::parse(text, nullptr, false);
  if (event.is_discarded()) return label_ + ": the watch sent malformed JSON";
  if (is_gone_event(event)) {
    // The resourceVersion is too old: re-list; readers see no ERROR for it.
    return label_ + ": watch expired: " + kube_status_message(410, event["object"].dump());
  }
  if (auto e = table_.apply(std::move(event))) {
    log_.append(std::move(*e));
    *logged = true;
  }
  return {};
}

void kube_upstream::on_watch_end(const std::string& error) {
  watch_call_.reset();
  if (phase_ != phase::opening && phase_ != phase::watching) return;
  if (watch_status_ != 0 && watch_status_ != 200)
    return end(label_ + ": watch failed: " + kube_status_message(watch_status_, watch_error_body_));
  if (!error.empty()) return end(label_ + ": watch failed: " + error);
  end(label_ + ": the API server ended the watch");
}

void kube_upstream::end(std::string reason) {
  if (list_call_) list_call_->cancel();
  if (watch_call_) watch_call_->cancel();
  list_call_.reset();
  watch_call_.reset();
  phase_ = phase::idle;
  auto ended = std::move(handlers_.ended);
  handlers_ = {};
  if (ended) ended(std::move(reason));
}

void kube_upstream::read(std::function<void(read_outcome)> done) {
  if (phase_ == phase::closed) return;
  read_result r{std::string(core::event_log_mime_type), log_.render()};
  boost::asio::post(
      ioc_, [alive = std::weak_ptr<bool>(alive_), done = std::move(done), r = std::move(r)]() mutable {
        if (alive.lock()) done(read_outcome::ok(std::move(r)));
      });
}

void kube_upstream::close() {
  if (phase_ == phase::closed) return;
  phase_ = phase::closed;
  alive_.reset();
  if (list_call_) list_call_->cancel();
  if (watch_call_) watch_call_->cancel();
  list_call_.reset();
  watch_call_.reset();
  handlers_ = {};
}

}  // namespace tidings::sources::kube
