// "did you mean" (core/suggest): the closest names to a typo, and none for
// a name nothing resembles.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/suggest.hpp"

using tidings::core::closest_names;
using tidings::core::did_you_mean;

TEST_CASE("a typo of a resource kind or namespace suggests the nearest names, nearest first", "[suggest]") {
  const std::vector<std::string> kinds{"pods",     "configmaps",      "secrets",
                                       "services", "serviceaccounts", "events"};
  CHECK(closest_names("confgimaps", kinds) == std::vector<std::string>{"configmaps"});  // a swap is one edit
  CHECK(closest_names("servics", kinds) == std::vector<std::string>{"services"});
  CHECK(closest_names("pod", kinds) == std::vector<std::string>{"pods"});
  CHECK(closest_names("Secret", kinds) == std::vector<std::string>{"secrets"});  // case does not count
  CHECK(did_you_mean("atproprecords", {"atprotorecords", "records", "atprotofeeds"}) ==
        "did you mean: atprotorecords");
  const std::vector<std::string> namespaces{"default", "kube-system", "kube-public", "monitoring"};
  CHECK(did_you_mean("defualt", namespaces) == "did you mean: default");
  CHECK(did_you_mean("kube-sytem", namespaces) == "did you mean: kube-system");
}

TEST_CASE("nothing is suggested for a name nothing resembles, nor the name itself", "[suggest]") {
  const std::vector<std::string> kinds{"pods", "configmaps", "secrets"};
  CHECK(closest_names("widgets", kinds).empty());
  CHECK(did_you_mean("widgets", kinds).empty());
  CHECK(closest_names("pods", kinds).empty());
  CHECK(closest_names("", kinds).empty());
  CHECK(closest_names("pdos", {"pods", "pods", "pod", "dops", "podz", "pads"}, 2) ==
        std::vector<std::string>{"pods", "pod"});  // ties keep the candidates' order, once each
}
