#pragma once

// One watched collection, `kube://{context}/{resource}{?...}`, as an
// event-log resource (ADR 000 "kcp: event-log resources", done natively
// against the API server):
//
//   idle ──subscribe──▶ listing ──200──▶ opening watch ──head 200──▶ watching
//    ▲                    │ error             │ non-200 / error        │ end, 410,
//    └──────── ended ◀────┴───────────────────┴────────────────────────┘ error
//
// The first list seeds the known objects; a list after `ended` reconciles
// them and logs the gap as synthetic events. The watch starts at the list's
// resourceVersion, so it replays nothing the list gave. The source does the
// backoff between `ended` and the next subscribe().

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "core/json_stream.hpp"
#include "core/kube_reconcile.hpp"
#include "net/http_client.hpp"
#include "sources/kube/kube_config.hpp"
#include "sources/kube/kube_uri.hpp"
#include "sources/upstream.hpp"

namespace tidings::sources::kube {

class kube_upstream final : public upstream {
 public:
  const char* strategy() const override { return "watch"; }
  bool tls_unverified() const override { return config_.tls.insecure_skip_verify; }
  kube_upstream(boost::asio::io_context& ioc, const kube_config& config, kube_uri uri, std::string path);
  ~kube_upstream() override;

  kube_upstream(const kube_upstream&) = delete;
  kube_upstream& operator=(const kube_upstream&) = delete;

  void subscribe(handlers h) override;
  // The event ring as {"events":[...]} (application/vnd.asyncai.events+json).
  void read(std::function<void(read_outcome)> done) override;
  void close() override;

 private:
  enum class phase { idle, listing, opening, watching, closed };

  void on_list(const std::string& error, const struct kube_list& list);
  void open_watch(const std::string& resource_version);
  void on_watch_head(const net::http_response& head);
  void on_watch_data(std::string_view data);
  void on_watch_end(const std::string& error);
  // Handles one complete watch event; returns why the watch must end, or "".
  std::string on_watch_event(std::string_view text, bool* logged);
  // Stops the calls in flight and reports `ended`; the last thing a handler does.
  void end(std::string reason);

  boost::asio::io_context& ioc_;
  const kube_config config_;
  kube_uri uri_;
  std::string path_;   // the collection path on the API server
  std::string label_;  // "kube:ctx configmaps" for messages
  handlers handlers_;
  phase phase_ = phase::idle;
  bool seeded_ = false;
  // Events logged since subscribe() by the re-list, announced once watching.
  bool gap_logged_ = false;
  std::shared_ptr<net::http_call> list_call_;
  std::shared_ptr<net::http_call> watch_call_;
  int watch_status_ = 0;
  std::string watch_error_body_;  // a non-200 watch answer, bounded
  core::json_stream splitter_;
  core::kube_object_table table_;
  core::kube_event_log log_;
  // Posted reads check it: none runs after close().
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tidings::sources::kube
