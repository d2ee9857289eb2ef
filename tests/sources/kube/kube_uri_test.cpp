#include "sources/kube/kube_uri.hpp"

#include <catch2/catch.hpp>

namespace tidings::sources::kube {

TEST_CASE("kube URIs parse into context, resource and parameters", "[kube]") {
  kube_uri u;
  std::string error;
  REQUIRE(parse_kube_uri("kube://prod/configmaps?namespace=default&labelSelector=app%3Dweb,tier!%3Ddb", &u,
                         &error));
  CHECK(u.context == "prod");
  CHECK(u.resource == "configmaps");
  CHECK(u.namespace_ == "default");
  CHECK(u.label_selector == "app=web,tier!=db");
  CHECK(u.field_selector.empty());

  REQUIRE(parse_kube_uri("kube://root%3Aapp/deployments.v1.apps?namespace=*", &u, &error));
  CHECK(u.context == "root:app");
  CHECK(u.namespace_.empty());

  CHECK_FALSE(parse_kube_uri("kcp://x/configmaps", &u, &error));
  CHECK_FALSE(parse_kube_uri("kube://x", &u, &error));
  CHECK_FALSE(parse_kube_uri("kube:///configmaps", &u, &error));
  CHECK_FALSE(parse_kube_uri("kube://x/ConfigMaps", &u, &error));
  CHECK_FALSE(parse_kube_uri("kube://x/configmaps?limit=5", &u, &error));
  CHECK(error.find("unknown parameter 'limit'") != std::string::npos);
  CHECK_FALSE(parse_kube_uri("kube://x/configmaps?namespace=a&namespace=b", &u, &error));
  CHECK_FALSE(parse_kube_uri("kube://x/configmaps?namespace=Bad_NS", &u, &error));
}

TEST_CASE("kube URIs have one canonical spelling", "[kube]") {
  auto canon = [](const std::string& s) {
    kube_uri u;
    std::string error;
    REQUIRE(parse_kube_uri(s, &u, &error));
    return canonical_kube_uri(u);
  };
  const std::string expected = "kube://prod/configmaps?namespace=ns&labelSelector=app=web&fieldSelector=a=b";
  CHECK(canon("kube://prod/configmaps?fieldSelector=a%3Db&labelSelector=app=web&namespace=ns") == expected);
  CHECK(canon(expected) == expected);
  CHECK(canon("kube://prod/configmaps?namespace=*") == "kube://prod/configmaps");
  CHECK(canon("kube://prod/configmaps?namespace=") == "kube://prod/configmaps");
  CHECK(canon("kube://prod/configmaps?labelSelector=a%26b") == "kube://prod/configmaps?labelSelector=a%26b");
}

TEST_CASE("kube resources map to API server paths", "[kube]") {
  auto path_of = [](const std::string& s) {
    kube_uri u;
    std::string error, path;
    REQUIRE(parse_kube_uri(s, &u, &error));
    if (!kube_collection_path(u, &path, &error)) return "error: " + error;
    return path;
  };
  CHECK(path_of("kube://c/configmaps") == "/api/v1/configmaps");
  CHECK(path_of("kube://c/configmaps?namespace=ns") == "/api/v1/namespaces/ns/configmaps");
  CHECK(path_of("kube://c/deployments.v1.apps?namespace=ns") == "/apis/apps/v1/namespaces/ns/deployments");
  CHECK(path_of("kube://c/ingresses.v1.networking.k8s.io") == "/apis/networking.k8s.io/v1/ingresses");
  CHECK(path_of("kube://c/deployments.apps").rfind("error: ", 0) == 0);

  kube_uri u;
  std::string error;
  REQUIRE(
      parse_kube_uri("kube://c/pods?labelSelector=app=web&fieldSelector=status.phase=Running", &u, &error));
  CHECK(kube_list_target(u, "/api/v1/pods") ==
        "/api/v1/pods?labelSelector=app%3Dweb&fieldSelector=status.phase%3DRunning");
  CHECK(kube_watch_target(u, "/api/v1/pods", "42") ==
        "/api/v1/"
        "pods?watch=1&allowWatchBookmarks=true&resourceVersion=42&labelSelector=app%3Dweb&fieldSelector="
        "status.phase%3DRunning");
}

}  // namespace tidings::sources::kube
