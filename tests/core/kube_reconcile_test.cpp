#include "core/kube_reconcile.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace tidings::core {
namespace {

using nlohmann::json;

json object(const std::string& uid, const std::string& rv, const std::string& data = "") {
  return json{{"kind", "ConfigMap"},
              {"metadata",
               {{"uid", uid},
                {"name", "cm-" + uid},
                {"namespace", "default"},
                {"resourceVersion", rv},
                {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
              {"data", {{"v", data}}}};
}

json event(const std::string& type, const json& o) {
  return json{{"type", type}, {"object", o}};
}

}  // namespace

TEST_CASE("kube table suppresses ADDED for known uid and resourceVersion", "[kube]") {
  kube_object_table t;
  t.seed(json::array({object("a", "1"), object("b", "2")}));
  CHECK(t.size() == 2);
  CHECK_FALSE(t.apply(event("ADDED", object("a", "1"))).has_value());
  auto changed = t.apply(event("ADDED", object("a", "3")));
  REQUIRE(changed.has_value());
  CHECK(changed->type == "ADDED");
  auto fresh = t.apply(event("ADDED", object("c", "4")));
  REQUIRE(fresh.has_value());
  CHECK(fresh->object["metadata"]["uid"] == "c");
  CHECK_FALSE(fresh->object["metadata"].contains("managedFields"));
  CHECK(t.size() == 3);
}

TEST_CASE("kube table gives MODIFIED the old object and forgets DELETED", "[kube]") {
  kube_object_table t;
  t.seed(json::array({object("a", "1", "x")}));
  auto m = t.apply(event("MODIFIED", object("a", "2", "y")));
  REQUIRE(m.has_value());
  CHECK(m->type == "MODIFIED");
  CHECK(m->object["data"]["v"] == "y");
  CHECK(m->old["data"]["v"] == "x");
  CHECK_FALSE(m->old["metadata"].contains("managedFields"));
  CHECK_FALSE(m->object["metadata"].contains("managedFields"));
  auto d = t.apply(event("DELETED", object("a", "3", "y")));
  REQUIRE(d.has_value());
  CHECK(d->type == "DELETED");
  CHECK(d->old.is_null());
  CHECK(t.size() == 0);
  // Unknown before: MODIFIED without old.
  auto m2 = t.apply(event("MODIFIED", object("z", "9")));
  REQUIRE(m2.has_value());
  CHECK(m2->old.is_null());
}

TEST_CASE("kube table ignores BOOKMARK and malformed events, passes ERROR", "[kube]") {
  kube_object_table t;
  CHECK_FALSE(t.apply(event("BOOKMARK", json{{"metadata", {{"resourceVersion", "7"}}}})).has_value());
  CHECK_FALSE(t.apply(json::array()).has_value());
  CHECK_FALSE(t.apply(json{{"type", "ADDED"}}).has_value());
  CHECK_FALSE(t.apply(event("ADDED", json{{"metadata", json::object()}})).has_value());
  auto e = t.apply(event("ERROR", json{{"kind", "Status"}, {"code", 500}, {"message", "etcd down"}}));
  REQUIRE(e.has_value());
  CHECK(e->type == "ERROR");
  CHECK(e->message == "etcd down");
}

TEST_CASE("kube reconcile emits the gap as synthetic events", "[kube]") {
  kube_object_table t;
  t.seed(json::array({object("keep", "1"), object("change", "1", "old"), object("gone", "1")}));
  auto events = t.reconcile(json::array(
      {object("new", "5"), object("change", "6", "new"), object("keep", "1"), object("new", "5")}));
  REQUIRE(events.size() == 3);
  CHECK(events[0].type == "ADDED");
  CHECK(events[0].object["metadata"]["uid"] == "new");
  CHECK(events[1].type == "MODIFIED");
  CHECK(events[1].object["data"]["v"] == "new");
  CHECK(events[1].old["data"]["v"] == "old");
  CHECK(events[2].type == "DELETED");
  CHECK(events[2].object["metadata"]["uid"] == "gone");
  CHECK(t.size() == 3);
  CHECK(t.contains("new"));
  CHECK_FALSE(t.contains("gone"));
  CHECK(t.reconcile(json::array({object("new", "5"), object("change", "6"), object("keep", "1")})).empty());
}

TEST_CASE("kube objects without uid are keyed by namespace and name", "[kube]") {
  CHECK(kube_object_key(json{{"metadata", {{"name", "n"}, {"namespace", "ns"}}}}) == "ns/n");
  CHECK(kube_object_key(json{{"metadata", {{"name", "n"}}}}) == "/n");
  CHECK(kube_object_key(json{{"metadata", {{"uid", "u"}, {"name", "n"}}}}) == "u");
  CHECK(kube_object_key(json::object()).empty());
}

TEST_CASE("kube event log renders a bounded ring with seq", "[kube]") {
  kube_event_log log(3);
  CHECK(log.render() == R"({"events":[]})");
  CHECK(log.append(kube_event{0, "ADDED", json{{"a", 1}}, nullptr, {}}) == 1);
  log.append(kube_event{0, "MODIFIED", json{{"a", 2}}, json{{"a", 1}}, {}});
  log.append(kube_event{0, "ERROR", nullptr, nullptr, "boom"});
  log.append(kube_event{0, "DELETED", json{{"a", 2}}, nullptr, {}});
  CHECK(log.size() == 3);
  CHECK(log.last_seq() == 4);
  auto body = json::parse(log.render());
  REQUIRE(body["events"].size() == 3);
  CHECK(body["events"][0] ==
        json{{"seq", 2}, {"type", "MODIFIED"}, {"object", {{"a", 2}}}, {"old", {{"a", 1}}}});
  CHECK(body["events"][1] == json{{"seq", 3}, {"type", "ERROR"}, {"message", "boom"}});
  CHECK(body["events"][2] == json{{"seq", 4}, {"type", "DELETED"}, {"object", {{"a", 2}}}});
}

}  // namespace tidings::core
