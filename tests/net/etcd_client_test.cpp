#include "net/etcd_client.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "client/http_client.hpp"
#include "net/base64.hpp"
#include "tests/net/run_loop.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

namespace tidings::net {
namespace {

using namespace std::chrono_literals;
using testing::etcd_cluster;

// One etcd member for every case of this file that needs no faults: it
// starts in about 0.3 s, and each case keeps to its own key prefix.
etcd_cluster& shared_etcd() {
  static etcd_cluster cluster(1);
  return cluster;
}

// A call's outcome, filled in by its callback.
template <class T>
struct outcome {
  std::optional<std::string> error;
  T value{};
  etcd_client::done<T> callback() {
    return [this](std::string e, T v) {
      error = std::move(e);
      value = std::move(v);
    };
  }
};

// Runs one call to completion and returns its outcome.
template <class T, class Start>
outcome<T> await_call(boost::asio::io_context& ioc, Start start) {
  outcome<T> o;
  start(o.callback());
  REQUIRE(run_until(ioc, [&] { return o.error.has_value(); }));
  return o;
}

struct fixture {
  boost::asio::io_context ioc;
  std::shared_ptr<etcd_client> etcd = etcd_client::make(ioc, shared_etcd().client_urls(), 2000ms);

  std::int64_t put(const std::string& key, const std::string& value, std::int64_t lease = 0) {
    auto o = await_call<std::int64_t>(ioc, [&](auto cb) { etcd->put(key, value, lease, cb); });
    REQUIRE(*o.error == "");
    return o.value;
  }
  etcd_range_result range(const std::string& key, const std::string& end = {}) {
    auto o = await_call<etcd_range_result>(ioc, [&](auto cb) { etcd->range(key, end, cb); });
    REQUIRE(*o.error == "");
    return o.value;
  }
};

}  // namespace

TEST_CASE("base64 round-trips every byte value and refuses what is not canonical", "[etcd]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += 37)
    REQUIRE(base64_decode(base64_encode(all.substr(0, n))) == all.substr(0, n));
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK_FALSE(base64_decode("Zg=").has_value());   // length
  CHECK_FALSE(base64_decode("Zh==").has_value());  // bits the padding drops
  CHECK_FALSE(base64_decode("Z===").has_value());
  CHECK_FALSE(base64_decode("Zm9v!A==").has_value());
  CHECK_FALSE(base64_decode("Zg==Zg==").has_value());  // padding inside
}

TEST_CASE("etcd_prefix_end is the first key past every key with the prefix", "[etcd]") {
  CHECK(etcd_prefix_end("/a/") == "/a0");
  CHECK(etcd_prefix_end(std::string("a\xff", 2)) == "b");
  CHECK(etcd_prefix_end("") == std::string(1, '\0'));
}

TEST_CASE("etcd: put, then a prefix range reads the keys back with their revisions, binary-safe", "[etcd]") {
  fixture f;
  const std::string binary("v\0\xff\n", 4);
  const auto r1 = f.put("/range/a", binary);
  const auto r2 = f.put("/range/b", "2");
  f.put("/rangeX", "outside");
  CHECK(r2 > r1);
  const auto read = f.range("/range/", etcd_prefix_end("/range/"));
  REQUIRE(read.kvs.size() == 2);
  CHECK(read.kvs[0].key == "/range/a");
  CHECK(read.kvs[0].value == binary);
  CHECK(read.kvs[0].mod_revision == r1);
  CHECK(read.kvs[1].mod_revision == r2);
  CHECK(read.revision >= r2);
  CHECK(f.range("/range/none").kvs.empty());
}

TEST_CASE(
    "etcd: a txn is a compare-and-swap: it applies only on the revision compared, else runs the failure ops",
    "[etcd]") {
  fixture f;
  using target = etcd_compare::target;
  // Create only when absent.
  auto created = await_call<etcd_txn_result>(f.ioc, [&](auto cb) {
    f.etcd->txn({{"/cas/k", target::create_revision, 0, {}}}, {{etcd_op::kind::put, "/cas/k", "one", 0, {}}},
                {}, cb);
  });
  REQUIRE(*created.error == "");
  CHECK(created.value.succeeded);
  auto again = await_call<etcd_txn_result>(f.ioc, [&](auto cb) {
    f.etcd->txn({{"/cas/k", target::create_revision, 0, {}}}, {{etcd_op::kind::put, "/cas/k", "two", 0, {}}},
                {{etcd_op::kind::range, "/cas/k", {}, 0, {}}}, cb);
  });
  REQUIRE(*again.error == "");
  CHECK_FALSE(again.value.succeeded);
  REQUIRE(again.value.ranges.size() == 1);
  REQUIRE(again.value.ranges[0].size() == 1);
  const auto current = again.value.ranges[0][0];
  CHECK(current.value == "one");

  // A swap on a stale mod_revision fails; on the current one it applies.
  auto stale = await_call<etcd_txn_result>(f.ioc, [&](auto cb) {
    f.etcd->txn({{"/cas/k", target::mod_revision, current.mod_revision - 1, {}}},
                {{etcd_op::kind::put, "/cas/k", "stale", 0, {}}}, {}, cb);
  });
  CHECK_FALSE(stale.value.succeeded);
  auto swap = await_call<etcd_txn_result>(f.ioc, [&](auto cb) {
    f.etcd->txn({{"/cas/k", target::mod_revision, current.mod_revision, {}}},
                {{etcd_op::kind::put, "/cas/k", "three", 0, {}}, {etcd_op::kind::range, "/cas/k", {}, 0, {}}},
                {}, cb);
  });
  REQUIRE(swap.value.succeeded);
  REQUIRE(swap.value.ranges.size() == 2);
  CHECK(swap.value.ranges[0].empty());
  CHECK(swap.value.ranges[1].at(0).value == "three");
  CHECK(f.range("/cas/k").kvs.at(0).value == "three");
}

TEST_CASE(
    "etcd: a lease keeps its keys while kept alive, and once revoked they go and a keep-alive says it is "
    "gone",
    "[etcd]") {
  fixture f;
  auto lease = await_call<etcd_lease>(f.ioc, [&](auto cb) { f.etcd->grant_lease(5, cb); });
  REQUIRE(*lease.error == "");
  REQUIRE(lease.value.id != 0);
  CHECK(lease.value.ttl_seconds == 5);
  f.put("/lease/member", "here", lease.value.id);
  CHECK(f.range("/lease/member").kvs.at(0).lease == lease.value.id);

  auto kept = await_call<etcd_lease>(f.ioc, [&](auto cb) { f.etcd->keep_alive(lease.value.id, cb); });
  REQUIRE(*kept.error == "");
  CHECK(kept.value.ttl_seconds == 5);

  auto revoked = await_call<bool>(f.ioc, [&](auto cb) { f.etcd->revoke_lease(lease.value.id, cb); });
  REQUIRE(*revoked.error == "");
  CHECK(f.range("/lease/member").kvs.empty());
  auto gone = await_call<etcd_lease>(f.ioc, [&](auto cb) { f.etcd->keep_alive(lease.value.id, cb); });
  REQUIRE(*gone.error == "");
  CHECK(gone.value.ttl_seconds == 0);
  // Revoking what is gone is done (a retried revoke hears "not found").
  auto twice = await_call<bool>(f.ioc, [&](auto cb) { f.etcd->revoke_lease(lease.value.id, cb); });
  CHECK(*twice.error == "");

  // etcd's own refusal comes back as the error, naming the endpoint.
  auto refused =
      await_call<std::int64_t>(f.ioc, [&](auto cb) { f.etcd->put("/lease/x", "y", lease.value.id, cb); });
  CHECK_THAT(*refused.error, Catch::Contains("requested lease not found") && Catch::Contains("127.0.0.1") &&
                                 !Catch::Contains("may have been applied"));
}

TEST_CASE(
    "etcd: a watch from a revision reports puts and deletes in order, and a lease that lapses deletes its "
    "key",
    "[etcd]") {
  fixture f;
  const auto first = f.put("/watch/a", "1");
  f.put("/watch/b", "2");
  std::vector<etcd_event> seen;
  std::optional<std::string> ended;
  etcd_watch_handlers h;
  h.events = [&](const std::vector<etcd_event>& events, std::int64_t) {
    seen.insert(seen.end(), events.begin(), events.end());
  };
  h.end = [&](std::string error) { ended = std::move(error); };
  auto call = f.etcd->watch("/watch/", etcd_prefix_end("/watch/"), first, h);
  REQUIRE(run_until(f.ioc, [&] { return seen.size() >= 2 || ended; }));
  REQUIRE_FALSE(ended);
  CHECK(seen[0].kv.key == "/watch/a");
  CHECK(seen[1].kv.value == "2");

  // The shortest lease etcd grants here; not kept alive, it lapses.
  auto lease = await_call<etcd_lease>(f.ioc, [&](auto cb) { f.etcd->grant_lease(1, cb); });
  REQUIRE(*lease.error == "");
  f.put("/watch/leased", "x", lease.value.id);
  REQUIRE(run_until(
      f.ioc, [&] { return seen.size() >= 4 || ended; }, 10s));
  REQUIRE_FALSE(ended);
  CHECK(seen[2].kv.key == "/watch/leased");
  CHECK_FALSE(seen[2].deleted);
  CHECK(seen[3].kv.key == "/watch/leased");
  CHECK(seen[3].deleted);

  call->cancel();
  f.put("/watch/c", "after");
  f.ioc.restart();
  f.ioc.run_for(50ms);
  CHECK(seen.size() == 4);
  CHECK_FALSE(ended);  // nothing after cancel
}

TEST_CASE("etcd: nothing of a watch runs after it is cancelled from its own events callback", "[etcd]") {
  fixture f;
  const auto first = f.put("/cancel/a", "1");
  f.put("/cancel/b", "2");
  f.put("/cancel/c", "3");
  int batches = 0;
  bool ended = false;
  std::shared_ptr<http_call> call;
  etcd_watch_handlers h;
  h.events = [&](const std::vector<etcd_event>&, std::int64_t) {
    ++batches;
    call->cancel();
  };
  h.end = [&](std::string) { ended = true; };
  call = f.etcd->watch("/cancel/", etcd_prefix_end("/cancel/"), first, h);
  REQUIRE(run_until(f.ioc, [&] { return batches > 0; }));
  f.put("/cancel/d", "4");
  f.ioc.restart();
  f.ioc.run_for(100ms);
  CHECK(batches == 1);
  CHECK_FALSE(ended);
}

TEST_CASE("etcd: a watch from a compacted revision ends and says so", "[etcd]") {
  fixture f;
  const auto old = f.put("/compact/a", "1");
  const auto now = f.put("/compact/a", "2");
  const auto u = shared_etcd().client_urls()[0];
  const auto port = static_cast<std::uint16_t>(std::stoi(u.substr(u.rfind(':') + 1)));
  const auto compacted = client::request({"127.0.0.1", port}, "POST", "/v3/kv/compaction",
                                         "{\"revision\":\"" + std::to_string(now) + "\"}");
  REQUIRE(compacted.status == 200);
  std::optional<std::string> ended;
  etcd_watch_handlers h;
  h.events = [](const std::vector<etcd_event>&, std::int64_t) {};
  h.end = [&](std::string error) { ended = std::move(error); };
  f.etcd->watch("/compact/", etcd_prefix_end("/compact/"), old, h);
  REQUIRE(run_until(f.ioc, [&] { return ended.has_value(); }));
  CHECK_THAT(*ended, Catch::Contains("compacted"));
}

TEST_CASE(
    "etcd: a member that is gone fails a write naming it, reads retry on the others, later calls go there",
    "[etcd]") {
  etcd_cluster three(3);
  boost::asio::io_context ioc;
  auto etcd = etcd_client::make(ioc, three.client_urls(), 3000ms);
  auto ok = await_call<std::int64_t>(ioc, [&](auto cb) { etcd->put("/failover/k", "1", 0, cb); });
  REQUIRE(*ok.error == "");
  const auto before = etcd->current_endpoint();
  CHECK(before == three.client_urls()[0]);
  three.kill(0);
  // Not retried (a write whose answer is lost may have been applied), but
  // one that never connected says it was not.
  auto failed = await_call<std::int64_t>(ioc, [&](auto cb) { etcd->put("/failover/k", "2", 0, cb); });
  CHECK_THAT(*failed.error, Catch::Contains(before) && !Catch::Contains("may have been applied"));
  CHECK(etcd->current_endpoint() != before);
  three.start(0);
  three.kill(1);
  // A read is retried past the dead member and a leader election (which
  // etcd answers with "leader changed" or "no leader").
  auto read = await_call<etcd_range_result>(ioc, [&](auto cb) { etcd->range("/failover/k", {}, cb); });
  REQUIRE(*read.error == "");
  CHECK(read.value.kvs.at(0).value == "1");

  // An unreachable endpoint is named too, and nothing throws.
  auto nowhere = etcd_client::make(ioc, {"http://127.0.0.1:1"}, 500ms);
  auto refused = await_call<std::int64_t>(ioc, [&](auto cb) { nowhere->put("/x", "y", 0, cb); });
  CHECK_THAT(*refused.error, Catch::Contains("http://127.0.0.1:1"));
}

}  // namespace tidings::net

