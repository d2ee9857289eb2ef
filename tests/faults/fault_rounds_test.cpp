// The fault-injection suite (issue 26): rounds of real traffic on a real
// three-node cluster in real etcd (three streams, each owned by another
// node), with one fault per round drawn from a seed, then every stream
// read back through every node by the history checker (history_check.hpp).
// Each scenario is a test case:
//
//   pause        SIGSTOP of the owner, its follower or the third node, for
//                0.5-4 s (the member lease is 2 s, the replica lag 1 s:
//                shorter and longer)
//   kill         kill -9, restarted on its data 0.2-3 s later
//   restart      SIGTERM (a graceful drain), restarted 0.2-1.5 s later
//   etcd-member  kill -9 of one etcd member of three, back 0.5-3 s later
//   partition-nodes  DROP rules for 0.5-4 s: the target and one peer cut
//                apart (both reach the third node and etcd), or only what
//                the target sends the peer dropped, or the target cut from
//                both other nodes (it reaches etcd)
//   partition-etcd   the target cut from etcd (it reaches the nodes), or
//                from etcd and the nodes alike
//
// Each round also runs a watch on stream 0, placed on the third node, whose
// notice stream is read on every node throughout and read back late
// (check_notices); TIDINGS_FAULT_WATCH=0 (scripts/faults --no-watch) leaves
// it out.
//
// Partitions run in a network namespace of the test's own
// (private_network.hpp) with each node as its own user; they need root.
// TIDINGS_FAULT_ROUNDS (default 3) rounds per scenario; TIDINGS_FAULT_SEED
// the first round's seed (default: drawn, printed), round k uses seed + k,
// so a failing round runs again the same way: scripts/faults --seed S.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cursor.hpp"
#include "tests/faults/fault_plan.hpp"
#include "tests/faults/history_check.hpp"
#include "tests/faults/private_network.hpp"
#include "tests/support/cluster_nodes.hpp"
#include "tests/support/etcd_cluster.hpp"
#include "tests/support/hung_process.hpp"
#include "tests/support/publishing.hpp"
#include "tests/support/replicated_traffic.hpp"
#include "tests/support/watching.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

constexpr int publishers = 2;
constexpr int per_publisher = 300;  // at 100/s each: 3 s of traffic
constexpr int rate = 100;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::stoull(v);
}

std::uint64_t first_seed() {
  static const std::uint64_t seed = env_number("TIDINGS_FAULT_SEED", std::random_device{}() % 1'000'000);
  return seed;
}

struct round_outcome {
  std::vector<std::vector<std::pair<int, std::string>>> acked;  // per stream
  std::vector<history_report> histories;                        // per stream
  history_report notices;                                       // the watch's notice stream
  std::chrono::milliseconds longest_wait{0};                    // one publish, first try to acknowledgement
  int retries = 0;
  std::string failure;  // traffic that never completed
};

// The node a step hits: stream 0 is owned by node 0 and followed by node 1.
std::size_t node_of(fault_target t) {
  return t == fault_target::owner ? 0 : t == fault_target::follower ? 1 : 2;
}

std::uint16_t port_of_url(const std::string& url) {
  return static_cast<std::uint16_t>(std::stoul(url.substr(url.rfind(':') + 1)));
}

// Cuts node a's packets to node b's cluster port, and b's to a's.
void cut_apart(packet_rules& rules, const cluster_nodes& cluster, std::size_t a, std::size_t b) {
  rules.drop(cluster.uid(a), cluster.cluster_port(b));
  rules.drop(cluster.uid(b), cluster.cluster_port(a));
}

void partition(packet_rules& rules, const cluster_nodes& cluster, const etcd_cluster& etcd,
               const fault_step& step) {
  const auto n = node_of(step.target);
  const auto peer = node_of(step.peer);
  switch (step.kind) {
    case fault_kind::cut_pair:
      return cut_apart(rules, cluster, n, peer);
    case fault_kind::one_way:
      return rules.drop(cluster.uid(n), cluster.cluster_port(peer));
    case fault_kind::isolate:
    case fault_kind::cut_all:
      for (std::size_t other = 0; other < cluster.size(); ++other)
        if (other != n) cut_apart(rules, cluster, n, other);
      if (step.kind == fault_kind::isolate) return;
      [[fallthrough]];
    case fault_kind::cut_etcd:
      for (const auto& url : etcd.client_urls()) rules.drop(cluster.uid(n), port_of_url(url));
      return;
    default:
      return;
  }
}

