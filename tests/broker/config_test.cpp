// broker/config.hpp: the example config (complete, valid, sections valid
// when uncommented), log-level and --verbose, ${env.NAME} in top-level
// settings, field paths in file errors, and what a reload applies live
// (plan_reload) versus what it lists as needing a restart.

#include "broker/config.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/support/build_paths.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"

using namespace tidings::broker;
using tidings::logging::level;

namespace {

std::filesystem::path example_path() {
  return std::filesystem::path(tidings::testing::source_dir()) / "config/tidings.example.yaml";
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A file in a fresh temp directory, removed with it.
class temp_file {
 public:
  explicit temp_file(const std::string& text) {
    auto pattern = (std::filesystem::temp_directory_path() / "tidings-config-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    dir_ = buf.data();
    write(text);
  }
  ~temp_file() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;

  void write(const std::string& text) const { std::ofstream(path()) << text; }
  std::string path() const { return (dir_ / "tidings.yaml").string(); }

 private:
  std::filesystem::path dir_;
};

// A cluster secret file every cluster case below may name.
const std::string& secret_file() {
  static temp_file file("");
  static const std::string path = [] {
    std::ofstream(file.path()) << std::string(64, 'k') << "\n";
    return file.path();
  }();
  return path;
}

config parsed(const std::vector<std::string>& args) {
  auto out = parse_config(args);
  INFO(out.error);
  REQUIRE(out.cfg);
  return *out.cfg;
}

std::string parse_error(const std::vector<std::string>& args) {
  auto out = parse_config(args);
  REQUIRE_FALSE(out.cfg);
  REQUIRE_FALSE(out.error.empty());
  return out.error;
}

// The example with its commented-out sections switched on: from a line
// "#tenants:" or "#upstreams:" to the next blank line, each line loses its
// first character ('#').
std::string uncommented_example() {
  std::istringstream in(read_text(example_path()));
  std::string out, line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line == "#tenants:" || line == "#upstreams:") in_section = true;
    if (line.empty()) in_section = false;
    if (in_section) {
      REQUIRE(line.front() == '#');
      line.erase(0, 1);
    }
    out += line + "\n";
  }
  return out;
}

reload_plan plan_for(const config& running, const std::string& path) {
  reload_plan plan;
  auto err = plan_reload(path, running, &plan);
  INFO(err.value_or(""));
  REQUIRE_FALSE(err);
  return plan;
}

std::string webhook_yaml(const std::string& token, const std::string& previous,
                         const std::string& extra = {}) {
  return "upstreams:\n"
         "  resources:\n"
         "    - uri: hook://deploys\n"
         "      watch: {strategy: {type: webhook, token: " +
         token + ", previous_tokens: [" + previous + "]}}\n" + extra;
}

}  // namespace

TEST_CASE("the example config lists every setting", "[config]") {
  auto text = read_text(example_path());
  REQUIRE_FALSE(text.empty());
  for (const auto& key : setting_names()) {
    INFO(key);
    // Set, or shown commented out where the default is not one value.
    bool set = text.starts_with(key + ":") || text.find("\n" + key + ": ") != std::string::npos;
    bool shown = text.find("\n# " + key + ": ") != std::string::npos;
    CHECK((set || shown));
  }
  CHECK(std::find(setting_names().begin(), setting_names().end(), "log-level") != setting_names().end());
}

TEST_CASE("the example config is valid and keeps the defaults", "[config]") {
  auto from_file = parsed({"--check-config", example_path().string()});
  auto defaults = parsed({});
  CHECK(from_file.check_only);
  CHECK(summary(from_file) == summary(defaults));
  CHECK(from_file.retention.max_events == defaults.retention.max_events);
  CHECK(from_file.sse.heartbeat == defaults.sse.heartbeat);
  CHECK(from_file.sse.queue_bytes == defaults.sse.queue_bytes);
  CHECK(from_file.max_connections_per_address == defaults.max_connections_per_address);
  CHECK(from_file.watches.filter.max_instructions == defaults.watches.filter.max_instructions);
  CHECK(from_file.audit_log == defaults.audit_log);
  CHECK(from_file.tenants.empty());
  CHECK(from_file.upstreams.empty());
}

TEST_CASE("the example's commented-out sections are valid when uncommented", "[config]") {
  ::setenv("ACME_JWT_SECRET", "0123456789abcdef0123456789abcdef-example", 1);
  ::setenv("MCP_TOKEN", "mcp-token", 1);
  ::setenv("REPORTS_WEBHOOK_TOKEN", "reports-token-0123456789", 1);
  temp_file file(uncommented_example());
  auto cfg = parsed({"--check-config", file.path()});
  REQUIRE(cfg.tenants.size() == 1);
  CHECK(cfg.tenants[0].id == "acme");
  CHECK(cfg.tenants[0].scopes.size() == 2);
  CHECK(cfg.upstreams.mcp.size() == 2);
  REQUIRE(cfg.upstreams.web.resources.size() == 1);
  CHECK(cfg.upstreams.web.resources[0].token == "reports-token-0123456789");
  CHECK(summary(cfg).starts_with("1 tenant, 4 upstreams, "));
}

