#pragma once

// One Kubernetes-style API server context (issue 4), filled by the broker
// from the node configuration's YAML. One kube_connector serves one context
// as `kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}`.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "net/tls_context.hpp"
#include "net/tls_pem.hpp"

namespace tidings::sources::kube {

struct kube_config {
  // The URI's {context} and the connector's name "kube:{context}".
  std::string context;
  // The API server, "https://host:port" or "http://host:port".
  std::string server;
  // https:// only: the trust and client certificate (issue 24), and the
  // context made from them when the config was read (null: the system store).
  net::tls_settings tls;
  net::tls_pem tls_inline;  // a kubeconfig's *-data, in place of the files
  std::shared_ptr<net::tls_context> tls_context;

  // Sent as "Authorization: Bearer <token>"; "" sends none. Never logged.
  std::string token;
  // Or the token in this file, read at each request (a projected
  // service-account token is replaced about hourly); the last one read is
  // used while the file cannot be.
  std::string token_file;
  // Each list request (connect to the whole body) and each watch's head.
  std::chrono::milliseconds request_timeout{10000};
  // A watch with no bytes for this long ends (dead peer); bookmarks are
  // requested, which a real API server sends about once a minute.
  std::chrono::milliseconds watch_idle_timeout{300000};
  // Lists are fetched in pages of this many objects (limit / continue).
  std::size_t list_page_size = 500;
  // A list whose pages together are larger than this fails.
  std::size_t max_list_bytes = 64 * 1024 * 1024;
  // One watch event larger than this ends the watch.
  std::size_t max_event_bytes = 8 * 1024 * 1024;
  // Events kept for event-log reads.
  std::size_t ring_capacity = 256;
};

}  // namespace tidings::sources::kube