void inject(cluster_nodes& cluster, etcd_cluster& etcd, const fault_step& step) {
  const auto n = node_of(step.target);
  // The schedule is the round's input (drawn from the seed), not a wait
  // for a condition: the fault lasts exactly this long.
  if (is_partition(step.kind)) {
    packet_rules rules;
    partition(rules, cluster, etcd, step);
    std::this_thread::sleep_for(step.hold);
    rules.clear();
    return;
  }
  switch (step.kind) {
    case fault_kind::pause: {
      hung_process hung(cluster.process(n).pid());
      std::this_thread::sleep_for(step.hold);
      hung.resume();
      break;
    }
    case fault_kind::kill:
      cluster.kill9(n);
      std::this_thread::sleep_for(step.hold);
      cluster.restart(n);
      break;
    case fault_kind::restart:
      cluster.terminate(n);
      std::this_thread::sleep_for(step.hold);
      cluster.restart(n);
      break;
    case fault_kind::etcd_member:
      etcd.kill(step.etcd_member);
      std::this_thread::sleep_for(step.hold);
      etcd.start(step.etcd_member);
      break;
    default:
      break;
  }
}

// Three streams per round, each owned by another node and followed by the
// next, so every fault hits the owner of one stream, the follower of
// another and the third node of the last: the fault's target names its
// role for stream 0.
constexpr std::size_t streams = 3;

// One stream's traffic: a session on every node, each resuming on the
// next node when its own goes away (and following `closing` as a client
// does), and the publishers, each through another node first.
struct stream_traffic {
  std::string stream;
  std::string start;
  std::size_t expected = 0;                          // events after start: the publishers', and markers
  std::vector<std::pair<int, std::string>> markers;  // marker events (index < 0) and their cursors
  std::vector<std::unique_ptr<stream_reader>> readers;
  std::vector<std::unique_ptr<steady_publisher>> pubs;
};

// `markers`: how many marker events a watch's traffic adds to the stream.
stream_traffic start_traffic(cluster_nodes& cluster, std::size_t owner, std::uint64_t seed,
                             std::size_t markers) {
  stream_traffic t;
  t.stream = cluster.owned_stream(owner, "fault" + std::to_string(seed) + "-" + std::to_string(owner) + "-",
                                  (owner + 1) % cluster.size());
  t.start = publish(cluster.endpoint(owner), t.stream, event_json("/e", "ADDED", json{{"i", 0}}));
  t.expected = publishers * per_publisher + markers;
  for (std::size_t n = 0; n < cluster.size(); ++n)
    t.readers.push_back(std::make_unique<stream_reader>(
        std::vector{cluster.endpoint(n), cluster.endpoint((n + 1) % 3), cluster.endpoint((n + 2) % 3)},
        t.stream, t.start, t.expected, 90s, true));
  return t;
}

void start_publishers(cluster_nodes& cluster, stream_traffic& t) {
  for (int p = 0; p < publishers; ++p) {
    const auto first = static_cast<std::size_t>(p + 1);
    t.pubs.push_back(std::make_unique<steady_publisher>(
        std::vector{cluster.endpoint(first % 3), cluster.endpoint((first + 1) % 3),
                    cluster.endpoint((first + 2) % 3)},
        t.stream, 1 + p * per_publisher, per_publisher, rate, 2, 60s));
  }
}

// Waits for the publishers, then reads the stream back: the sessions that
// read throughout and a late session on every node. Event 0 is where the
// sessions start reading (after it): not counted.
void finish_traffic(stream_traffic& t, round_outcome& out) {
  std::vector<std::pair<int, std::string>> acked = t.markers;
  for (auto& p : t.pubs) {
    if (!p->join(90s)) out.failure += t.stream + ": " + p->failure() + "; ";
    for (const auto& [i, c] : p->acknowledged()) acked.emplace_back(i, c);
    out.longest_wait = std::max(out.longest_wait, p->longest_wait());
    out.retries += p->retries();
  }
  out.acked.push_back(std::move(acked));
}