TEST_CASE("log-level takes a base level and per-subsystem levels, --verbose makes the base debug",
          "[config]") {
  auto cfg = parsed({"--log-level", "warn,source=debug"});
  CHECK(cfg.flag_settings.contains("log-level"));
  CHECK(tidings::logging::to_string(effective_log_levels(cfg)) == "warn,source=debug");
  cfg = parsed({"--log-level=error,webhook=info", "--verbose"});
  CHECK(tidings::logging::to_string(effective_log_levels(cfg)) == "debug,webhook=info");
  CHECK(effective_log_levels(parsed({})).base == level::info);

  auto err = parse_error({"--log-level", "loud"});
  CHECK(err.starts_with("--log-level "));
  CHECK(err.find("\"loud\" is not a level") != std::string::npos);

  temp_file file("log-level: info,sorce=debug\n");
  err = parse_error({"--config", file.path()});
  CHECK(err.find(": log-level: unknown subsystem \"sorce\"") != std::string::npos);
}

TEST_CASE("top-level file settings take ${env.NAME} and name themselves in errors", "[config]") {
  ::setenv("TIDINGS_TEST_HEARTBEAT", "1234", 1);
  ::unsetenv("TIDINGS_TEST_UNSET");
  temp_file file("heartbeat-ms: ${env.TIDINGS_TEST_HEARTBEAT}\n");
  CHECK(parsed({"--config", file.path()}).sse.heartbeat.count() == 1234);

  file.write("data-dir: ${env.TIDINGS_TEST_UNSET}/x\n");
  CHECK(parse_error({"--config", file.path()})
            .ends_with(": data-dir: environment variable TIDINGS_TEST_UNSET is not set"));
  file.write("retention-events: -5\n");
  CHECK(parse_error({"--config", file.path()}).find(": retention-events: must be a whole number") !=
        std::string::npos);
  file.write("heartbeat-ms: 100\nheartbeat-ms: 200\n");
  CHECK(parse_error({"--config", file.path()}).ends_with(": heartbeat-ms: is given twice"));
  file.write("heartbeat-ms: [1]\n");
  CHECK(parse_error({"--config", file.path()}).ends_with(": heartbeat-ms: must be a single value"));
  file.write("heartbeat_ms: 100\n");
  CHECK(parse_error({"--config", file.path()}).ends_with(": heartbeat_ms: unknown setting"));
  file.write("heartbeat-ms: 100\n");
  CHECK(parse_error({"--config", file.path(), "--check-config", file.path()}).find("given already") !=
        std::string::npos);
}

TEST_CASE("a reload applies log-level live unless a flag set it", "[config][reload]") {
  temp_file file("log-level: info\nheartbeat-ms: 1000\n");
  auto running = parsed({"--config", file.path()});
  file.write("log-level: warn,webhook=debug\nheartbeat-ms: 2000\n");
  auto plan = plan_for(running, file.path());
  CHECK(tidings::logging::to_string(plan.log_levels) == "warn,webhook=debug");
  CHECK(plan.restart_needed == std::vector<std::string>{"heartbeat-ms"});

  file.write("log-level: info\nverbose: true\nheartbeat-ms: 1000\n");
  CHECK(tidings::logging::to_string(plan_for(running, file.path()).log_levels) == "debug");

  auto pinned = parsed({"--config", file.path(), "--log-level", "error"});
  file.write("log-level: debug\nheartbeat-ms: 1000\n");
  plan = plan_for(pinned, file.path());
  CHECK(tidings::logging::to_string(plan.log_levels) == "error");
  CHECK(plan.restart_needed.empty());

  file.write("log-level: loud\n");
  reload_plan untouched;
  auto err = plan_reload(file.path(), running, &untouched);
  REQUIRE(err);
  CHECK(err->find("log-level: ") != std::string::npos);
}

TEST_CASE("a reload applies webhook tokens live, other upstream changes need a restart", "[config][reload]") {
  temp_file file(webhook_yaml("token-one-0123456789", ""));
  auto running = parsed({"--config", file.path()});

  auto plan = plan_for(running, file.path());  // nothing changed
  CHECK(plan.restart_needed.empty());
  REQUIRE(plan.webhook_tokens);
  REQUIRE(plan.webhook_tokens->size() == 1);
  CHECK((*plan.webhook_tokens)[0].token == "token-one-0123456789");

  file.write(webhook_yaml("token-two-0123456789", "token-one-0123456789"));
  plan = plan_for(running, file.path());
  CHECK(plan.restart_needed.empty());
  REQUIRE(plan.webhook_tokens);
  REQUIRE(plan.webhook_tokens->size() == 1);
  CHECK((*plan.webhook_tokens)[0].uri == "hook://deploys");
  CHECK((*plan.webhook_tokens)[0].token == "token-two-0123456789");
  CHECK((*plan.webhook_tokens)[0].previous_tokens == std::vector<std::string>{"token-one-0123456789"});

  file.write(webhook_yaml("token-two-0123456789", "", "  allowed_origins: [https://app.example]\n"));
  plan = plan_for(running, file.path());
  CHECK(plan.restart_needed == std::vector<std::string>{"upstreams"});
  CHECK_FALSE(plan.webhook_tokens);

  file.write("heartbeat-ms: 1000\n");  // upstreams removed: applied live, connector by connector
  plan = plan_for(running, file.path());
  CHECK(plan.restart_needed == std::vector<std::string>{"heartbeat-ms"});
  CHECK(plan.upstream_changes.removed == std::vector<std::string>{"resources"});
  CHECK_FALSE(plan.webhook_tokens);
}

