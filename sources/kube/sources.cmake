# The Kubernetes-style watch connector (issue 4): list + watch against an API
# server, served as event-log resources.
list(APPEND TIDINGS_SOURCES_FILES
  kube/kube_uri.cpp
  kube/kube_api.cpp
  kube/kube_upstream.cpp
  kube/kube_connector.cpp)