history_report read_back_stream(cluster_nodes& cluster, stream_traffic& t,
                                const std::vector<std::pair<int, std::string>>& acked) {
  std::vector<read_back> reads;
  for (std::size_t n = 0; n < t.readers.size(); ++n) {
    t.readers[n]->join();
    reads.push_back({t.stream + ": session on node " + std::to_string(n) + " throughout",
                     t.readers[n]->events(), t.readers[n]->controls()});
  }
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    stream_reader late({cluster.endpoint(n)}, t.stream, t.start, t.expected, 30s);
    late.await_started(10s);
    late.join();
    reads.push_back(
        {t.stream + ": late session on node " + std::to_string(n), late.events(), late.controls()});
  }
  return check_history(acked, reads);
}

// Where the watched stream ends, once known: a notice covers it when the
// input position it covers (its `cursor`) is there or past it. (Its lines
// cannot tell: a notice names at most 20, then "+N more".)
struct input_end {
  std::mutex mutex;
  std::optional<core::cursor> at;
};

std::function<bool(const data_event&)> covering(const std::shared_ptr<input_end>& end) {
  return [end](const data_event& e) {
    auto c = core::parse_cursor(e.data.value("cursor", std::string()));
    std::lock_guard lock(end->mutex);
    return c && end->at && c->epoch == end->at->epoch && c->seq >= end->at->seq;
  };
}

// A watch on stream 0, placed (by its notice stream) on the third node:
// sessions on every node read its notices throughout, and a late one on
// every node reads them back (check_notices). Its lines name each event's
// index and cursor, so no two are alike and none is deduped away.
struct watch_traffic {
  std::string name;
  std::string start;  // the notice covering the start marker
  std::shared_ptr<input_end> end = std::make_shared<input_end>();
  std::vector<std::unique_ptr<stream_reader>> readers;
};

const std::string line_filter =
    "local n = event.new and event.new.i\n"
    "return tostring(event.key) .. ' ' .. tostring(n) .. ' ' .. tostring(event.cursor)";

// The markers go into the watched stream like its other events (the
// stream's history counts them, under indices -1 and -2).
constexpr int start_marker = -1;
constexpr int end_marker = -2;

// Publishes marker `index` as the publishers publish their events
// (retried with its Idempotency-Key until acknowledged); its cursor.
std::string publish_marker(cluster_nodes& cluster, const std::string& stream, int index) {
  std::map<int, std::string> acked;
  publish_steadily(acked, {cluster.endpoint(0), cluster.endpoint(1), cluster.endpoint(2)}, stream, index, 1);
  return acked.at(index);
}

watch_traffic start_watch_traffic(cluster_nodes& cluster, stream_traffic& input, std::uint64_t seed) {
  watch_traffic w;
  w.name = cluster.owned_stream(2, "watch:fw" + std::to_string(seed) + "-", 0).substr(6);
  const std::string notices = "watch:" + w.name;
  start_watch_ok(cluster.endpoint(0), json{{"name", w.name},
                                           {"uri", "stream://" + input.stream},
                                           {"on_event", line_filter},
                                           {"debounce_ms", 50},
                                           {"max_wait_ms", 100}});
  // Where the notices begin: the first one, which covers a marker
  // published now (nothing else was published since the watch started).
  stream_reader first({cluster.endpoint(1)}, notices, "", 1, 20s);
  first.await_started(10s);
  const auto marker = publish_marker(cluster, input.stream, start_marker);
  input.markers.emplace_back(start_marker, marker);
  first.join();
  auto got = first.events();
  if (got.size() != 1 || got[0].data.value("cursor", std::string()) != marker)
    throw std::runtime_error("the watch's first notice does not cover the start marker at " + marker + ": " +
                             (got.empty() ? std::string("none came") : got[0].raw.dump()));
  w.start = got[0].cursor;
  for (std::size_t n = 0; n < cluster.size(); ++n)
    w.readers.push_back(std::make_unique<stream_reader>(
        std::vector{cluster.endpoint(n), cluster.endpoint((n + 1) % 3), cluster.endpoint((n + 2) % 3)},
        notices, w.start, 1'000'000, 90s, true, covering(w.end)));
  return w;
}