namespace tidings::net {

TEST_CASE("etcd over https with client certificates: calls and watches pass, a client without one is refused",
          "[etcd][https]") {
  testing::temp_dir dir;
  testing::test_ca ca(dir.path().string(), "etcd");
  // etcd's gateway calls its own gRPC port with this certificate too.
  const auto server = ca.issue("etcd", {"etcd",
                                        {"IP:127.0.0.1"},
                                        -std::chrono::hours(1),
                                        std::chrono::hours(1),
                                        testing::usage::server_and_client});
  const auto client = ca.issue(
      "node",
      {"tidings-node", {}, -std::chrono::hours(1), std::chrono::hours(1), tidings::testing::usage::client});
  etcd_cluster secured(1, testing::etcd_tls{server.cert, server.key, ca.files().cert});
  REQUIRE(secured.client_urls().at(0).rfind("https://127.0.0.1:", 0) == 0);
  boost::asio::io_context ioc;
  std::string error;
  auto context = make_tls_client_context({ca.files().cert, client.cert, client.key, false}, &error);
  REQUIRE(context);
  auto etcd = etcd_client::make(ioc, secured.client_urls(), 2000ms, context);
  std::vector<etcd_event> seen;
  etcd_watch_handlers h;
  h.events = [&](const std::vector<etcd_event>& events, std::int64_t) {
    seen.insert(seen.end(), events.begin(), events.end());
  };
  auto watch = etcd->watch("/tls/", etcd_prefix_end("/tls/"), 0, h);
  auto put = await_call<std::int64_t>(ioc, [&](auto cb) { etcd->put("/tls/k", "sealed", 0, cb); });
  REQUIRE(*put.error == "");
  REQUIRE(run_until(ioc, [&] { return !seen.empty(); }));
  CHECK(seen[0].kv.value == "sealed");
  watch->cancel();

  // Writes, which are not retried: the first attempt's error is the answer.
  // Trusting etcd but holding no certificate of its CA: refused.
  auto anonymous = etcd_client::make(ioc, secured.client_urls(), 2000ms,
                                     make_tls_client_context({ca.files().cert, "", "", false}, &error));
  auto refused = await_call<std::int64_t>(ioc, [&](auto cb) { anonymous->put("/tls/k", "no", 0, cb); });
  CHECK(refused.error->find("failed: handshake refused (") != std::string::npos);
  // Not trusting etcd's CA: refused on our side, saying why, and known not applied.
  auto doubting = etcd_client::make(ioc, secured.client_urls(), 2000ms);
  auto unknown = await_call<std::int64_t>(ioc, [&](auto cb) { doubting->put("/tls/k", "no", 0, cb); });
  CHECK(unknown.error->find("failed: unknown CA (") != std::string::npos);
  CHECK(unknown.error->find("may have been applied") == std::string::npos);
}

}  // namespace tidings::net
