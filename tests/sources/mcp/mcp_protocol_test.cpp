// Pure parts of the MCP connector: JSON-RPC framing and routing, the era
// choice from the server/discover answer, listings, reads, header values.

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "sources/mcp/json_rpc.hpp"
#include "sources/mcp/mcp_protocol.hpp"

using namespace tidings::sources::mcp;
using nlohmann::json;

TEST_CASE("parse_message classifies requests, notifications and responses", "[mcp]") {
  auto r = parse_message(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  CHECK(r.kind == message_kind::request);
  CHECK(r.id == 7);
  auto n = parse_message(
      R"({"method":"notifications/resources/updated","params":{"uri":"memory://knowledge-graph"},"jsonrpc":"2.0"})");
  CHECK(n.kind == message_kind::notification);
  CHECK(n.params["uri"] == "memory://knowledge-graph");
  auto ok = parse_message(R"({"result":{},"jsonrpc":"2.0","id":"listen-1"})");
  CHECK(ok.kind == message_kind::response);
  CHECK(ok.id == "listen-1");
  auto err =
      parse_message(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}})");
  CHECK(err.kind == message_kind::response);
  CHECK(err.error["code"] == -32601);
}

TEST_CASE("parse_message never throws on malformed input", "[mcp]") {
  for (const char* bad : {"", "{", "[1,2]", "null", R"({"jsonrpc":"2.0"})", R"({"id":1.5,"result":{}})",
                          R"({"method":5})", R"({"id":1,"error":"x"})", "\xff\xfe"}) {
    INFO(bad);
    CHECK(parse_message(bad).kind == message_kind::invalid);
  }
}

