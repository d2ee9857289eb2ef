// What auth costs: the per-event, per-session check a session makes before
// queueing a frame, and the per-request token verification, next to the
// per-event work every publish already does (encoding its SSE frame once).
// Run build/release/tests/bench/auth_bench and read the ratios against
// BM_encode_frame (docs/performance.md).

#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "broker/auth_service.hpp"
#include "broker/jwt_verifier.hpp"
#include "broker/session_access.hpp"
#include "core/sse_frame.hpp"
#include "tests/support/jwt_mint.hpp"

namespace {

using nlohmann::json;
using namespace tidings;

const std::string secret = "bench-secret-0123456789abcdef-0123456789";

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json claims(const std::vector<std::string>& read) {
  return {{"tenant", "acme"}, {"sub", "ann"}, {"exp", now_s() + 3600}, {"tidings", {{"read", read}}}};
}

core::sse_frame frame(const std::string& path) {
  core::event ev;
  ev.path = path;
  ev.type = "MODIFIED";
  ev.data_json = R"({"owner":"ann","title":"Quarterly numbers","pages":12})";
  return core::make_sse_frame("docs", {0x9f3a, 42}, ev);
}

// A node's auth with one tenant (HS256 + RS256 + ES256 keys) and a store
// for its revocations, in a temp dir for the benchmark's lifetime.
struct fixture {
  fixture() {
    dir = std::filesystem::temp_directory_path() / ("auth_bench_" + std::to_string(::getpid()));
    if (auto s = persistence::store::open(dir.string(), persistence::durability::none, &store); !s.ok())
      throw std::runtime_error("cannot open a store for the benchmark: " + s.message());
    rsa = testing::generate_rsa();
    ec = testing::generate_p256();
    broker::tenant_spec t;
    t.id = "acme";
    t.keys = {{"k1", broker::key_alg::hs256, secret},
              {"r1", broker::key_alg::rs256, rsa.public_pem},
              {"e1", broker::key_alg::es256, ec.public_pem}};
    t.scopes = {{"inbox", broker::scope_kind::subject, "/data/owner", ""},
                {"fin", broker::scope_kind::expression, "", "has(subscriber.groups, \"finance\")"}};
    tenants = {t};
    auth = std::make_unique<broker::auth_service>(tenants, *store);
  }
  ~fixture() {
    auth.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }
  broker::session_auth_ptr principal(const std::vector<std::string>& read, json extra = json::object()) {
    auto c = claims(read);
    for (auto& [k, v] : extra.items()) c[k] = v;
    auto token = testing::mint(broker::key_alg::hs256, secret, c, "k1");
    broker::http_request req;
    req.headers["authorization"] = "Bearer " + token;
    return auth->authenticate(req).auth;
  }
  std::filesystem::path dir;
  std::unique_ptr<persistence::store> store;
  testing::key_pair rsa, ec;
  std::vector<broker::tenant_spec> tenants;
  std::unique_ptr<broker::auth_service> auth;
};

fixture& shared() {
  static fixture f;
  return f;
}

void BM_encode_frame(benchmark::State& state) {
  core::event ev;
  ev.path = "/a/b/report.md";
  ev.type = "MODIFIED";
  ev.data_json = R"({"owner":"ann","title":"Quarterly numbers","pages":12})";
  std::uint64_t seq = 0;
  for (auto _ : state) benchmark::DoNotOptimize(core::make_sse_frame("docs", {0x9f3a, ++seq}, ev));
}
BENCHMARK(BM_encode_frame);

void run_admits(benchmark::State& state, const std::vector<std::string>& read, const std::string& stream,
                json extra = json::object()) {
  auto& f = shared();
  broker::session_access access(f.principal(read, std::move(extra)), *f.auth, {stream});
  auto fr = frame("/a/b/report.md");
  bool admitted = false;
  for (auto _ : state) {
    admitted = access.admits(0, stream, fr);
    benchmark::DoNotOptimize(admitted);
  }
  if (!admitted) state.SkipWithError("the event was not admitted");
}

void BM_admit_whole_stream(benchmark::State& state) {
  run_admits(state, {"docs"}, "docs");
}
BENCHMARK(BM_admit_whole_stream);

void BM_admit_path_grant(benchmark::State& state) {
  run_admits(state, {"docs:/x/**", "docs:/a/*/report.md"}, "docs");
}
BENCHMARK(BM_admit_path_grant);

void BM_admit_subject_scope(benchmark::State& state) {
  run_admits(state, {"*"}, "inbox");
}
BENCHMARK(BM_admit_subject_scope);

void BM_admit_expression_scope(benchmark::State& state) {
  run_admits(state, {"*"}, "fin", {{"groups", {"finance"}}});
}
BENCHMARK(BM_admit_expression_scope);

void run_verify(benchmark::State& state, broker::key_alg alg, const std::string& key,
                const std::string& kid) {
  auto& f = shared();
  auto token = testing::mint(alg, key, claims({"docs"}), kid);
  for (auto _ : state) {
    auto r = broker::verify_token(token, f.tenants, now_s());
    if (!r.principal) state.SkipWithError(r.error.c_str());
    benchmark::DoNotOptimize(r);
  }
}

void BM_verify_hs256(benchmark::State& state) {
  run_verify(state, broker::key_alg::hs256, secret, "k1");
}
BENCHMARK(BM_verify_hs256);

void BM_verify_rs256(benchmark::State& state) {
  run_verify(state, broker::key_alg::rs256, shared().rsa.private_pem, "r1");
}
BENCHMARK(BM_verify_rs256);

void BM_verify_es256(benchmark::State& state) {
  run_verify(state, broker::key_alg::es256, shared().ec.private_pem, "e1");
}
BENCHMARK(BM_verify_es256);

// A request's whole authentication (header, cache, recheck) with a token
// the node has verified before: what a keep-alive publisher pays per request.
void run_authenticate_known(benchmark::State& state, broker::key_alg alg, const std::string& key,
                            const std::string& kid) {
  auto& f = shared();
  broker::http_request req;
  req.headers["authorization"] = "Bearer " + testing::mint(alg, key, claims({"docs"}), kid);
  if (!f.auth->authenticate(req).auth) state.SkipWithError("the token was refused");
  for (auto _ : state) {
    auto r = f.auth->authenticate(req);
    if (!r.auth) state.SkipWithError(r.error.c_str());
    benchmark::DoNotOptimize(r);
  }
}

void BM_authenticate_known_rs256(benchmark::State& state) {
  run_authenticate_known(state, broker::key_alg::rs256, shared().rsa.private_pem, "r1");
}
BENCHMARK(BM_authenticate_known_rs256);

void BM_authenticate_known_es256(benchmark::State& state) {
  run_authenticate_known(state, broker::key_alg::es256, shared().ec.private_pem, "e1");
}
BENCHMARK(BM_authenticate_known_es256);

}  // namespace

BENCHMARK_MAIN();