TEST_CASE("upstreams.poll_floor_ms bounds every poll: 10 s unless set, never under 100 ms", "[config]") {
  auto poll_yaml = [](const std::string& floor) {
    return "upstreams:\n" + floor +
           "  resources:\n"
           "    - uri: drive://reports\n"
           "      backend: {url: \"http://127.0.0.1:9/r\"}\n"
           "      watch: {strategy: {type: poll, interval_ms: 500}}\n";
  };
  temp_file file(poll_yaml(""));
  CHECK(parsed({"--config", file.path()}).upstreams.web.poll_floor == std::chrono::seconds(10));
  file.write(poll_yaml("  poll_floor_ms: 300\n"));
  auto running = parsed({"--config", file.path()});
  CHECK(running.upstreams.web.poll_floor == std::chrono::milliseconds(300));
  file.write(poll_yaml("  poll_floor_ms: 99\n"));
  CHECK(parse_error({"--config", file.path()}).ends_with("upstreams.poll_floor_ms: must be at least 100"));
  file.write(poll_yaml("  poll_floor_ms: soon\n"));
  CHECK(parse_error({"--config", file.path()}).find("poll_floor_ms: must be milliseconds") !=
        std::string::npos);
  // A reload with a new floor that moves a running poll restarts its
  // connector; one that moves none changes nothing.
  file.write(poll_yaml("  poll_floor_ms: 600\n"));  // the 500 ms interval becomes 600
  auto plan = plan_for(running, file.path());
  CHECK(plan.restart_needed.empty());
  CHECK(plan.upstream_changes.changed == std::vector<std::string>{"resources"});
  file.write(poll_yaml("  poll_floor_ms: 200\n"));
  plan = plan_for(running, file.path());
  CHECK(plan.restart_needed.empty());
  CHECK(plan.upstream_changes.changed.empty());
}

TEST_CASE("replication-factor and write-quorum are checked against each other", "[config][replication]") {
  auto c = parsed({});
  CHECK(c.replication_factor == 2);
  CHECK_FALSE(c.write_quorum);
  c = parsed({"--replication-factor", "3", "--write-quorum", "2"});
  CHECK(c.replication_factor == 3);
  REQUIRE(c.write_quorum);
  CHECK(*c.write_quorum == 2);
  CHECK_FALSE(parsed({"--write-quorum", "all"}).write_quorum);
  CHECK(parse_error({"--replication-factor", "0"}).find("replication-factor") != std::string::npos);
  CHECK(parse_error({"--write-quorum", "most"}).find("must be all or a number") != std::string::npos);
  // The owner is not a follower: factor 2 has one follower to count.
  auto e = parse_error({"--replication-factor", "2", "--write-quorum", "2"});
  CHECK(e.find("write-quorum") != std::string::npos);
  CHECK(e.find("keeps only 1") != std::string::npos);
}

TEST_CASE("a cluster registers in etcd: etcd, etcd-prefix and member-lease-seconds, and --seeds is gone",
          "[config][cluster]") {
  auto c = parsed({"--cluster-listen", "127.0.0.1:7100", "--etcd",
                   "http://127.0.0.1:2379, http://127.0.0.2:2379/", "--cluster-secret-file", secret_file()});
  CHECK(c.etcd_endpoints == std::vector<std::string>{"http://127.0.0.1:2379", "http://127.0.0.2:2379"});
  CHECK(c.etcd_prefix == "/tidings/");
  CHECK(c.member_lease_seconds == 5);
  c = parsed({"--cluster-listen", "127.0.0.1:7100", "--cluster-secret-file", secret_file(), "--etcd",
              "http://127.0.0.1:2379", "--etcd-prefix", "/eu", "--member-lease-seconds", "2"});
  CHECK(c.etcd_prefix == "/eu/");
  CHECK(c.member_lease_seconds == 2);
  // One node alone needs neither.
  CHECK(parsed({}).etcd_endpoints.empty());

  CHECK(parse_error({"--cluster-listen", "127.0.0.1:7100", "--cluster-secret-file", secret_file()})
            .find("a cluster needs etcd") != std::string::npos);
  CHECK(parse_error({"--etcd", "http://127.0.0.1:2379"}).find("needs cluster-listen") != std::string::npos);
  CHECK(parse_error({"--etcd", "127.0.0.1:2379"}).find("must be http://HOST:PORT or https://HOST:PORT") !=
        std::string::npos);
  CHECK(parse_error({"--etcd", " , "}).find("at least one etcd endpoint") != std::string::npos);
  CHECK(parse_error({"--etcd-prefix", "tidings"}).find("must start with '/'") != std::string::npos);
  CHECK(parse_error({"--member-lease-seconds", "0"}).find("member-lease-seconds") != std::string::npos);
  auto seeds = parse_error({"--seeds", "127.0.0.1:7101"});
  CHECK(seeds.find("--seeds no longer exists") != std::string::npos);
  CHECK(seeds.find("--etcd") != std::string::npos);
  temp_file file("seeds: 127.0.0.1:7101\n");
  CHECK(parse_error({"--config", file.path()}).find("seeds: no longer exists") != std::string::npos);
}

