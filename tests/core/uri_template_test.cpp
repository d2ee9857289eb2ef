#include <catch2/catch.hpp>

#include <string>

#include "core/uri_template.hpp"

using namespace tidings::core;

namespace {

uri_template parsed(std::string_view text) {
  std::string error;
  auto t = uri_template::parse(text, &error);
  INFO(error);
  REQUIRE(t);
  return *t;
}

std::string parse_error(std::string_view text) {
  std::string error;
  auto t = uri_template::parse(text, &error);
  CHECK_FALSE(t);
  return error;
}

}  // namespace

TEST_CASE("the kube template matches with and without its query", "[uri_template]") {
  auto t = parsed("kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}");
  auto with = t.match("kube://test/configmaps?namespace=default");
  REQUIRE(with);
  CHECK(*with == uri_variables{{"context", "test"}, {"resource", "configmaps"}, {"namespace", "default"}});

  auto without = t.match("kube://test/configmaps");
  REQUIRE(without);
  CHECK(*without == uri_variables{{"context", "test"}, {"resource", "configmaps"}});

  CHECK(t.variable_names() ==
        std::vector<std::string>{"context", "resource", "namespace", "labelSelector", "fieldSelector"});
}

TEST_CASE("query parameters come in any order, each optional, none unknown or repeated", "[uri_template]") {
  auto t = parsed("kube://{context}/{resource}{?namespace,labelSelector,fieldSelector}");
  auto any_order = t.match("kube://c/pods?labelSelector=app%3Dweb&namespace=ns");
  REQUIRE(any_order);
  CHECK(any_order->at("labelSelector") == "app=web");
  CHECK(any_order->at("namespace") == "ns");
  CHECK_FALSE(any_order->contains("fieldSelector"));

  // Hand-typed values keep '=' ',' '!' '*' unencoded.
  auto raw = t.match("kube://c/pods?labelSelector=app=web,tier!=db&fieldSelector=a.b=c&namespace=*");
  REQUIRE(raw);
  CHECK(raw->at("labelSelector") == "app=web,tier!=db");
  CHECK(raw->at("fieldSelector") == "a.b=c");
  CHECK(raw->at("namespace") == "*");

  auto empty = t.match("kube://c/pods?namespace=&labelSelector");
  REQUIRE(empty);
  CHECK(empty->at("namespace").empty());
  CHECK(empty->at("labelSelector").empty());

  CHECK_FALSE(t.match("kube://c/pods?watch=true"));
  CHECK_FALSE(t.match("kube://c/pods?namespace=a&watch=true"));
  CHECK_FALSE(t.match("kube://c/pods?namespace=a&namespace=b"));
  // '&' is a sub-delim: outside a query it is part of the segment.
  CHECK(t.match("kube://c/pods&namespace=a")->at("resource") == "pods&namespace=a");
  CHECK_FALSE(t.match("kube://c/pods?namespace=a#frag"));
  CHECK_FALSE(t.match("kube://c/pods?"));
}

TEST_CASE("the kcp template matches the seed's example URI", "[uri_template]") {
  auto t = parsed("kcp-events://watch/{workspace}/{resource}{?namespace,labelSelector,fieldSelector,kcp}");
  auto m = t.match("kcp-events://watch/root:app/configmaps?namespace=*");
  REQUIRE(m);
  CHECK(m->at("workspace") == "root:app");
  CHECK(m->at("resource") == "configmaps");
  CHECK(m->at("namespace") == "*");
  CHECK_FALSE(t.match("kcp-events://watch/root/app/configmaps"));
  CHECK_FALSE(t.match("kcp-api://root:app/resources"));
}

TEST_CASE("simple variables stay inside one segment, reserved ones cross '/'", "[uri_template]") {
  auto simple = parsed("file://{path}");
  CHECK_FALSE(simple.match("file:///tmp/a.json"));
  auto one = simple.match("file://a%2Fb");
  REQUIRE(one);
  CHECK(one->at("path") == "a/b");
  CHECK_FALSE(simple.match("file://a?b"));
  CHECK_FALSE(simple.match("file://a#b"));

  auto reserved = parsed("file://{+path}");
  auto m = reserved.match("file:///tmp/dir/my%20file.json");
  REQUIRE(m);
  CHECK(m->at("path") == "/tmp/dir/my file.json");
  CHECK_FALSE(reserved.match("file:///tmp/a?x=1"));
  CHECK_FALSE(reserved.match("file:///tmp/a b"));
  CHECK_FALSE(reserved.match("file:///tmp/bad%zz"));
  CHECK_FALSE(reserved.match("http:///tmp/a"));
}

TEST_CASE("literals between expressions steer where a value ends", "[uri_template]") {
  auto t = parsed("mcp://{server}/items/{id}.json");
  auto m = t.match("mcp://memo/items/a.b.json");
  REQUIRE(m);
  CHECK(m->at("server") == "memo");
  CHECK(m->at("id") == "a.b");
  CHECK_FALSE(t.match("mcp://memo/items/a.xml"));
  CHECK_FALSE(t.match("mcp://memo/items/a.json/more"));

  auto reserved = parsed("{+base}/tail");
  auto r = reserved.match("/a/b/c/tail");
  REQUIRE(r);
  CHECK(r->at("base") == "/a/b/c");
}