TEST_CASE("framing builds JSON-RPC 2.0 messages", "[mcp]") {
  auto req = make_request(3, "resources/read", {{"uri", "a://b"}});
  CHECK(req.dump() == R"({"id":3,"jsonrpc":"2.0","method":"resources/read","params":{"uri":"a://b"}})");
  auto note = make_notification("notifications/initialized", nullptr);
  CHECK_FALSE(note.contains("params"));
  CHECK_FALSE(note.contains("id"));
  CHECK(id_key(json(1)) != id_key(json("1")));
}

TEST_CASE("with_meta adds the per-request envelope", "[mcp]") {
  auto p = with_meta({{"uri", "x:y"}});
  CHECK(p["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
  CHECK(p["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "tidings");
  CHECK(p["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object());
  CHECK(p["uri"] == "x:y");
}

TEST_CASE("json_rpc routes responses, times out and fails pending requests", "[mcp]") {
  boost::asio::io_context ioc;
  json_rpc rpc(ioc);
  std::vector<std::string> seen;
  json timed_out_id;
  rpc.on_timeout([&](const json& id, const std::string&) { timed_out_id = id; });
  auto a = rpc.next_id();
  auto b = rpc.next_id();
  auto c = rpc.next_id();
  rpc.expect(a, "resources/read", std::chrono::milliseconds(0),
             [&](rpc_reply r) { seen.push_back("a:" + r.describe()); });
  rpc.expect(b, "tools/call", std::chrono::milliseconds(1),
             [&](rpc_reply r) { seen.push_back("b:" + r.describe()); });
  rpc.expect(c, "resources/list", std::chrono::milliseconds(0),
             [&](rpc_reply r) { seen.push_back("c:" + r.describe()); });
  CHECK(rpc.on_response(
      parse_message(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}})")));
  CHECK_FALSE(rpc.on_response(parse_message(R"({"jsonrpc":"2.0","id":99,"result":{}})")));
  ioc.run_for(std::chrono::milliseconds(50));
  rpc.fail_all("gone");
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "a:Resource not found (code -32002)");
  CHECK(seen[1] == "b:tools/call timed out after 0.001 s");
  CHECK(seen[2] == "c:gone");
  CHECK(timed_out_id == b);
  CHECK(rpc.size() == 0);
}

namespace {
rpc_reply result(json j) {
  rpc_reply r;
  r.result = std::move(j);
  return r;
}
rpc_reply error(int code, std::string msg, json data = nullptr) {
  rpc_reply r = rpc_reply::failed(failure_kind::rpc_error, std::move(msg));
  r.code = code;
  r.data = std::move(data);
  return r;
}
}  // namespace

TEST_CASE("choose_protocol follows the probe's answer", "[mcp]") {
  SECTION("a DiscoverResult naming 2026-07-28 is modern") {
    auto c = choose_protocol(result(json::parse(
        R"({"supportedVersions":["2026-07-28"],"capabilities":{"resources":{"subscribe":true}},"resultType":"complete"})")));
    CHECK(c.error.empty());
    CHECK(c.chosen == era::modern);
    CHECK(c.version == "2026-07-28");
    CHECK(advertises_subscribe(c.capabilities));
  }
  SECTION("Method not found (stdio legacy servers) is legacy") {
    auto c = choose_protocol(error(-32601, "Method not found"));
    CHECK(c.error.empty());
    CHECK(c.chosen == era::legacy);
    CHECK(c.version == "2025-11-25");
  }
  SECTION("any other error code is legacy too, not keyed to one code") {
    CHECK(choose_protocol(error(-32602, "Invalid params")).chosen == era::legacy);
    CHECK(choose_protocol(error(-32000, "Bad Request: Server not initialized")).chosen == era::legacy);
  }
  SECTION("no answer in time and an HTTP 4xx without modern body are legacy") {
    CHECK(choose_protocol(rpc_reply::failed(failure_kind::timeout, "t")).chosen == era::legacy);
    CHECK(choose_protocol(rpc_reply::failed(failure_kind::http_status, "HTTP 404")).chosen == era::legacy);
  }
  SECTION("UnsupportedProtocolVersion picks from the supported list, never falls back blindly") {
    auto c =
        choose_protocol(error(-32022, "Unsupported protocol version",
                              {{"supported", {"2025-06-18", "2025-11-25"}}, {"requested", "2026-07-28"}}));
    CHECK(c.error.empty());
    CHECK(c.chosen == era::legacy);
    CHECK(c.version == "2025-11-25");
    auto none = choose_protocol(error(-32022, "Unsupported", {{"supported", {"2027-01-01"}}}));
    CHECK_FALSE(none.error.empty());
  }
  SECTION("other modern errors are modern failures, not a fallback") {
    auto c = choose_protocol(error(-32020, "Header mismatch"));
    CHECK(c.chosen == era::modern);
    CHECK_FALSE(c.error.empty());
  }
  SECTION("a transport failure is no answer at all") {
    auto c = choose_protocol(rpc_reply::failed(failure_kind::transport, "connection refused"));
    CHECK(c.error == "connection refused");
  }
}

TEST_CASE("example_line extracts the description's Example: line", "[mcp]") {
  CHECK(example_line("Config maps.\nExample: await watch_start(name=\"cm\", uri=\"kcp://x\")\n") ==
        R"(await watch_start(name="cm", uri="kcp://x"))");
  CHECK(example_line("Watch pods. Example: await watch_start(uri=\"p://a\")") ==
        R"(await watch_start(uri="p://a"))");
  CHECK(example_line("  Example:   spaced  \nmore") == "spaced");
  CHECK(example_line("no example here").empty());
  CHECK(example_line("").empty());
  CHECK(example_line("An Example: inline\nExample: the line") == "the line");
}

TEST_CASE("listings become resource_info", "[mcp]") {
  auto res = parse_resources(json::parse(R"({"resources":[
      {"uri":"memory://knowledge-graph","name":"knowledge-graph","description":"The graph\nExample: watch it","mimeType":"application/json"},
      {"name":"no uri"}]})"),
                             "memory", true);
  REQUIRE(res.size() == 1);
  CHECK(res[0].uri == "memory://knowledge-graph");
  CHECK_FALSE(res[0].template_);
  CHECK(res[0].example == "watch it");
  CHECK(res[0].mime_type == "application/json");
  CHECK(res[0].server == "memory");
  CHECK(res[0].subscribable);
  auto tpl = parse_templates(json::parse(R"({"resourceTemplates":[
      {"name":"Dynamic Text Resource","uriTemplate":"demo://resource/dynamic/text/{resourceId}","mimeType":"text/plain"}]})"),
                             "everything", false);
  REQUIRE(tpl.size() == 1);
  CHECK(tpl[0].template_);
  CHECK(tpl[0].uri == "demo://resource/dynamic/text/{resourceId}");
  CHECK_FALSE(tpl[0].subscribable);
  CHECK(parse_resources(json::parse(R"({"resources":"x"})"), "s", true).empty());
}

TEST_CASE("reads take the first content item's text, blobs are refused", "[mcp]") {
  auto ok = parse_read(
      json::parse(R"({"contents":[{"uri":"a:b","mimeType":"application/json","text":"{}"}]})"), "s", "a:b");
  REQUIRE(ok.result);
  CHECK(ok.result->mime_type == "application/json");
  CHECK(ok.result->text == "{}");
  auto blob = parse_read(json::parse(R"({"contents":[{"uri":"a:b","blob":"AAEC"}]})"), "s", "a:b");
  CHECK_FALSE(blob.result);
  CHECK(blob.error.find("blob") != std::string::npos);
  CHECK_FALSE(parse_read(json::parse(R"({"contents":[]})"), "s", "a:b").result);
}

TEST_CASE("header values are base64-encoded when not plain ASCII", "[mcp]") {
  CHECK(header_value("us-west1") == "us-west1");
  CHECK(header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  CHECK(header_value(" padded ") == "=?base64?IHBhZGRlZCA=?=");
  CHECK(header_value("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?=");
  CHECK(header_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
}

TEST_CASE("lists: a listing names a URI as a resource or through a template", "[mcp]") {
  std::vector<tidings::sources::resource_info> listing(2);
  listing[0].uri = "tidings-test://state";
  listing[1].uri = "demo://resource/dynamic/text/{resourceId}";
  listing[1].template_ = true;
  CHECK(lists(listing, "tidings-test://state"));
  CHECK(lists(listing, "demo://resource/dynamic/text/7"));
  CHECK_FALSE(lists(listing, "tidings-test://state/"));
  CHECK_FALSE(lists(listing, "demo://resource/dynamic/text/7/8"));
  CHECK_FALSE(lists({}, "tidings-test://state"));
  CHECK(advertises_list_changed(json::parse(R"({"resources":{"listChanged":true}})")));
  CHECK_FALSE(advertises_list_changed(json::parse(R"({"resources":{"subscribe":true}})")));
  CHECK_FALSE(advertises_list_changed(json::parse(R"({"resources":{"listChanged":"yes"}})")));
}
