#include "core/grant.hpp"

#include <catch2/catch.hpp>

using namespace tidings::core;

namespace {

grant parsed(std::string_view entry) {
  std::string why;
  auto g = parse_grant(entry, &why);
  INFO(why);
  REQUIRE(g);
  return *g;
}

}  // namespace

TEST_CASE("a bare stream grant covers every path of that stream only") {
  auto g = parsed("docs");
  CHECK(grant_matches_stream(g, "docs"));
  CHECK_FALSE(grant_matches_stream(g, "docs2"));
  CHECK(grant_matches_path(g, "/anything/at/all"));
  CHECK(grant_matches_path(g, ""));
}

TEST_CASE("stream globs and readable stream names") {
  CHECK(grant_matches_stream(parsed("*"), "watch:daily"));
  CHECK(grant_matches_stream(parsed("docs-*"), "docs-eu"));
  CHECK_FALSE(grant_matches_stream(parsed("docs-*"), "doc"));
  auto w = parsed("watch:daily:/x/**");
  CHECK(w.stream == "watch:daily");
  CHECK(grant_matches_stream(w, "watch:daily"));
  CHECK(grant_matches_path(w, "/x/y"));
  CHECK(grant_matches_stream(parsed("src:*"), "src:0123456789abcdef"));
  CHECK_FALSE(grant_matches_stream(parsed("src:*"), "docs"));
}

TEST_CASE("one star is one segment, two stars any depth") {
  auto one = parsed("docs:/a/*");
  CHECK(grant_matches_path(one, "/a/x"));
  CHECK_FALSE(grant_matches_path(one, "/a/x/y"));
  CHECK_FALSE(grant_matches_path(one, "/a"));
  auto deep = parsed("docs:/a/**");
  CHECK(grant_matches_path(deep, "/a"));
  CHECK(grant_matches_path(deep, "/a/x"));
  CHECK(grant_matches_path(deep, "/a/x/y/z"));
  CHECK_FALSE(grant_matches_path(deep, "/b/x"));
  CHECK_FALSE(grant_matches_path(deep, "/ab"));
  CHECK_FALSE(grant_matches_path(deep, ""));
  CHECK(grant_matches_path(parsed("docs:/**/draft/*"), "/x/y/draft/z"));
  CHECK(grant_matches_path(parsed("docs:/**/draft/*"), "/draft/z"));
  CHECK_FALSE(grant_matches_path(parsed("docs:/**/draft/*"), "/x/draft"));
}

TEST_CASE("malformed grants are refused with a reason") {
  std::string why;
  CHECK_FALSE(parse_grant("", &why));
  CHECK_FALSE(parse_grant("docs:a/b", &why));
  CHECK(why.find("starts with '/'") != std::string::npos);
  CHECK_FALSE(parse_grant("docs:/a*b", &why));
  CHECK(why.find("whole path segments") != std::string::npos);
  CHECK_FALSE(parse_grant("docs /a", &why));
  CHECK_FALSE(parse_grant(":/a", &why));
  CHECK_FALSE(parse_grant("watch:", &why));
}

TEST_CASE("a prefix overlaps a pattern when some path under it matches") {
  auto g = parsed("docs:/a/**");
  CHECK(grant_overlaps_prefix(g, ""));
  CHECK(grant_overlaps_prefix(g, "/"));
  CHECK(grant_overlaps_prefix(g, "/a"));
  CHECK(grant_overlaps_prefix(g, "/a/b/c"));
  CHECK_FALSE(grant_overlaps_prefix(g, "/b"));
  auto exact = parsed("docs:/a/*/c");
  CHECK(grant_overlaps_prefix(exact, "/a/x/"));
  CHECK_FALSE(grant_overlaps_prefix(exact, "/a/x/d"));
  CHECK_FALSE(grant_overlaps_prefix(parsed("docs:/a"), "/a/b"));
}

TEST_CASE("many double stars stay cheap") {
  std::string entry = "docs:";
  for (int i = 0; i < 15; ++i) entry += "/**/a";
  auto g = parsed(entry);
  std::string path;
  for (int i = 0; i < 2000; ++i) path += "/a";
  path += "/b";
  CHECK_FALSE(grant_matches_path(g, path));
  CHECK(grant_matches_path(g, path.substr(0, path.size() - 2)));
}

TEST_CASE("covering everything under a prefix takes a whole-stream grant or a literal /**") {
  grant_set set({parsed("docs:/a/**"), parsed("wiki"), parsed("notes:/x/*/**")});
  CHECK(set.covers_all_under("docs", "/a/"));
  CHECK(set.covers_all_under("docs", "/a/b"));
  CHECK_FALSE(set.covers_all_under("docs", "/a"));  // would include /ab
  CHECK_FALSE(set.covers_all_under("docs", ""));
  CHECK(set.covers_all_under("wiki", ""));
  CHECK_FALSE(set.covers_all_under("notes", "/x/y/"));
  CHECK_FALSE(set.covers_tenant());
  CHECK(grant_set({parsed("*")}).covers_tenant());
  CHECK_FALSE(grant_set({parsed("*:/a/**")}).covers_tenant());
}

TEST_CASE("a grant set narrows to one stream's grants") {
  grant_set set({parsed("docs:/a/**"), parsed("other"), parsed("d*:/z")});
  CHECK(set.covers("docs", "/a/1"));
  CHECK(set.covers("docs", "/z"));
  CHECK_FALSE(set.covers("docs", "/b/1"));
  CHECK(set.covers_prefix("docs", "/a/"));
  CHECK_FALSE(set.covers_prefix("docs", "/b"));
  CHECK_FALSE(set.covers_prefix("nope", ""));
  auto docs = set.for_stream("docs");
  CHECK(docs.all().size() == 2);
  CHECK_FALSE(docs.whole_stream());
  CHECK(set.for_stream("other").whole_stream());
}