// After the traffic and its end marker: every session's notices and a late
// read on every node, up to the notice covering the marker.
history_report read_back_notices(cluster_nodes& cluster, watch_traffic& w) {
  std::vector<read_back> reads;
  for (std::size_t n = 0; n < w.readers.size(); ++n) {
    w.readers[n]->join();
    reads.push_back({"watch:" + w.name + ": session on node " + std::to_string(n) + " throughout",
                     w.readers[n]->events(), w.readers[n]->controls()});
  }
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    stream_reader late({cluster.endpoint(n)}, "watch:" + w.name, w.start, 1'000'000, 30s, false,
                       covering(w.end));
    late.await_started(10s);
    late.join();
    reads.push_back(
        {"watch:" + w.name + ": late session on node " + std::to_string(n), late.events(), late.controls()});
  }
  auto report = check_notices(reads);
  // Each read must reach the end: a watch that no longer runs anywhere
  // notices nothing more.
  for (const auto& rb : reads)
    if (rb.events.empty() || !covering(w.end)(rb.events.back())) {
      ++report.lost;
      report.details.push_back(rb.who + ": no notice of the end marker");
    }
  return report;
}

bool with_watch() {
  return env_number("TIDINGS_FAULT_WATCH", 1) != 0;
}

// The end marker goes right after the newest acknowledged event of the
// watched stream, once its publishers are done (the watch's sessions know
// where it will be before it can be noticed); then the notices are read
// back. On a failure the nodes' logs are kept (they go with the nodes'
// temporary directories otherwise).
history_report finish_watch(cluster_nodes& cluster, watch_traffic& watch, const std::string& input,
                            std::vector<std::pair<int, std::string>>& acked, std::uint64_t seed) {
  core::cursor last{};
  for (const auto& [i, c] : acked) {
    auto at = cursor_of(c);
    if (at.seq > last.seq) last = at;
  }
  const core::cursor expected{last.epoch, last.seq + 1};
  {
    std::lock_guard lock(watch.end->mutex);
    watch.end->at = expected;
  }
  const auto end = publish_marker(cluster, input, end_marker);
  acked.emplace_back(end_marker, end);
  auto report = read_back_notices(cluster, watch);
  if (cursor_of(end) != expected) {
    ++report.lost;  // the sessions' end is not where they waited for it
    report.details.push_back("the end marker went to " + end + ", not " + core::format_cursor(expected));
  }
  if (!report.clean()) {
    const auto path =
        std::filesystem::temp_directory_path() / ("tidings-faults-" + std::to_string(seed) + ".log");
    std::ofstream(path) << cluster.logs();
    report.details.push_back("the nodes' logs: " + path.string());
  }
  return report;
}

round_outcome run_round(const fault_scenario& scenario, std::uint64_t seed, etcd_cluster& etcd,
                        bool distinct_users) {
  const auto step = plan_round(scenario, seed);
  // A replica lag under the member lease: a follower paused or cut off
  // from its owner leaves the ISR by the owner's compare-and-swap before
  // etcd drops its membership, so both paths run under faults.
  cluster_nodes cluster(3, {"--replica-lag-ms", "1000"}, 20s, &etcd, distinct_users);
  std::vector<stream_traffic> traffic;
  for (std::size_t owner = 0; owner < streams; ++owner)
    traffic.push_back(start_traffic(cluster, owner, seed, owner == 0 && with_watch() ? 2 : 0));
  for (auto& t : traffic)
    for (auto& r : t.readers) r->await_started(10s);
  std::optional<watch_traffic> watch;
  if (with_watch()) {
    watch = start_watch_traffic(cluster, traffic[0], seed);
    for (auto& r : watch->readers) r->await_started(10s);
  }

  round_outcome out;
  for (auto& t : traffic) start_publishers(cluster, t);
  std::this_thread::sleep_for(step.after);
  inject(cluster, etcd, step);
  for (auto& t : traffic) finish_traffic(t, out);
  cluster.await_converged(30s);
  if (watch) out.notices = finish_watch(cluster, *watch, traffic[0].stream, out.acked[0], seed);
  for (std::size_t k = 0; k < traffic.size(); ++k)
    out.histories.push_back(read_back_stream(cluster, traffic[k], out.acked[k]));
  return out;
}