TEST_CASE(
    "cluster TLS: cluster-ca, cluster-cert and cluster-key together, checked at start, and with them the "
    "cluster "
    "port may leave loopback without cluster-private-network",
    "[config][cluster]") {
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "cluster");
  tidings::testing::test_ca rogue(dir.path().string(), "rogue");
  tidings::testing::leaf_spec spec{"node-1", {"DNS:node-1"}};
  spec.usage = tidings::testing::usage::server_and_client;
  const auto node = ca.issue("node", spec);
  const auto odd = rogue.issue("odd", spec);
  const std::vector<std::string> cluster = {"--cluster-listen",      "127.0.0.1:7100",        "--etcd",
                                            "http://127.0.0.1:2379", "--cluster-secret-file", secret_file()};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), cluster.begin(), cluster.end());
    return more;
  };
  auto c =
      parsed(with({"--cluster-ca", ca.files().cert, "--cluster-cert", node.cert, "--cluster-key", node.key}));
  REQUIRE(c.cluster_tls != nullptr);
  CHECK(c.cluster_tls->subject() == "CN=node-1");
  // The file's cluster-tls: mapping is the same three settings.
  temp_file file(
      "cluster-listen: \"127.0.0.1:7100\"\netcd: \"http://127.0.0.1:2379\"\ncluster-secret-file: " +
      secret_file() + "\ncluster-tls: {ca: " + ca.files().cert + ", cert: " + node.cert +
      ", key: " + node.key + "}\n");
  CHECK(parsed({"--config", file.path()}).cluster_tls != nullptr);
  CHECK(parse_error(
            with({"--cluster-ca", ca.files().cert, "--cluster-cert", odd.cert, "--cluster-key", odd.key}))
            .find("cluster-tls: " + odd.cert + ": is not a certificate of the cluster CA in " +
                  ca.files().cert) != std::string::npos);
  CHECK(parse_error(with({"--cluster-ca", ca.files().cert, "--cluster-cert", node.cert}))
            .find("needs all of cluster-ca, cluster-cert and cluster-key") != std::string::npos);
  CHECK(parse_error({"--cluster-ca", ca.files().cert, "--cluster-cert", node.cert, "--cluster-key", node.key})
            .find("need cluster-listen too") != std::string::npos);
  // Beyond loopback: tenants still, and TLS instead of the operator's word.
  temp_file tenants(
      "tenants:\n  - id: acme\n    keys:\n      - {kid: k1, alg: HS256, secret: "
      "\"acme-secret-0123456789abcdef0123\"}\n");
  const std::vector<std::string> wide = {"--config",
                                         tenants.path(),
                                         "--cluster-listen",
                                         "0.0.0.0:7100",
                                         "--cluster-advertise",
                                         "10.0.0.1:7100",
                                         "--advertise",
                                         "10.0.0.1:8080",
                                         "--etcd",
                                         "http://127.0.0.1:2379",
                                         "--cluster-secret-file",
                                         secret_file()};
  CHECK(parse_error(wide).find("cluster-tls: {ca, cert, key}") != std::string::npos);
  auto tls_wide = wide;
  tls_wide.insert(tls_wide.end(),
                  {"--cluster-ca", ca.files().cert, "--cluster-cert", node.cert, "--cluster-key", node.key});
  CHECK(parsed(tls_wide).cluster_tls != nullptr);
}

TEST_CASE("etcd over https: its CA and client certificate, checked at start, for https:// members only",
          "[config][cluster]") {
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "etcd");
  const auto client = ca.issue(
      "node", {"node-1", {}, -std::chrono::hours(1), std::chrono::hours(1), tidings::testing::usage::client});
  const std::vector<std::string> cluster = {"--cluster-listen", "127.0.0.1:7100", "--cluster-secret-file",
                                            secret_file()};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), cluster.begin(), cluster.end());
    return more;
  };
  auto c = parsed(with({"--etcd", "https://127.0.0.1:2379", "--etcd-ca-file", ca.files().cert,
                        "--etcd-client-cert", client.cert, "--etcd-client-key", client.key}));
  CHECK(c.etcd_endpoints == std::vector<std::string>{"https://127.0.0.1:2379"});
  CHECK(c.etcd_tls.client_key == client.key);
  CHECK(c.etcd_tls_context != nullptr);
  // https:// without settings: the system store.
  CHECK(parsed(with({"--etcd", "https://127.0.0.1:2379"})).etcd_tls_context == nullptr);
  CHECK(
      parse_error(with({"--etcd", "http://127.0.0.1:2379", "--etcd-ca-file", ca.files().cert}))
          .find("etcd-ca-file, etcd-client-cert and etcd-client-key apply to https:// etcd endpoints only") !=
      std::string::npos);
  CHECK(parse_error(with({"--etcd", "https://127.0.0.1:2379", "--etcd-client-cert", client.cert}))
            .find("etcd-client-cert and etcd-client-key go together") != std::string::npos);
  CHECK(parse_error(with({"--etcd", "https://127.0.0.1:2379", "--etcd-ca-file", "/nonexistent.pem"}))
            .find("etcd-ca-file /nonexistent.pem: cannot be read") != std::string::npos);
  CHECK(parse_error(with({"--etcd", "https://127.0.0.1:2379,http://127.0.0.2:2379"}))
            .find("mixes http:// and https:// members") != std::string::npos);
}

