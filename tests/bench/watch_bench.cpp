// What one event costs on its way through a watch, next to the per-event
// work every publish already does (encoding its SSE frame once). Run:
//   build/release/tests/bench/watch_bench
// and read the ratios against BM_encode_frame (docs/performance.md).

#include <benchmark/benchmark.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/notice_batcher.hpp"
#include "core/read_extraction.hpp"
#include "core/sse_frame.hpp"
#include "core/stream_read.hpp"
#include "filters/lua_filter.hpp"

namespace {

using nlohmann::json;
using namespace tidings;

json k8s_event() {
  return {
      {"watch", "bids"},
      {"uri", "stream://market/bids"},
      {"path", "/bids"},
      {"cursor", "9f3a000000000000:42"},
      {"type", "MODIFIED"},
      {"key", "bid-1"},
      {"changed", {"status.phase"}},
      {"object",
       {{"metadata", {{"name", "bid-1"}, {"namespace", "default"}}}, {"status", {{"phase", "Won"}}}}},
      {"old",
       {{"metadata", {{"name", "bid-1"}, {"namespace", "default"}}}, {"status", {{"phase", "Deciding"}}}}}};
}

// The peer: what the hub does for every published event anyway.
void BM_encode_frame(benchmark::State& state) {
  core::event ev;
  ev.path = "/bids";
  ev.type = "MODIFIED";
  ev.data_json = k8s_event().dump();
  std::uint64_t seq = 0;
  for (auto _ : state) benchmark::DoNotOptimize(core::make_sse_frame("market", {0x9f3a, ++seq}, ev));
}
BENCHMARK(BM_encode_frame);

void BM_default_line(benchmark::State& state) {
  auto ev = k8s_event();
  for (auto _ : state) benchmark::DoNotOptimize(core::default_notice_line(ev));
}
BENCHMARK(BM_default_line);

void run_filter(benchmark::State& state, const char* source) {
  std::string error;
  auto filter = filters::lua_filter::compile(source, {}, nullptr, &error);
  if (!filter) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto ev = k8s_event();
  for (auto _ : state) benchmark::DoNotOptimize(filter->run(ev));
}

void BM_lua_filter_string(benchmark::State& state) {
  run_filter(state, R"(
    local m = event.object.metadata
    if event.type == "MODIFIED" then return m.namespace .. "/" .. m.name .. " " .. event.object.status.phase end)");
}
BENCHMARK(BM_lua_filter_string);

void BM_lua_filter_drop(benchmark::State& state) {
  run_filter(state, "if event.type == 'DELETED' then return 'gone' end");
}
BENCHMARK(BM_lua_filter_drop);

void BM_lua_filter_table(benchmark::State& state) {
  run_filter(state, "return {name = event.key, phase = event.object.status.phase, changed = event.changed}");
}
BENCHMARK(BM_lua_filter_table);

// One item of `items` changes between two state reads.
void BM_state_diff(benchmark::State& state) {
  auto n = static_cast<int>(state.range(0));
  json before = json::array(), after;
  for (int i = 0; i < n; ++i)
    before.push_back({{"metadata", {{"uid", std::to_string(i) + "u"}, {"name", std::to_string(i) + "n"}}},
                      {"status", {{"phase", "Running"}}}});
  after = before;
  after[n / 2]["status"]["phase"] = "Done";
  for (auto _ : state) benchmark::DoNotOptimize(core::diff_states(before, after));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_state_diff)->Arg(10)->Arg(1000);

void BM_batcher_add(benchmark::State& state) {
  core::notice_batcher batcher;
  auto now = core::notice_batcher::clock::now();
  std::uint64_t i = 0;
  for (auto _ : state) {
    ++i;
    std::string key = "obj-", line = "MODIFIED obj (phase: a→b) ";
    key += std::to_string(i % 64);
    line += std::to_string(i % 7);
    batcher.add(key, std::move(line), now);
    if (i % 20 == 0) benchmark::DoNotOptimize(batcher.take_all());
  }
}
BENCHMARK(BM_batcher_add);

}  // namespace

BENCHMARK_MAIN();