void run_scenario(const std::string& name) {
  const fault_scenario* scenario = nullptr;
  for (const auto& s : fault_scenarios())
    if (s.name == name) scenario = &s;
  REQUIRE(scenario != nullptr);
  const auto rounds = env_number("TIDINGS_FAULT_ROUNDS", 3);
  bool partitions = false;
  for (auto k : scenario->kinds) partitions = partitions || is_partition(k);
  if (partitions) {
    if (auto why = private_network_unavailable(); !why.empty()) {
      WARN("partitions skipped: " << why);
      return;
    }
    // This thread and all it starts from here on (etcd, nodes, clients).
    enter_private_network();
  }
  // Each scenario its own etcd, started where its nodes run: three
  // members where one is killed, else one.
  const bool etcd_faults = scenario->kinds.front() == fault_kind::etcd_member;
  etcd_cluster etcd(etcd_faults ? 3 : 1);

  std::size_t acknowledged = 0, lost = 0, reassigned = 0, resyncs = 0, clean = 0;
  std::size_t notices = 0, notices_lost = 0;
  std::chrono::milliseconds longest{0};
  for (std::uint64_t k = 0; k < rounds; ++k) {
    const auto seed = first_seed() + k;
    const auto step = plan_round(*scenario, seed);
    INFO("scenario " << name << ", round " << k << ", seed " << seed << " (TIDINGS_FAULT_SEED=" << seed
                     << " TIDINGS_FAULT_ROUNDS=1 reruns it): " << describe(step));
    auto out = run_round(*scenario, seed, etcd, partitions);
    INFO("publishers: " << (out.failure.empty() ? "done" : out.failure));
    CHECK(out.failure.empty());
    bool round_clean = out.failure.empty();
    for (std::size_t i = 0; i < out.histories.size(); ++i) {
      const auto& h = out.histories[i];
      INFO("stream " << i << " (owned by node " << i << "): " << h.summary());
      CHECK(h.clean());
      round_clean = round_clean && h.clean();
      acknowledged += h.acknowledged;
      lost += h.lost;
      reassigned += h.reassigned;
      resyncs += h.resyncs;
    }
    if (with_watch()) {
      INFO("the watch's notices: " << out.notices.summary());
      CHECK(out.notices.clean());
      round_clean = round_clean && out.notices.clean();
      notices += out.notices.acknowledged;
      notices_lost += out.notices.lost;
      reassigned += out.notices.reassigned;
      resyncs += out.notices.resyncs;
    }
    longest = std::max(longest, out.longest_wait);
    if (round_clean) ++clean;
  }
  // One line per scenario, as docs/reliability.md records them.
  std::cerr << "faults: " << name << " | rounds " << rounds << " (seeds " << first_seed() << ".."
            << first_seed() + rounds - 1 << ") | clean " << clean << " | acknowledged " << acknowledged
            << " | lost " << lost;
  if (with_watch()) std::cerr << " | notices " << notices << " (lost " << notices_lost << ")";
  std::cerr << " | reassigned " << reassigned << " | resyncs " << resyncs << " | longest publish wait "
            << longest.count() << " ms\n";
}

}  // namespace

TEST_CASE("pauses of the owner, its follower or the third node", "[faults]") {
  run_scenario("pause");
}

TEST_CASE("kill -9 and restart of the owner, its follower or the third node", "[faults]") {
  run_scenario("kill");
}

TEST_CASE("graceful restarts of the owner, its follower or the third node", "[faults]") {
  run_scenario("restart");
}

TEST_CASE("kill -9 and restart of one etcd member of three", "[faults]") {
  run_scenario("etcd-member");
}

TEST_CASE("partitions between nodes: a pair cut apart, one way dropped, a node isolated", "[faults]") {
  run_scenario("partition-nodes");
}

TEST_CASE("partitions from etcd: a node cut from etcd, or from everything", "[faults]") {
  run_scenario("partition-etcd");
}