TEST_CASE("several variables in one expression", "[uri_template]") {
  auto simple = parsed("map?{x,y}");
  auto both = simple.match("map?1024,768");
  REQUIRE(both);
  CHECK(*both == uri_variables{{"x", "1024"}, {"y", "768"}});
  auto first = simple.match("map?1024");
  REQUIRE(first);
  CHECK(*first == uri_variables{{"x", "1024"}});
  CHECK_FALSE(simple.match("map?1,2,3"));

  auto single = parsed("tags/{list}");
  auto commas = single.match("tags/red,green");
  REQUIRE(commas);
  CHECK(commas->at("list") == "red,green");
}

TEST_CASE("label, path, matrix and fragment operators", "[uri_template]") {
  auto label = parsed("doc{.format}");
  CHECK(label.match("doc.json")->at("format") == "json");
  CHECK(label.match("doc")->empty());
  CHECK_FALSE(label.match("doc.tar.gz"));

  auto path = parsed("repo{/owner,name}/issues");
  auto p = path.match("repo/me/tidings/issues");
  REQUIRE(p);
  CHECK(*p == uri_variables{{"owner", "me"}, {"name", "tidings"}});
  auto shorter = path.match("repo/me/issues");
  REQUIRE(shorter);
  CHECK(*shorter == uri_variables{{"owner", "me"}});
  CHECK_FALSE(path.match("repo/a/b/c/issues"));

  auto matrix = parsed("map{;x,y,empty}");
  auto mx = matrix.match("map;y=768;x=1024;empty");
  REQUIRE(mx);
  CHECK(*mx == uri_variables{{"empty", ""}, {"x", "1024"}, {"y", "768"}});
  CHECK_FALSE(matrix.match("map;z=1"));

  auto fragment = parsed("page{#section}");
  CHECK(fragment.match("page#a/b?c")->at("section") == "a/b?c");
  CHECK(fragment.match("page")->empty());
  CHECK(fragment.match("page#")->at("section").empty());
}

TEST_CASE("query continuation after a literal query", "[uri_template]") {
  auto t = parsed("search?fixed=1{&q,lang}");
  auto m = t.match("search?fixed=1&lang=de&q=x%20y");
  REQUIRE(m);
  CHECK(*m == uri_variables{{"lang", "de"}, {"q", "x y"}});
  CHECK(t.match("search?fixed=1")->empty());
  CHECK_FALSE(t.match("search?fixed=2"));
  CHECK_FALSE(t.match("search?fixed=1&other=3"));

  auto two = parsed("s{?a}{&b}");
  auto ab = two.match("s?a=1&b=2");
  REQUIRE(ab);
  CHECK(*ab == uri_variables{{"a", "1"}, {"b", "2"}});
  CHECK_FALSE(two.match("s?b=2&a=1"));
}

TEST_CASE("templates without expressions match only themselves", "[uri_template]") {
  auto t = parsed("memo://notes");
  CHECK(t.match("memo://notes"));
  CHECK_FALSE(t.match("memo://notes2"));
  CHECK_FALSE(t.match("memo://note"));
}

TEST_CASE("invalid templates fail at parse with a reason", "[uri_template]") {
  CHECK(parse_error("kube://{context").find("not closed") != std::string::npos);
  CHECK(parse_error("kube://context}").find("'}' without '{'") != std::string::npos);
  CHECK(parse_error("kube://{}").find("empty expression") != std::string::npos);
  CHECK(parse_error("kube://{=x}").find("reserved") != std::string::npos);
  CHECK(parse_error("kube://{x:3}").find("level 4") != std::string::npos);
  CHECK(parse_error("kube://{list*}").find("level 4") != std::string::npos);
  CHECK(parse_error("kube://{a b}").find("invalid variable name") != std::string::npos);
  CHECK(parse_error("kube://{a,}").find("invalid variable name") != std::string::npos);
  CHECK(parse_error("kube://{.a.}").find("invalid variable name") != std::string::npos);
  CHECK(parse_error("kube://{a{b}").find("invalid variable name") != std::string::npos);
  CHECK(parse_error("kube://{a}/{?a}").find("appears twice") != std::string::npos);
  CHECK(parse_error("kube://a b/{x}").find("not allowed in a literal") != std::string::npos);
  CHECK(parse_error("kube://100%/{x}").find("not allowed in a literal") != std::string::npos);
  CHECK(parse_error(std::string(uri_template_max_template_bytes + 1, 'a')).find("longer") !=
        std::string::npos);
  // Valid corner cases.
  CHECK(uri_template::parse("a%20b/{x.y}/{_z,%41}", nullptr));
  CHECK(uri_template::parse("", nullptr));
}

TEST_CASE("percent-decoding", "[uri_template]") {
  CHECK(percent_decode("a%2fb%2F%41+") == "a/b/A+");
  CHECK_FALSE(percent_decode("%"));
  CHECK_FALSE(percent_decode("%4"));
  CHECK_FALSE(percent_decode("%4g"));
}

TEST_CASE("hostile URIs stay cheap and bounded", "[uri_template]") {
  auto t = parsed("x{a}{b}{c}{d}{e}{f}{g}{h}y");
  std::string uri = "x" + std::string(2000, 'a');
  CHECK_FALSE(t.match(uri));
  CHECK(t.match(uri + "y"));
  auto any = parsed("{+all}");
  CHECK(any.match(std::string(uri_template_max_uri_bytes, 'a')));
  CHECK_FALSE(any.match(std::string(uri_template_max_uri_bytes + 1, 'a')));
}
