#pragma once

// `kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}`:
// parsing, the canonical spelling (so equal watches share one source), and
// the API server paths it maps to.
//
// {resource} is kubectl's `resource[.version.group]`: `configmaps` is the
// core group (/api/v1/...), `deployments.v1.apps` is /apis/apps/v1/....
// A namespace that is absent or `*` means all namespaces.

#include <string>
#include <string_view>

namespace tidings::sources::kube {

struct kube_uri {
  std::string context;
  std::string resource;    // as written, e.g. "deployments.v1.apps"
  std::string namespace_;  // "" for all namespaces
  std::string label_selector;
  std::string field_selector;
};

bool parse_kube_uri(std::string_view uri, kube_uri* out, std::string* error);

// Parameters in a fixed order, `*` and empty ones left out.
std::string canonical_kube_uri(const kube_uri& u);

// The collection path on the API server, e.g. /api/v1/namespaces/ns/configmaps.
bool kube_collection_path(const kube_uri& u, std::string* path, std::string* error);

// The list request target (path plus selectors).
std::string kube_list_target(const kube_uri& u, const std::string& path);
// The watch request target from a list's resourceVersion.
std::string kube_watch_target(const kube_uri& u, const std::string& path,
                              const std::string& resource_version);

}  // namespace tidings::sources::kube