TEST_CASE("idempotency-hours defaults to a day and takes 1 h to a year", "[config]") {
  CHECK(parsed({}).idempotency_ttl == std::chrono::hours(24));
  CHECK(parsed({"--idempotency-hours", "2"}).idempotency_ttl == std::chrono::hours(2));
  CHECK(parse_error({"--idempotency-hours", "0"}).find("idempotency-hours") != std::string::npos);
  CHECK(parse_error({"--idempotency-hours", "9000"}).find("idempotency-hours") != std::string::npos);
}

TEST_CASE("replica-lag-ms defaults to 10 s and takes 100 ms to 10 min", "[config]") {
  CHECK(parsed({}).replica_lag == std::chrono::milliseconds(10000));
  CHECK(parsed({"--replica-lag-ms", "1500"}).replica_lag == std::chrono::milliseconds(1500));
  CHECK(parse_error({"--replica-lag-ms", "50"}).find("replica-lag-ms") != std::string::npos);
  CHECK(parse_error({"--replica-lag-ms", "soon"}).find("replica-lag-ms") != std::string::npos);
}

TEST_CASE("min-insync defaults to 2 with replication and is at most replication-factor",
          "[config][replication]") {
  CHECK(min_insync(parsed({})) == 2);
  CHECK(min_insync(parsed({"--replication-factor", "1"})) == 1);
  CHECK(min_insync(parsed({"--replication-factor", "3", "--min-insync", "3"})) == 3);
  CHECK(min_insync(parsed({"--min-insync", "1"})) == 1);
  auto e = parse_error({"--replication-factor", "2", "--min-insync", "3"});
  CHECK(e.find("min-insync") != std::string::npos);
  CHECK(e.find("keeps only 2") != std::string::npos);
  CHECK(parse_error({"--min-insync", "0"}).find("min-insync") != std::string::npos);
}

TEST_CASE(
    "a cluster needs a shared secret of at least 32 bytes, from a file or the config file, never from the "
    "command line",
    "[config][cluster]") {
  const std::vector<std::string> cluster{"--cluster-listen", "127.0.0.1:7100", "--etcd",
                                         "http://127.0.0.1:2379"};
  auto with = [&](std::vector<std::string> more) {
    auto args = cluster;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  CHECK(parsed(with({"--cluster-secret-file", secret_file()})).cluster_secret == std::string(64, 'k'));
  auto missing = parse_error(cluster);
  CHECK(missing.find("cluster-secret: a cluster needs a secret every member holds") != std::string::npos);
  CHECK(missing.find("--cluster-secret-file") != std::string::npos);

  temp_file short_secret("too short\n");
  auto too_short = parse_error(with({"--cluster-secret-file", short_secret.path()}));
  CHECK(too_short.find("holds 9 bytes") != std::string::npos);
  CHECK(too_short.find("at least 32") != std::string::npos);
  CHECK(parse_error(with({"--cluster-secret-file", "/nonexistent/secret"})).find("cannot read") !=
        std::string::npos);
  auto on_command_line = parse_error(with({"--cluster-secret", std::string(40, 'x')}));
  CHECK(on_command_line.find("visible to every local user") != std::string::npos);
  CHECK(parse_error({"--cluster-secret-file", secret_file()}).find("needs cluster-listen too") !=
        std::string::npos);

  temp_file file("cluster-listen: 127.0.0.1:7100\netcd: http://127.0.0.1:2379\ncluster-secret: \"" +
                 std::string(40, 'f') + "\"\n");
  CHECK(parsed({"--config", file.path()}).cluster_secret == std::string(40, 'f'));
  file.write("cluster-listen: 127.0.0.1:7100\netcd: http://127.0.0.1:2379\ncluster-secret: short\n");
  CHECK(parse_error({"--config", file.path()}).find("cluster-secret: holds 5 bytes") != std::string::npos);
}

TEST_CASE(
    "upstreams' TLS settings: https:// only, their files checked at start, unverified only when written",
    "[config]") {
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "upstreams");
  const auto client = ca.issue(
      "client",
      {"node-1", {}, -std::chrono::hours(1), std::chrono::hours(1), tidings::testing::usage::client});
  const std::string ca_file = ca.files().cert;
  auto mcp = [](const std::string& settings) {
    return "upstreams:\n  mcp:\n    remote: {" + settings + "}\n";
  };
  temp_file file(mcp("url: https://mcp.example.test/mcp, ca_file: " + ca_file +
                     ", client_cert: " + client.cert + ", client_key: " + client.key));
  auto running = parsed({"--config", file.path()});
  REQUIRE(running.upstreams.mcp.size() == 1);
  CHECK(running.upstreams.mcp[0].tls.ca_file == ca_file);
  CHECK(running.upstreams.mcp[0].tls_context != nullptr);  // made once, here
  // A new CA is a changed connector on reload.
  file.write(mcp("url: https://mcp.example.test/mcp, ca_file: " + client.cert +
                 ", client_cert: " + client.cert + ", client_key: " + client.key));
  CHECK(plan_for(running, file.path()).upstream_changes.changed == std::vector<std::string>{"remote"});
  // No settings: the shared context of the system store.
  file.write(mcp("url: https://mcp.example.test/mcp"));
  CHECK(parsed({"--config", file.path()}).upstreams.mcp[0].tls_context == nullptr);

  auto error_of = [&](const std::string& yaml) {
    file.write(yaml);
    return parse_error({"--config", file.path()});
  };
  const std::string only_https =
      "ca_file, client_cert, client_key and insecure_skip_verify apply to an https:// url only";
  CHECK(error_of(mcp("url: http://mcp.example.test/mcp, ca_file: " + ca_file))
            .ends_with("upstreams.mcp.remote: " + only_https));
  CHECK(error_of(mcp("command: [node, s.js], insecure_skip_verify: true"))
            .ends_with("upstreams.mcp.remote: " + only_https));
  CHECK(error_of(mcp("url: https://h/mcp, ca_file: /nonexistent/ca.pem"))
            .ends_with("upstreams.mcp.remote: ca_file /nonexistent/ca.pem: cannot be read"));
  CHECK(
      error_of(mcp("url: https://h/mcp, client_cert: " + client.cert))
          .ends_with("upstreams.mcp.remote: client_cert and client_key go together (mutual TLS needs both)"));
  CHECK(error_of(mcp("url: https://h/mcp, insecure_skip_verify: yes"))
            .ends_with("upstreams.mcp.remote.insecure_skip_verify: must be true or false"));
  CHECK(
      error_of(mcp("url: https://h/mcp, insecure_skip_verify: true, ca_file: " + ca_file))
          .ends_with(
              "upstreams.mcp.remote: insecure_skip_verify checks nothing, so ca_file would be ignored: keep "
              "one of them"));
  CHECK(error_of("upstreams:\n  kube:\n    prod: {server: \"http://10.0.0.1:8080\", ca_file: " + ca_file +
                 "}\n")
            .ends_with(
                "upstreams.kube.prod: ca_file, client_cert, client_key and insecure_skip_verify apply to an "
                "https:// server only"));

  file.write(
      "upstreams:\n"
      "  kube:\n"
      "    prod: {server: \"https://10.0.0.1:6443\", ca_file: " +
      ca_file +
      "}\n"
      "  postgres:\n"
      "    app: {conninfo: \"host=db.internal dbname=app\", ca_file: " +
      ca_file + ", client_cert: " + client.cert + ", client_key: " + client.key +
      "}\n"
      "    lab: {conninfo: \"host=lab dbname=x\", insecure_skip_verify: true}\n"
      "  resources:\n"
      "    - uri: drive://reports\n"
      "      backend: {url: \"https://127.0.0.1:9/r\", insecure_skip_verify: true}\n"
      "      watch: {strategy: {type: poll, interval_ms: 60000}}\n");
  const auto all = parsed({"--config", file.path()}).upstreams;
  REQUIRE(all.kube.size() == 1);
  CHECK(all.kube[0].tls_context != nullptr);
  REQUIRE(all.postgres.size() == 2);
  using keywords = tidings::sources::postgres::libpq_keywords;
  CHECK(tidings::sources::postgres::libpq_tls_keywords(all.postgres[0].tls) ==
        keywords{{"sslrootcert", ca_file},
                 {"sslcert", client.cert},
                 {"sslkey", client.key},
                 {"sslmode", "verify-full"}});
  CHECK(tidings::sources::postgres::libpq_tls_keywords(all.postgres[1].tls) ==
        keywords{{"sslmode", "require"}});
  REQUIRE(all.web.resources.size() == 1);
  CHECK(all.web.resources[0].backend->tls.insecure_skip_verify);
}

