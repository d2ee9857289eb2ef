#include "sources/kube/kube_api.hpp"

#include "sources/kube/kube_uri.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/suggest.hpp"
#include "logging/log.hpp"
#include "net/percent_encoding.hpp"

namespace tidings::sources::kube {

using nlohmann::json;

namespace {

// The token in `path` now, else the last one read from it. Requests run on
// the sources thread, but a lock costs nothing next to a request.
std::string token_in_file(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> last_read;
  std::ifstream in(path);
  std::string token{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  std::lock_guard lock(mutex);
  if (!in || token.empty()) {
    auto it = last_read.find(path);
    if (it == last_read.end()) return {};
    logging::warn("source.kube_token_unreadable", {{"file", path}, {"using", "the token read before"}});
    return it->second;
  }
  last_read[path] = token;
  return token;
}

}  // namespace

net::http_headers kube_headers(const kube_config& config) {
  net::http_headers h = {{"Accept", "application/json"}};
  auto token = config.token_file.empty() ? config.token : token_in_file(config.token_file);
  if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
  return h;
}

std::string kube_status_message(int status, std::string_view body) {
  std::string text = std::to_string(status);
  const json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object()) {
    if (const auto reason = parsed.find("reason"); reason != parsed.end() && reason->is_string())
      text += " " + reason->get<std::string>();
    if (const auto message = parsed.find("message"); message != parsed.end() && message->is_string())
      return text + ": " + message->get<std::string>();
  }
  std::string snippet(body.substr(0, 200));
  std::replace(snippet.begin(), snippet.end(), '\n', ' ');
  return snippet.empty() ? text : text + ": " + snippet;
}

namespace {

// Lists page by page (limit / continue), so a large collection never comes
// as one huge body; the pages share one size budget, max_list_bytes.
class list_pager : public net::http_call, public std::enable_shared_from_this<list_pager> {
 public:
  list_pager(boost::asio::io_context& ioc, const kube_config& config, std::string target,
             std::function<void(std::string error, kube_list list)> done)
      : ioc_(ioc), config_(config), target_(std::move(target)), done_(std::move(done)) {}

  void fetch(const std::string& continue_token) {
    net::http_request req;
    req.url = config_.server + target_ + (target_.find('?') == std::string::npos ? "?" : "&") +
              "limit=" + std::to_string(config_.list_page_size);
    req.tls = config_.tls_context;
    if (!continue_token.empty()) req.url += "&continue=" + net::percent_encode(continue_token);
    req.headers = kube_headers(config_);
    req.timeout = config_.request_timeout;
    req.max_body_bytes = config_.max_list_bytes - std::min(config_.max_list_bytes, bytes_);
    call_ = net::http_fetch(ioc_, std::move(req),
                            [self = shared_from_this()](net::http_result r) { self->on_page(std::move(r)); });
  }

  void cancel() override {
    cancelled_ = true;
    if (call_) call_->cancel();
    call_.reset();  // the call holds us: break the cycle now
  }

