#include "core/json_stream.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace tidings::core {
namespace {

std::vector<std::string> split_all(json_stream& s, const std::vector<std::string>& chunks,
                                   std::string* error = nullptr) {
  std::vector<std::string> out;
  for (const auto& c : chunks) {
    auto e = s.feed(c, [&](std::string_view v) { out.emplace_back(v); });
    if (!e.empty()) {
      if (error) *error = e;
      break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("json_stream splits concatenated values", "[json_stream]") {
  json_stream s;
  auto values = split_all(s, {"{\"a\":1}\n{\"b\":[1,2]}  [3]{\"c\":{}}\r\n"});
  REQUIRE(values.size() == 4);
  CHECK(values[0] == "{\"a\":1}");
  CHECK(values[1] == "{\"b\":[1,2]}");
  CHECK(values[2] == "[3]");
  CHECK(values[3] == "{\"c\":{}}");
  CHECK_FALSE(s.in_value());
}

TEST_CASE("json_stream joins values cut at every byte", "[json_stream]") {
  const std::string text = R"({"type":"ADDED","object":{"s":"a \"}{\" b\\","n":[1,{"x":"]"}]}} {"k":"\\\""})";
  json_stream s;
  std::vector<std::string> values;
  for (char c : text) {
    CHECK(s.feed(std::string_view(&c, 1), [&](std::string_view v) { values.emplace_back(v); }).empty());
  }
  REQUIRE(values.size() == 2);
  CHECK(values[0] == R"({"type":"ADDED","object":{"s":"a \"}{\" b\\","n":[1,{"x":"]"}]}})");
  CHECK(values[1] == R"({"k":"\\\""})");
}

TEST_CASE("json_stream keeps a partial value until it completes", "[json_stream]") {
  json_stream s;
  auto values = split_all(s, {"{\"a\":\"x", "y\\", "\"z\"", "}"});
  REQUIRE(values.size() == 1);
  CHECK(values[0] == R"({"a":"xy\"z"})");

  CHECK(split_all(s, {"{\"open\":"}).empty());
  CHECK(s.in_value());
  s.reset();
  CHECK_FALSE(s.in_value());
  CHECK(split_all(s, {"{}"}).size() == 1);
}

TEST_CASE("json_stream rejects values over the limit and recovers", "[json_stream]") {
  json_stream s(16);
  std::string error;
  auto values = split_all(s, {"{\"a\":\"0123456789", "0123456789\"}"}, &error);
  CHECK(values.empty());
  CHECK(error == "a JSON value exceeds 16 bytes");
  CHECK_FALSE(s.in_value());
  error.clear();
  values = split_all(s, {"{\"ok\":1}"}, &error);
  CHECK(error.empty());
  CHECK(values.size() == 1);
}

TEST_CASE("json_stream rejects bare scalars between values", "[json_stream]") {
  json_stream s;
  std::string error;
  split_all(s, {"{} 42"}, &error);
  CHECK(error.find("unexpected '4'") != std::string::npos);
}

}  // namespace tidings::core