TEST_CASE("a webhook's signature is read, checked, and applied live on reload", "[config][webhook]") {
  auto hook = [](const std::string& signature) {
    return "upstreams:\n  resources:\n    - uri: hook://deploys\n      watch: {strategy: {type: webhook, "
           "token: token-one-0123456789, signature: {" +
           signature + "}}}\n";
  };
  temp_file file(hook("scheme: stripe, secret: whsec_1, window_s: 60"));
  auto running = parsed({"--config", file.path()});
  REQUIRE(running.upstreams.web.resources.size() == 1);
  const auto& sig = running.upstreams.web.resources[0].signature;
  REQUIRE(sig);
  CHECK(sig->scheme == tidings::sources::web::signature_scheme::stripe);
  CHECK(sig->secret == "whsec_1");
  CHECK(sig->window == std::chrono::seconds(60));

  // A rotated secret goes to the running connector with the tokens.
  file.write(hook("scheme: stripe, secret: whsec_2, previous_secrets: [whsec_1]"));
  auto plan = plan_for(running, file.path());
  CHECK(plan.restart_needed.empty());
  REQUIRE(plan.webhook_tokens);
  REQUIRE((*plan.webhook_tokens)[0].signature);
  CHECK((*plan.webhook_tokens)[0].signature->secret == "whsec_2");
  CHECK((*plan.webhook_tokens)[0].signature->previous_secrets == std::vector<std::string>{"whsec_1"});

  auto error_of = [&](const std::string& yaml) {
    file.write(yaml);
    return parse_error({"--config", file.path()});
  };
  const std::string at = "resources[0].watch.strategy.signature";
  CHECK(error_of(hook("scheme: gitlab, secret: s"))
            .ends_with(at + ".scheme: must be github, stripe or hmac-sha256, not 'gitlab'"));
  CHECK(error_of(hook("scheme: github")).ends_with(at + ": needs secret"));
  CHECK(error_of(hook("scheme: github, secret: \"\"")).ends_with(at + ".secret: must not be empty"));
  CHECK(error_of(hook("scheme: github, secret: s, header: X-Sig"))
            .ends_with(at + ".header: is for scheme hmac-sha256 only (github names its own header)"));
  CHECK(error_of(hook("scheme: hmac-sha256, secret: s, window_s: 0"))
            .ends_with(at + ".window_s: must be a whole number from 1 to 86400"));
  CHECK(error_of(hook("scheme: hmac-sha256, secret: s, sign: yes")).find("sign") != std::string::npos);
}

