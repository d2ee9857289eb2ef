// A template resource's instances (resource_template.hpp): each {variable}
// encoded for where it lands, values that cannot be used refused with why,
// and the config check naming a placeholder the template does not have.

#include <catch2/catch.hpp>

#include "sources/web/resource_template.hpp"

using namespace tidings::sources::web;
using tidings::core::uri_template;

namespace {

web_resource_config poll_template() {
  web_resource_config r;
  r.uri = "drive://file/{id}{?rev}";
  r.is_template = true;
  r.kind = strategy::poll;
  auto& b = r.backend.emplace();
  b.url = "https://api.example/files/{id}?rev={rev}&keep={literal}";
  b.body = R"({"id": "{id}", "n": 1})";
  b.headers = {{"X-File", "{id}"}};
  return r;
}

uri_template parsed(const web_resource_config& r) {
  auto t = uri_template::parse(r.uri, nullptr);
  REQUIRE(t);
  return *t;
}

}  // namespace

TEST_CASE("instantiate fills each variable encoded for its place", "[resource_template]") {
  auto tmpl = poll_template();
  std::string error;
  auto one = instantiate(tmpl, parsed(tmpl), "drive://file/a%22b%2Fc?rev=3", &error);
  REQUIRE(one);
  CHECK(error.empty());
  CHECK(one->uri == "drive://file/a%22b%2Fc?rev=3");
  CHECK_FALSE(one->is_template);
  CHECK(one->backend->url == "https://api.example/files/a%22b%2Fc?rev=3&keep={literal}");
  CHECK(one->backend->body == R"({"id": "a\"b/c", "n": 1})");
  CHECK(one->backend->headers[0].second == "a\"b/c");
  // An optional variable left out is "".
  auto bare = instantiate(tmpl, parsed(tmpl), "drive://file/x", &error);
  REQUIRE(bare);
  CHECK(bare->backend->url == "https://api.example/files/x?rev=&keep={literal}");
  // Not the template's: no instance, no error.
  CHECK_FALSE(instantiate(tmpl, parsed(tmpl), "drive://folder/x", &error));
  CHECK(error.empty());
}

TEST_CASE("values that cannot be used are refused, naming the variable", "[resource_template]") {
  std::string error;
  SECTION("a header value with a line break") {
    auto tmpl = poll_template();
    CHECK_FALSE(instantiate(tmpl, parsed(tmpl), "drive://file/a%0D%0AX-Evil:1", &error));
    CHECK(error ==
          "drive://file/a%0D%0AX-Evil:1: the value of {id} ('a\r\nX-Evil:1') cannot be part of a "
          "header: it holds a control character");
  }
  SECTION("a path segment that would reach another resource of the backend") {
    auto tmpl = poll_template();
    for (const char* bad : {"drive://file/..", "drive://file/%2E%2E", "drive://file/.", "drive://file/"}) {
      INFO(bad);
      CHECK_FALSE(instantiate(tmpl, parsed(tmpl), bad, &error));
      CHECK(error.find("cannot be a path segment of the backend's URL") != std::string::npos);
    }
    // In the query the same values are data.
    auto ok = instantiate(tmpl, parsed(tmpl), "drive://file/x?rev=..", &error);
    REQUIRE(ok);
    CHECK(ok->backend->url == "https://api.example/files/x?rev=..&keep={literal}");
  }
  SECTION("a NUL in a query parameter") {
    web_resource_config r;
    r.uri = "db://account/{name}";
    r.is_template = true;
    r.kind = strategy::sql_polling;
    r.sql.emplace().params = {"{name}"};
    CHECK_FALSE(instantiate(r, parsed(r), "db://account/a%00b", &error));
    CHECK(error.find("cannot be a query parameter: it holds NUL") != std::string::npos);
  }
  SECTION("a NATS subject token with a dot or a wildcard") {
    web_resource_config r;
    r.uri = "bus://stock/{sku}";
    r.is_template = true;
    r.kind = strategy::nats_topic;
    r.nats.emplace().subject = "stock.{sku}.changed";
    auto ok = instantiate(r, parsed(r), "bus://stock/A-1", &error);
    REQUIRE(ok);
    CHECK(ok->nats->subject == "stock.A-1.changed");
    for (const char* bad : {"bus://stock/a.b", "bus://stock/%3E", "bus://stock/*"}) {
      INFO(bad);
      CHECK_FALSE(instantiate(r, parsed(r), bad, &error));
      CHECK(error.find("cannot be a NATS subject token") != std::string::npos);
    }
  }
  SECTION("sql_polling parameters take values as they are") {
    web_resource_config r;
    r.uri = "db://account/{name}";
    r.is_template = true;
    r.kind = strategy::sql_polling;
    r.sql.emplace().params = {"{name}", "fixed"};
    auto ok = instantiate(r, parsed(r), "db://account/o'brien", &error);
    REQUIRE(ok);
    CHECK(ok->sql->params == std::vector<std::string>{"o'brien", "fixed"});
  }
}

TEST_CASE("placeholders and the config check", "[resource_template]") {
  CHECK(placeholders(R"({"id": "{id}", "x": {a_1}} {} {a b} {-} {file.id} {.x} {%41})") ==
        std::vector<std::string>{"id", "a_1", "file.id", "%41"});
  web_config cfg;
  auto tmpl = poll_template();
  cfg.resources.push_back(tmpl);
  auto errors = check_web_config(cfg);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "resource template drive://file/{id}{?rev}: backend.url names {literal}, which is not a "
        "variable of the template");
  cfg.resources[0].backend->url = "https://api.example/files/{id}";
  CHECK(check_web_config(cfg).empty());
  cfg.resources[0].backend->url = "https://{id}.api.example/files";
  errors = check_web_config(cfg);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "resource template drive://file/{id}{?rev}: backend.url has {id} in its host or port: "
        "variables may fill its path, query and fragment only");
  cfg.resources[0].backend->url = "https://api.example/files/{id}";
  cfg.resources[0].uri = "drive://file/{id";
  errors = check_web_config(cfg);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].rfind("resource template drive://file/{id: ", 0) == 0);
}
