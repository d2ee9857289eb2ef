#include <catch2/catch.hpp>

#include "core/resource_routing.hpp"

using namespace tidings::core;

namespace {

std::vector<upstream_listing> listings() {
  return {
      {"memory", {"memo://notes"}, {"memo://{key}"}, true},
      {"kube:test", {}, {"kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}"}, false},
      {"files", {}, {"file://{+path}"}, false},
      {"second-any", {"kube://test/special"}, {}, true},
  };
}

}  // namespace

TEST_CASE("an exact listing wins over every template", "[routing]") {
  auto r = route_resource("kube://test/special", listings());
  REQUIRE(r);
  CHECK(r->index == 3);
  CHECK(r->reason == route_reason::exact);
  CHECK(r->matched == "kube://test/special");

  auto memo = route_resource("memo://notes", listings());
  REQUIRE(memo);
  CHECK(memo->index == 0);
  CHECK(memo->reason == route_reason::exact);
}

TEST_CASE("otherwise the first matching template", "[routing]") {
  auto r = route_resource("kube://test/configmaps?namespace=default", listings());
  REQUIRE(r);
  CHECK(r->index == 1);
  CHECK(r->reason == route_reason::template_match);
  CHECK(r->matched == "kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}");
  CHECK(r->variables.at("namespace") == "default");

  auto plain = route_resource("kube://test/configmaps", listings());
  REQUIRE(plain);
  CHECK(plain->index == 1);

  auto file = route_resource("file:///etc/app/config.json", listings());
  REQUIRE(file);
  CHECK(file->index == 2);
  CHECK(file->variables.at("path") == "/etc/app/config.json");

  auto memo = route_resource("memo://other", listings());
  REQUIRE(memo);
  CHECK(memo->index == 0);
  CHECK(memo->reason == route_reason::template_match);

  // Two upstreams whose templates both match: configuration order decides.
  std::vector<upstream_listing> twice = {{"a", {}, {"x://{id}"}, false}, {"b", {}, {"x://{name}"}, false}};
  CHECK(route_resource("x://1", twice)->index == 0);
}

TEST_CASE("otherwise the first upstream that accepts any URI", "[routing]") {
  auto r = route_resource("kube://test/pods?watch=true", listings());
  REQUIRE(r);
  CHECK(r->index == 0);
  CHECK(r->reason == route_reason::fallback);
  CHECK(r->matched.empty());
  CHECK(route_reason_name(r->reason) == "fallback");
  CHECK(route_reason_name(route_reason::exact) == "exact");
  CHECK(route_reason_name(route_reason::template_match) == "template");
}

TEST_CASE("no upstream takes the URI", "[routing]") {
  std::vector<upstream_listing> strict = {{"files", {}, {"file://{+path}"}, false}};
  CHECK_FALSE(route_resource("memo://notes", strict));
  CHECK_FALSE(route_resource("memo://notes", {}));
}

TEST_CASE("a bad template is skipped and reported, the others still route", "[routing]") {
  resource_router router({{"broken", {}, {"x://{id"}, false}, {"good", {}, {"x://{id}"}, false}});
  REQUIRE(router.invalid_templates().size() == 1);
  CHECK(router.invalid_templates()[0].starts_with("broken: invalid URI template"));
  auto r = router.route_uri("x://1");
  REQUIRE(r);
  CHECK(r->index == 1);
  CHECK(router.listings().size() == 2);
}

TEST_CASE("the Example: line of a description", "[routing]") {
  CHECK(
      description_example("Config maps.\nExample: await watch_start(name=\"cm\", uri=\"kube://t/cm\")  \n") ==
      "await watch_start(name=\"cm\", uri=\"kube://t/cm\")");
  CHECK(description_example("Watch a file. Example:\tfile:///etc/app.json\r\nMore text.") ==
        "file:///etc/app.json");
  CHECK(description_example("Example: first\nExample: second") == "first");
  CHECK(description_example("No example here.").empty());
  CHECK(description_example("Example:   \nnext line").empty());
  CHECK(description_example("example: lowercase is not the label").empty());
}