TEST_CASE("a resource's watch without a strategy polls every 60 s, and its backend may POST and require JSON",
          "[config]") {
  auto resource = [](const std::string& backend, const std::string& watch) {
    return "upstreams:\n  resources:\n    - uri: drive://x\n      backend: {url: \"http://127.0.0.1:9/x\"" +
           backend + "}\n      watch:" + watch + "\n";
  };
  temp_file file(resource("", " {}"));
  auto polled = parsed({"--config", file.path()}).upstreams.web.resources.at(0);
  CHECK(polled.kind == tidings::sources::web::strategy::poll);
  CHECK(polled.interval == std::chrono::seconds(60));
  file.write(resource("", ""));  // `watch:` with nothing under it
  CHECK(parsed({"--config", file.path()}).upstreams.web.resources.at(0).kind ==
        tidings::sources::web::strategy::poll);

  file.write(resource(", kind: http, method: post, body: '{\"q\":1}', require_json_response: true", " {}"));
  auto posted = parsed({"--config", file.path()}).upstreams.web.resources.at(0).backend.value();
  CHECK(posted.method == "POST");
  CHECK(posted.body == "{\"q\":1}");
  CHECK(posted.require_json_response);

  const std::string at = "upstreams.resources[0].backend";
  file.write(resource(", kind: grpc", " {}"));
  CHECK(parse_error({"--config", file.path()}).ends_with(at + ".kind: must be http, not 'grpc'"));
  file.write(resource(", method: put", " {}"));
  CHECK(parse_error({"--config", file.path()}).ends_with(at + ".method: must be get or post, not 'PUT'"));
  file.write(resource(", body: x", " {}"));
  CHECK(parse_error({"--config", file.path()}).ends_with(at + ".body: goes with method: post"));
  // Without a backend there is nothing to poll: a watch is still needed.
  file.write("upstreams:\n  resources:\n    - uri: drive://x\n");
  CHECK(parse_error({"--config", file.path()}).find("needs watch") != std::string::npos);
}

TEST_CASE("an HTTPS listener: tls-listen, tls-cert and tls-key together, the key checked at start",
          "[config][tls]") {
  tidings::testing::temp_dir dir;
  tidings::testing::test_ca ca(dir.path().string(), "node");
  const auto leaf = ca.issue("node", {"localhost", {"DNS:localhost"}});
  const auto other = ca.issue("other", {"other", {"DNS:other"}});
  auto c = parsed({"--tls-listen", "localhost:8443", "--tls-cert", leaf.cert, "--tls-key", leaf.key});
  REQUIRE(c.tls_listen);
  CHECK(c.tls_listen->host == "127.0.0.1");
  CHECK(c.tls_listen->port == 8443);
  REQUIRE(c.tls_keys != nullptr);
  CHECK(c.tls_keys->current() != nullptr);
  CHECK(c.tls_keys->info().subject == "CN=localhost");
  CHECK_FALSE(c.tls_keys->info().not_after.empty());
  // The file's tls: mapping is the same three settings.
  temp_file file("tls: {listen: \"127.0.0.1:0\", cert: " + leaf.cert + ", key: " + leaf.key + "}\n");
  CHECK(parsed({"--config", file.path()}).tls_keys != nullptr);
  temp_file unknown("tls: {listen: \"127.0.0.1:0\", certificate: " + leaf.cert + "}\n");
  CHECK(parse_error({"--config", unknown.path()}).find("tls: certificate: unknown setting") !=
        std::string::npos);
  CHECK(parse_error({"--tls-cert", leaf.cert, "--tls-key", leaf.key}).find("give tls-listen HOST:PORT too") !=
        std::string::npos);
  CHECK(parse_error({"--tls-listen", "127.0.0.1:8443", "--tls-cert", leaf.cert})
            .find("needs tls-cert FILE and tls-key FILE") != std::string::npos);
  CHECK(parse_error({"--tls-listen", "127.0.0.1:8443", "--tls-cert", leaf.cert, "--tls-key", other.key})
            .find("tls-key " + other.key + ": not the key of the certificate in tls-cert " + leaf.cert) !=
        std::string::npos);
  CHECK(
      parse_error({"--tls-listen", "127.0.0.1:8443", "--tls-cert", "/nonexistent.pem", "--tls-key", leaf.key})
          .find("tls-cert /nonexistent.pem: cannot be read") != std::string::npos);
  CHECK(parse_error({"--tls-listen", "127.0.0.1:8443", "--tls-cert", leaf.key, "--tls-key", leaf.key})
            .find("tls-cert " + leaf.key + ": no PEM certificate in it") != std::string::npos);
  // Host headers are checked against DNS rebinding only while every port is loopback.
  CHECK(listens_on_loopback_only(c));
  config wide = c;
  wide.tls_listen = config::address{"0.0.0.0", 8443};
  CHECK_FALSE(listens_on_loopback_only(wide));
  wide.tls_listen = config::address{"::1", 8443};
  CHECK(listens_on_loopback_only(wide));
  // Encryption is not authentication: beyond loopback only with tenants.
  CHECK(parse_error({"--tls-listen", "0.0.0.0:8443", "--tls-cert", leaf.cert, "--tls-key", leaf.key})
            .find("tls-listen: refusing to listen on 0.0.0.0:8443: without tenants") != std::string::npos);
}