 private:
  void on_page(net::http_result r) {
    call_.reset();
    if (cancelled_) return;
    if (!r.error.empty()) return finish(std::move(r.error));
    if (r.response.status == 404 && pages_ == 0)
      return explain_not_found(kube_status_message(r.response.status, r.response.body));
    if (r.response.status != 200) return finish(kube_status_message(r.response.status, r.response.body));
    bytes_ += r.response.body.size();
    json body = json::parse(r.response.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return finish("the list is not a JSON object");
    std::string continue_token;
    if (const auto meta = body.find("metadata"); meta != body.end() && meta->is_object()) {
      if (const auto rv = meta->find("resourceVersion"); rv != meta->end() && rv->is_string())
        list_.resource_version = rv->get<std::string>();
      if (const auto c = meta->find("continue"); c != meta->end() && c->is_string())
        continue_token = c->get<std::string>();
    }
    // "ConfigMapList" -> "ConfigMap"; lists leave kind and apiVersion out of items.
    std::string kind;
    if (const auto k = body.find("kind"); k != body.end() && k->is_string()) kind = k->get<std::string>();
    if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0)
      kind.resize(kind.size() - 4);
    else
      kind.clear();
    json api_version = body.value("apiVersion", json());
    auto items = body.find("items");
    if (items != body.end() && !items->is_null() && !items->is_array())
      return finish("the list's items are not an array");
    if (items != body.end() && items->is_array()) {
      for (auto& item : *items) {
        if (item.is_object()) {
          if (!kind.empty() && !item.contains("kind")) item["kind"] = kind;
          if (api_version.is_string() && !item.contains("apiVersion")) item["apiVersion"] = api_version;
        }
        list_.items.push_back(std::move(item));
      }
    }
    if (!continue_token.empty()) {
      if (++pages_ >= max_pages)
        return finish("the list has more than " + std::to_string(max_pages) + " pages");
      return fetch(continue_token);
    }
    finish("");
  }

  // A collection the API server does not have: its discovery document
  // (/api/v1, /apis/GROUP/VERSION) tells what it does have, for the
  // seed's "did you mean". The error stands as it was if that fails.
  void explain_not_found(std::string error) {
    const auto path = target_.substr(0, target_.find('?'));
    const auto slash = path.rfind('/');
    const auto resource = path.substr(slash + 1);
    const auto ns = path.find("/namespaces/");
    const auto discovery = path.substr(0, ns != std::string::npos ? ns : slash);
    net::http_request req;
    req.url = config_.server + discovery;
    req.tls = config_.tls_context;
    req.headers = kube_headers(config_);
    req.timeout = config_.request_timeout;
    req.max_body_bytes = std::size_t{4} * 1024 * 1024;
    call_ = net::http_fetch(
        ioc_, std::move(req),
        [self = shared_from_this(), error, resource, discovery](const net::http_result& r) mutable {
          self->call_.reset();
          if (self->cancelled_) return;
          if (r.error.empty() && r.response.status == 200)
            error += resource_hint(r.response.body, resource, discovery);
          self->finish(std::move(error));
        });
  }

  static std::string resource_hint(const std::string& body, const std::string& resource,
                                   const std::string& discovery) {
    const json doc = json::parse(body, nullptr, false);
    const auto list = doc.is_object() ? doc.find("resources") : doc.end();
    if (!doc.is_object() || list == doc.end() || !list->is_array()) return {};
    std::vector<std::string> names;
    for (const auto& r : *list)
      if (r.is_object() && r.contains("name") && r["name"].is_string() &&
          r["name"].get_ref<const std::string&>().find('/') == std::string::npos)
        names.push_back(r["name"].get<std::string>());
    if (std::find(names.begin(), names.end(), resource) != names.end()) return {};
    auto hint = core::did_you_mean(resource, names);
    return "; " + discovery + " has no resource '" + resource + "'" + (hint.empty() ? "" : "; " + hint);
  }

  void finish(std::string error) {
    auto done = std::move(done_);
    done_ = nullptr;
    if (!done) return;
    if (!error.empty()) return done(std::move(error), {});
    done("", std::move(list_));
  }

  static constexpr int max_pages = 10000;

  boost::asio::io_context& ioc_;
  const kube_config config_;
  std::string target_;
  std::function<void(std::string error, kube_list list)> done_;
  std::shared_ptr<net::http_call> call_;
  kube_list list_;
  std::size_t bytes_ = 0;
  int pages_ = 0;
  bool cancelled_ = false;
};

}  // namespace

std::shared_ptr<net::http_call> kube_list_request(
    boost::asio::io_context& ioc, const kube_config& config, const std::string& target,
    std::function<void(std::string error, kube_list list)> done) {
  auto pager = std::make_shared<list_pager>(ioc, config, target, std::move(done));
  pager->fetch("");
  return pager;
}

}  // namespace tidings::sources::kube