TEST_CASE("nats_topic: a server and a subject, each checked at start", "[config]") {
  auto resource = [](const std::string& strategy) {
    return "upstreams:\n  resources:\n    - uri: bus://inventory\n      watch: {strategy: {type: nats_topic" +
           strategy + "}}\n";
  };
  temp_file file(
      resource(", url: \"nats://10.0.0.5:4222,nats://u:p@10.0.0.6:4222\", subject: \"inventory.*.>\", "
               "timeout_ms: 2000"));
  auto r = parsed({"--config", file.path()}).upstreams.web.resources.at(0);
  CHECK(r.kind == tidings::sources::web::strategy::nats_topic);
  CHECK_FALSE(r.polled());
  REQUIRE(r.nats);
  CHECK(r.nats->url == "nats://10.0.0.5:4222,nats://u:p@10.0.0.6:4222");
  CHECK(r.nats->subject == "inventory.*.>");
  CHECK(r.nats->timeout == std::chrono::seconds(2));
  file.write(resource(", subject: orders"));
  CHECK(parsed({"--config", file.path()}).upstreams.web.resources.at(0).nats->url == "nats://127.0.0.1:4222");

  const std::string at = "upstreams.resources[0].watch.strategy";
  auto error_for = [&](const std::string& strategy) {
    file.write(resource(strategy));
    return parse_error({"--config", file.path()});
  };
  CHECK(error_for("").find(at + ": needs subject") != std::string::npos);
  for (const char* bad : {"a.>.b", "foo*", "a..b", ".a", "a b"}) {
    INFO(bad);
    CHECK(
        error_for(std::string(", subject: \"") + bad + "\"").find(at + ".subject: must be a NATS subject") !=
        std::string::npos);
  }
  for (const char* bad : {"http://127.0.0.1:4222", "nats://", "nats://:4222"}) {
    INFO(bad);
    CHECK(error_for(std::string(", subject: a, url: \"") + bad + "\"")
              .find(at + ".url: must be nats://HOST:PORT") != std::string::npos);
  }
  CHECK(error_for(", subject: a, interval_ms: 100").find(at + ".interval_ms: does not apply") !=
        std::string::npos);
  file.write(
      "upstreams:\n  resources:\n    - uri: bus://x\n      watch: {strategy: {type: webhook, subject: a}}\n");
  CHECK(parse_error({"--config", file.path()}).find(at + ".subject: is for nats_topic only") !=
        std::string::npos);
}

TEST_CASE("sql_polling: a database and a tracking query, polled no faster than the floor", "[config]") {
  auto resource = [](const std::string& strategy) {
    return "upstreams:\n  resources:\n    - uri: db://orders\n      watch: {strategy: {type: sql_polling" +
           strategy + "}}\n";
  };
  temp_file file(
      resource(", conninfo: \"host=127.0.0.1 dbname=app\", query: \"SELECT max(id) FROM orders\", "
               "interval_ms: 5000, timeout_ms: 2000"));
  auto r = parsed({"--config", file.path()}).upstreams.web.resources.at(0);
  CHECK(r.kind == tidings::sources::web::strategy::sql_polling);
  CHECK(r.polled());
  REQUIRE(r.sql);
  CHECK(r.sql->conninfo == "host=127.0.0.1 dbname=app");
  CHECK(r.sql->query == "SELECT max(id) FROM orders");
  CHECK(r.sql->timeout == std::chrono::seconds(2));
  CHECK(r.interval == std::chrono::seconds(5));
  CHECK_FALSE(r.backend);

  const std::string at = "upstreams.resources[0].watch.strategy";
  file.write(resource(", query: \"SELECT 1\""));
  CHECK(parse_error({"--config", file.path()}).find(at + ": needs conninfo") != std::string::npos);
  file.write(resource(", conninfo: \"dbname=app\""));
  CHECK(parse_error({"--config", file.path()}).find(at + ": needs query (a tracking query of one value") !=
        std::string::npos);
  file.write(resource(", conninfo: x, query: y, token: t"));
  CHECK(parse_error({"--config", file.path()}).find(at + ".token: is for webhooks only") !=
        std::string::npos);
  file.write(
      "upstreams:\n  resources:\n    - uri: db://orders\n      backend: {url: \"http://127.0.0.1:9/x\"}\n"
      "      watch: {strategy: {type: poll, query: \"SELECT 1\"}}\n");
  CHECK(parse_error({"--config", file.path()}).find(at + ".query: is for sql_polling only") !=
        std::string::npos);
  file.write(resource(", conninfo: x, query: y, ca_file: /nonexistent.pem"));
  CHECK(parse_error({"--config", file.path()}).find("/nonexistent.pem") != std::string::npos);
}
