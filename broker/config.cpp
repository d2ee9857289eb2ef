#include "broker/config.hpp"

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <thread>

#include "broker/site_guard.hpp"

namespace tidings::broker {
namespace {

using setter = std::function<std::optional<std::string>(config&, const std::string&)>;

template <class T>
std::optional<T> parse_number(const std::string& text, T min, T max) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < min || v > max) return std::nullopt;
  return v;
}

template <class T>
setter number(T min, T max, std::function<void(config&, T)> apply) {
  return [=](config& c, const std::string& v) -> std::optional<std::string> {
    auto n = parse_number<T>(v, min, max);
    if (!n) return "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    apply(c, *n);
    return std::nullopt;
  };
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// HOST:PORT (IPv6 in brackets) for a port this node listens on; port 0
// picks a free one (the tests do).
std::optional<std::string> parse_listen(const std::string& v, config::address* out) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos) return "must be HOST:PORT";
  auto host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto port = parse_number<std::uint16_t>(v.substr(colon + 1), 0, 65535);
  if (host.empty() || !port) return "must be HOST:PORT with a port from 0 to 65535";
  out->host = host == "localhost" ? "127.0.0.1" : host;
  out->port = *port;
  return std::nullopt;
}

std::optional<std::string> set_listen(config& c, const std::string& v) {
  // Checked again once the whole config is read: without tenants (no auth)
  // anything but loopback would serve every stream to anyone.
  config::address a;
  if (auto err = parse_listen(v, &a)) return err;
  c.listen_host = a.host;
  c.listen_port = a.port;
  return std::nullopt;
}

// host:port with a port from 1 to 65535 (0 too when `any_port`: listen on
// an ephemeral port, as the tests do).
std::optional<std::string> check_address(const std::string& v, bool any_port) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "must be HOST:PORT";
  auto port = parse_number<std::uint16_t>(v.substr(colon + 1), any_port ? 0 : 1, 65535);
  if (!port)
    return any_port ? "must be HOST:PORT with a port from 0 to 65535"
                    : "must be HOST:PORT with a port from 1 to 65535";
  return std::nullopt;
}

std::optional<std::string> set_tls_listen(config& c, const std::string& v) {
  config::address a;
  if (auto err = parse_listen(v, &a)) return err;
  c.tls_listen = a;
  return std::nullopt;
}

setter tls_file(std::string config::*field) {
  return [field](config& c, const std::string& v) -> std::optional<std::string> {
    if (v.empty()) return "must name a PEM file";
    c.*field = v;
    return std::nullopt;
  };
}

// The HTTPS listener's settings go together; its keys are loaded here, once.
std::optional<std::string> make_tls_listener(config& c) {
  const bool files = !c.tls_cert.empty() || !c.tls_key.empty();
  if (!c.tls_listen) {
    if (files)
      return "tls-listen: tls-cert and tls-key serve an HTTPS listener; give tls-listen HOST:PORT too";
    return std::nullopt;
  }
  if (c.tls_cert.empty() || c.tls_key.empty())
    return "tls-listen: an HTTPS listener needs tls-cert FILE and tls-key FILE (PEM)";
  auto keys = std::make_shared<net::tls_server_keys>(c.tls_cert, c.tls_key);
  if (auto err = keys->load()) return *err;
  c.tls_keys = std::move(keys);
  return std::nullopt;
}

// Cluster TLS's three files go together; they are loaded here, once.
std::optional<std::string> make_cluster_tls(config& c) {
  const int given = !c.cluster_ca.empty() + !c.cluster_cert.empty() + !c.cluster_key.empty();
  if (given == 0) return std::nullopt;
  if (!c.cluster_listen)
    return "cluster-tls: cluster-ca, cluster-cert and cluster-key need cluster-listen too";
  if (given < 3)
    return "cluster-tls: mutual TLS between nodes needs all of cluster-ca, cluster-cert and cluster-key "
           "(PEM)";
  std::string why;
  c.cluster_tls = cluster::node_certificate::load(c.cluster_ca, c.cluster_cert, c.cluster_key, &why);
  if (!c.cluster_tls) return "cluster-tls: " + why;
  return std::nullopt;
}

std::optional<std::string> set_cluster_listen(config& c, const std::string& v) {
  if (auto err = check_address(v, true)) return err;
  c.cluster_listen = v;
  return std::nullopt;
}

// Comma-separated, blanks around items ignored, empty items skipped.
std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= v.size()) {
    auto comma = v.find(',', start);
    auto item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// Origins as browsers send them: scheme://host[:port], no path, lowercased.
std::optional<std::string> set_allowed_origins(config& c, const std::string& v) {
  std::vector<std::string> origins;
  for (const auto& listed : split_list(v)) {
    auto item = ascii_lower(listed);
    auto scheme_end = item.find("://");
    bool ok = (item.starts_with("http://") || item.starts_with("https://")) && item.size() > scheme_end + 3 &&
              item.find('/', scheme_end + 3) == std::string::npos;
    if (!ok)
      return "'" + item + "' is not an origin such as http://localhost:3000 (scheme://host[:port], no path)";
    origins.push_back(item);
  }
  c.allowed_origins = std::move(origins);
  return std::nullopt;
}

std::optional<std::string> set_allowed_hosts(config& c, const std::string& v) {
  std::vector<std::string> hosts;
  for (const auto& listed : split_list(v)) {
    auto item = ascii_lower(listed);
    if (item.find_first_of(":/@ ") != std::string::npos)
      return "'" + item + "' is not a host name (no port, scheme or path)";
    hosts.push_back(item);
  }
  c.allowed_hosts = std::move(hosts);
  return std::nullopt;
}

std::optional<std::string> set_etcd(config& c, const std::string& v) {
  std::vector<std::string> endpoints;
  std::size_t https = 0;
  for (auto& item : split_list(v)) {
    const bool tls = item.rfind("https://", 0) == 0;
    https += tls ? 1 : 0;
    if (!tls && item.rfind("http://", 0) != 0)
      return "'" + item + "' must be http://HOST:PORT or https://HOST:PORT";
    const std::string scheme = tls ? "https://" : "http://";
    auto host_port = item.substr(scheme.size());
    while (!host_port.empty() && host_port.back() == '/') host_port.pop_back();
    if (auto err = check_address(host_port, false)) return "'" + item + "' " + *err;
    endpoints.push_back(scheme + host_port);
  }
  if (endpoints.empty()) return "must list at least one etcd endpoint, http[s]://HOST:PORT[,...]";
  // After a failover the client would carry the cluster's record (and its
  // certificate) in plaintext.
  if (https != 0 && https != endpoints.size())
    return "mixes http:// and https:// members; give every member with the same scheme";
  c.etcd_endpoints = std::move(endpoints);
  return std::nullopt;
}

std::optional<std::string> set_etcd_prefix(config& c, const std::string& v) {
  if (v.empty() || v.front() != '/') return "must start with '/', got '" + v + "'";
  for (unsigned char ch : v)
    if (ch <= ' ' || ch == 0x7f) return "must not hold blanks or control characters";
  c.etcd_prefix = v.back() == '/' ? v : v + "/";
  return std::nullopt;
}

// Trailing blanks and newlines are not part of a secret (echo adds one).
std::string trimmed_secret(std::string secret) {
  while (!secret.empty() &&
         (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' ' || secret.back() == '\t'))
    secret.pop_back();
  return secret;
}

std::optional<std::string> set_cluster_secret_file(config& c, const std::string& v) {
  std::ifstream in(v, std::ios::binary);
  if (!in) return "cannot read '" + v + "'";
  auto secret = trimmed_secret({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
  if (secret.size() < cluster_secret_min_bytes)
    return "'" + v + "' holds " + std::to_string(secret.size()) +
           " bytes; the cluster secret needs at least " + std::to_string(cluster_secret_min_bytes) +
           " (e.g. openssl rand -hex 32 > " + v + ")";
  c.cluster_secret = std::move(secret);
  return std::nullopt;
}

// In a config file, usually "${env.NAME}"; as a flag it is refused (ps
// would show it).
std::optional<std::string> set_cluster_secret(config& c, const std::string& v) {
  auto secret = trimmed_secret(v);
  if (secret.size() < cluster_secret_min_bytes)
    return "holds " + std::to_string(secret.size()) + " bytes; the cluster secret needs at least " +
           std::to_string(cluster_secret_min_bytes) + " (e.g. the output of openssl rand -hex 32)";
  c.cluster_secret = std::move(secret);
  return std::nullopt;
}

std::optional<std::string> set_audit_log(config& c, const std::string& v) {
  c.audit_log = v;
  return std::nullopt;
}

std::optional<std::string> set_log_level(config& c, const std::string& v) {
  return logging::parse_level_spec(v, &c.log_levels);
}

std::optional<std::string> set_verbose(config& c, const std::string& v) {
  if (v != "true" && v != "false") return "must be true or false";
  c.verbose = v == "true";
  return std::nullopt;
}

// One of the TLS files of https:// etcd members; checked together at the end.
setter etcd_tls_file(std::string net::tls_settings::*field) {
  return [field](config& c, const std::string& v) -> std::optional<std::string> {
    if (v.empty()) return "must name a PEM file";
    c.etcd_tls.*field = v;
    return std::nullopt;
  };
}

// The context of https:// etcd members, made once every flag is read.
std::optional<std::string> make_etcd_tls(config& c) {
  if (!c.etcd_tls.any()) return std::nullopt;
  // set_etcd refuses a mix of schemes: the first member's is every member's.
  const bool https = !c.etcd_endpoints.empty() && c.etcd_endpoints.front().rfind("https://", 0) == 0;
  if (!https)
    return "etcd-ca-file, etcd-client-cert and etcd-client-key apply to https:// etcd endpoints only";
  std::string error;
  c.etcd_tls_context = net::make_tls_client_context(
      c.etcd_tls, &error, {"etcd-ca-file", "etcd-client-cert", "etcd-client-key", "insecure_skip_verify"});
  if (!c.etcd_tls_context) return error;
  return std::nullopt;
}

const std::map<std::string, setter>& setters() {
  static const std::map<std::string, setter> table = {
      {"listen", set_listen},
      {"tls-listen", set_tls_listen},
      {"tls-cert", tls_file(&config::tls_cert)},
      {"tls-key", tls_file(&config::tls_key)},
      {"cluster-ca", tls_file(&config::cluster_ca)},
      {"cluster-cert", tls_file(&config::cluster_cert)},
      {"cluster-key", tls_file(&config::cluster_key)},
      {"cluster-listen", set_cluster_listen},
      {"cluster-advertise",
       [](config& c, const std::string& v) -> std::optional<std::string> {
         if (auto err = check_address(v, false)) return err;
         c.cluster_advertise = v;
         return std::nullopt;
       }},
      {"etcd", set_etcd},
      {"allowed-origins", set_allowed_origins},
      {"allowed-hosts", set_allowed_hosts},
      {"etcd-prefix", set_etcd_prefix},
      {"etcd-ca-file", etcd_tls_file(&net::tls_settings::ca_file)},
      {"etcd-client-cert", etcd_tls_file(&net::tls_settings::client_cert)},
      {"etcd-client-key", etcd_tls_file(&net::tls_settings::client_key)},
      {"cluster-secret-file", set_cluster_secret_file},
      {"cluster-secret", set_cluster_secret},
      {"member-lease-seconds",
       number<std::int64_t>(1, 300, [](config& c, std::int64_t v) { c.member_lease_seconds = v; })},
      {"advertise",
       [](config& c, const std::string& v) -> std::optional<std::string> {
         if (auto err = check_address(v, false)) return err;
         c.advertise = v;
         return std::nullopt;
       }},
      {"data-dir",
       [](config& c, const std::string& v) -> std::optional<std::string> {
         if (v.empty()) return "must not be empty";
         c.data_dir = v;
         return std::nullopt;
       }},
      {"durability",
       [](config& c, const std::string& v) -> std::optional<std::string> {
         auto d = persistence::parse_durability(v);
         if (!d) return "must be sync, batch or none";
         c.durability = *d;
         return std::nullopt;
       }},
      {"retention-events",
       number<std::uint64_t>(0, 1'000'000'000,
                             [](config& c, std::uint64_t v) { c.retention.max_events = v; })},
      {"retention-age-ms",
       number<std::int64_t>(0, 100LL * 365 * 86'400'000,
                            [](config& c, std::int64_t v) { c.retention.max_age_ms = v; })},
      {"idempotency-hours",
       number<std::int64_t>(1, 8760,
                            [](config& c, std::int64_t v) { c.idempotency_ttl = std::chrono::hours(v); })},
      {"heartbeat-ms",
       number<std::int64_t>(
           10, 3'600'000, [](config& c, std::int64_t v) { c.sse.heartbeat = std::chrono::milliseconds(v); })},
      {"stream-idle-ms",
       number<std::int64_t>(0, 86'400'000,
                            [](config& c, std::int64_t v) { c.stream_idle = std::chrono::milliseconds(v); })},
      {"storage-reserve-mb",
       number<std::uint64_t>(1, 1'000'000, [](config& c, std::uint64_t v) { c.storage_reserve_mb = v; })},
      {"close-deadline-ms", number<std::int64_t>(10, 600'000,
                                                 [](config& c, std::int64_t v) {
                                                   c.sse.close_deadline = std::chrono::milliseconds(v);
                                                 })},
      {"queue-frames",
       number<std::size_t>(2, 1'000'000, [](config& c, std::size_t v) { c.sse.queue_frames = v; })},
      {"queue-bytes",
       number<std::size_t>(1024, 1ULL << 32, [](config& c, std::size_t v) { c.sse.queue_bytes = v; })},
      {"coalesce-us",
       number<std::int64_t>(
           0, 100'000, [](config& c, std::int64_t v) { c.sse.coalesce = std::chrono::microseconds(v); })},
      {"max-unknown-streams",
       number<std::size_t>(0, 10'000'000, [](config& c, std::size_t v) { c.max_unknown_streams = v; })},
      {"ring-events", number<std::size_t>(0, 1'000'000, [](config& c, std::size_t v) { c.ring_events = v; })},
      {"max-body-bytes",
       number<std::size_t>(64, 64ULL << 20, [](config& c, std::size_t v) { c.max_body_bytes = v; })},
      {"max-header-bytes",
       number<std::size_t>(1024, 1 << 20, [](config& c, std::size_t v) { c.max_header_bytes = v; })},
      {"max-header-count",
       number<std::size_t>(1, 10'000, [](config& c, std::size_t v) { c.max_header_count = v; })},
      {"idle-timeout-ms",
       number<std::int64_t>(
           100, 3'600'000, [](config& c, std::int64_t v) { c.idle_timeout = std::chrono::milliseconds(v); })},
      {"header-timeout-ms",
       number<std::int64_t>(
           100, 600'000, [](config& c, std::int64_t v) { c.header_timeout = std::chrono::milliseconds(v); })},
      {"max-connections",
       number<std::size_t>(1, 1'000'000, [](config& c, std::size_t v) { c.max_connections = v; })},
      {"max-connections-per-address",
       // 0: the default (256 with tenants, none without), decided once tenants are known.
       number<std::size_t>(0, 1'000'000,
                           [](config& c, std::size_t v) { c.max_connections_per_address = v; })},
      {"io-threads", number<std::size_t>(1, 64, [](config& c, std::size_t v) { c.io_threads = v; })},
      {"drain-ms",
       number<std::int64_t>(0, 600'000,
                            [](config& c, std::int64_t v) { c.drain = std::chrono::milliseconds(v); })},
      {"max-watches", number<std::size_t>(
                          0, 10'000, [](config& c, std::size_t v) { c.watches.max_watches_per_tenant = v; })},
      {"filter-budget-ms", number<std::int64_t>(1, 60'000,
                                                [](config& c, std::int64_t v) {
                                                  c.watches.filter.budget = std::chrono::milliseconds(v);
                                                })},
      {"filter-max-instructions",
       number<std::uint64_t>(1000, 100'000'000'000ULL,
                             [](config& c, std::uint64_t v) { c.watches.filter.max_instructions = v; })},
      {"filter-memory-mb",
       number<std::size_t>(1, 4096,
                           [](config& c, std::size_t v) { c.watches.filter.max_memory_bytes = v << 20; })},
      {"source-backoff-ms",
       number<std::int64_t>(
           1, 60'000, [](config& c, std::int64_t v) { c.source_backoff = std::chrono::milliseconds(v); })},
      {"watch-queue-frames",
       number<std::size_t>(1, 1'000'000, [](config& c, std::size_t v) { c.watches.max_queued_frames = v; })},
      {"audit-log", set_audit_log},
      {"log-level", set_log_level},
      {"verbose", set_verbose},
      {"min-insync", number<std::size_t>(1, 7, [](config& c, std::size_t v) { c.min_insync = v; })},
      {"replica-lag-ms",
       number<std::int64_t>(100, 600'000,
                            [](config& c, std::int64_t v) { c.replica_lag = std::chrono::milliseconds(v); })},
      {"replication-factor",
       number<std::size_t>(1, 7, [](config& c, std::size_t v) { c.replication_factor = v; })},
      {"write-quorum",
       [](config& c,
          const std::string& v) -> std::
                                    optional<std::string> {
                                      if (v == "all") {
                                        c.write_quorum.reset();
                                        return std::nullopt;
                                      }
                                      std::size_t n = 0;
                                      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                                      if (ec != std::errc() || p != v.data() + v.size() || n > 6)
                                        return "must be all or a number of followers from 0 to 6, got '" + v +
                                               "'";
                                      c.write_quorum = n;
                                      return std::nullopt;
                                    }},
      {"cluster-private-network",
       [](config& c, const std::string& v) -> std::
                                               optional<std::string> {
                                                 if (v != "true" && v != "false")
                                                   return "must be true or false";
                                                 c.cluster_private_network = v == "true";
                                                 return std::nullopt;
                                               }},
  };
  return table;
}

// Settings that are gone, with what to use instead.
std::string unknown_setting(const std::string& key) {
  if (key == "seeds")
    return "no longer exists: members find each other in etcd (--etcd, or etcd: in the file, "
           "http://HOST:PORT[,...]; docs/cluster.md)";
  return "unknown setting";
}

// `where` is "--flag" for a flag or "config file F" for a file setting.
std::optional<std::string> apply(config& c, const std::string& key, const std::string& value,
                                 const std::string& where) {
  auto it = setters().find(key);
  if (it == setters().end()) return where + ": " + key + ": " + unknown_setting(key);
  if (auto err = it->second(c, value)) {
    // Flags are named in `where` already; file settings name their key.
    return where.rfind("--", 0) == 0 ? where + " " + *err : where + ": " + key + ": " + *err;
  }
  return std::nullopt;
}

// A config file's mapping of flat settings: `tls: {cert: F}` is tls-cert.
struct setting_mapping {
  std::string prefix;
  std::set<std::string> names;
  std::string shape;  // for messages
};

const std::map<std::string, setting_mapping>& setting_mappings() {
  static const std::map<std::string, setting_mapping> table = {
      {"tls", {"tls-", {"listen", "cert", "key"}, "tls: {listen: HOST:PORT, cert: FILE, key: FILE}"}},
      {"cluster-tls", {"cluster-", {"ca", "cert", "key"}, "cluster-tls: {ca: FILE, cert: FILE, key: FILE}"}},
  };
  return table;
}

const setting_mapping* mapping_of(const std::string& key) {
  auto it = setting_mappings().find(key);
  return it == setting_mappings().end() ? nullptr : &it->second;
}

std::optional<std::string> apply_file(config& c, const std::string& path) {
  const std::string where = "config file " + path;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return "cannot read config file " + path;
  } catch (const YAML::Exception& e) {
    // e.what() names the line and column of the syntax error.
    return where + ": not valid YAML: " + e.what();
  }
  if (root.IsNull()) return std::nullopt;
  if (!root.IsMap()) return where + ": expected a mapping of settings (key: value lines)";
  try {
    std::set<std::string> seen;
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) return where + ": a setting's name must be a single value";
      auto key = kv.first.as<std::string>();
      // "config file F: KEY: what is wrong".
      auto at_key = [&](std::string_view what) {
        std::string out = where;
        out.append(": ").append(key).append(": ").append(what);
        return out;
      };
      if (!seen.insert(key).second) return at_key("is given twice");
      if (key == "upstreams") {
        if (auto err = parse_upstreams(kv.second, &c.upstreams)) return where + ": " + *err;
        continue;
      }
      if (key == "tenants") {
        if (auto err = parse_tenants(kv.second, &c.tenants)) return where + ": " + *err;
        continue;
      }
      // tls: {listen, cert, key} and cluster-tls: {ca, cert, key}: mappings
      // of flat settings (tls-listen, ..., cluster-ca, ...).
      if (const auto* group = mapping_of(key)) {
        if (!kv.second.IsMap()) return at_key("must be a mapping: " + group->shape);
        std::set<std::string> given;
        for (const auto& item : kv.second) {
          auto name = item.first.as<std::string>();
          if (!group->names.contains(name)) return at_key(name + ": unknown setting (" + group->shape + ")");
          if (!given.insert(name).second) return at_key(name + ": is given twice");
          if (!item.second.IsScalar()) return at_key(name + ": must be a single value");
          std::string value;
          if (auto err = interpolate_env(item.second.as<std::string>(), &value))
            return at_key(name + ": " + *err);
          if (auto err = setters().at(group->prefix + name)(c, value)) return at_key(name + ": " + *err);
        }
        continue;
      }
      if (!setters().contains(key)) return at_key(unknown_setting(key));
      if (!kv.second.IsScalar()) return at_key("must be a single value");
      std::string value;
      if (auto err = interpolate_env(kv.second.as<std::string>(), &value)) return at_key(*err);
      if (auto err = apply(c, key, value, where)) return err;
    }
  } catch (const YAML::Exception& e) {
    return where + ": " + e.what();
  }
  for (const auto& [key, group] : setting_mappings())
    if (root[key])
      for (const auto& name : group.names)
        if (root[group.prefix + name]) {
          std::string out = where;
          out.append(": ").append(group.prefix).append(name).append(": is given in ").append(key);
          return out.append(": too; keep one (").append(group.shape).append(")");
        }
  return std::nullopt;
}

std::string plural(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

std::map<std::string, std::string> file_settings(const std::string& path) {
  std::map<std::string, std::string> out;
  try {
    auto root = YAML::LoadFile(path);
    if (!root.IsMap()) return out;
    for (const auto& kv : root) {
      auto key = kv.first.as<std::string>();
      if (key != "tenants") out[key] = YAML::Dump(kv.second);
    }
  } catch (const std::exception&) {
    // Unreadable: reported by the parse that goes with it.
  }
  return out;
}

std::size_t default_io_threads() {
  return std::max<std::size_t>(1, std::thread::hardware_concurrency() / 2);
}

bool listens_on_loopback_only(const config& c) {
  return names_loopback(c.listen_host) && (!c.tls_listen || names_loopback(c.tls_listen->host));
}

std::string host_port(const std::string& host, std::uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::vector<std::string> setting_names() {
  std::vector<std::string> out;
  for (const auto& [key, set] : setters()) out.push_back(key);
  return out;
}

logging::level_spec effective_log_levels(const config& c) {
  auto spec = c.log_levels;
  if (c.verbose) spec.base = logging::level::debug;
  return spec;
}

std::string summary(const config& c) {
  const auto& u = c.upstreams;
  std::size_t upstreams =
      u.mcp.size() + u.kube.size() + u.postgres.size() + (u.files ? 1 : 0) + u.web.resources.size();
  return plural(c.tenants.size(), "tenant") + ", " + plural(upstreams, "upstream") + ", listen " +
         host_port(c.listen_host, c.listen_port) + ", data-dir " + c.data_dir + ", log-level " +
         logging::to_string(effective_log_levels(c));
}

std::string usage() {
  return "usage: tidingsd [--config FILE | --check-config FILE] [--listen HOST:PORT]\n"
         "                [--data-dir DIR] [--durability sync|batch|none] [--retention-events N]\n"
         "                [--storage-reserve-mb MB]\n"
         "                [--retention-age-ms MS] [--idempotency-hours H]\n"
         "                [--heartbeat-ms MS] [--queue-frames N]\n"
         "                [--queue-bytes N] [--close-deadline-ms MS] [--ring-events N]\n"
         "                [--max-body-bytes N]\n"
         "                [--max-header-bytes N] [--max-header-count N]\n"
         "                [--idle-timeout-ms MS] [--header-timeout-ms MS]\n"
         "                [--max-connections N] [--max-connections-per-address N]\n"
         "                [--allowed-origins ORIGIN,...] [--allowed-hosts NAME,...]\n"
         "                [--io-threads N] [--drain-ms MS]\n"
         "                [--coalesce-us US] [--max-unknown-streams N] [--max-watches N]\n"
         "                [--stream-idle-ms MS]\n"
         "                [--filter-budget-ms MS] [--filter-max-instructions N]\n"
         "                [--filter-memory-mb MB] [--watch-queue-frames N]\n"
         "                [--source-backoff-ms MS] [--audit-log FILE|-]\n"
         "                [--log-level LEVEL[,SUBSYSTEM=LEVEL...]] [--verbose]\n"
         "                [--cluster-listen HOST:PORT] [--etcd http[s]://HOST:PORT,...]\n"
         "                [--etcd-ca-file FILE] [--etcd-client-cert FILE --etcd-client-key FILE]\n"
         "                [--etcd-prefix /PREFIX/] [--member-lease-seconds S]\n"
         "                [--cluster-advertise HOST:PORT] [--advertise HOST:PORT]\n"
         "                [--cluster-secret-file FILE]\n"
         "                [--cluster-private-network true|false]\n"
         "                [--cluster-ca FILE --cluster-cert FILE --cluster-key FILE]\n"
         "                [--replication-factor N] [--write-quorum all|N] [--min-insync N]\n"
         "                [--replica-lag-ms MS]\n"
         "--check-config FILE validates FILE (with any other flags) and exits: 0 when\n"
         "it is valid, 2 with the offending setting named on stderr when not.\n"
         "Upstream sources are configured in the config file's upstreams: section,\n"
         "tenants and their token keys in its tenants: section (docs/security.md);\n"
         "config/tidings.example.yaml shows every setting.\n";
}

std::size_t min_insync(const config& c) {
  if (c.min_insync) return *c.min_insync;
  return c.replication_factor >= 2 ? 2 : 1;
}

parse_outcome parse_config(const std::vector<std::string>& args) {
  config c;
  auto usage_error = [](std::string error) {
    parse_outcome out;
    out.error = std::move(error);
    out.bad_command_line = true;
    return out;
  };
  // The file goes first whatever its position, so flags always win over it.
  std::vector<std::pair<std::string, std::string>> flags;
  std::string file_flag;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--help" || a == "-h") return {std::nullopt, {}, false};
    if (a.rfind("--", 0) != 0) return usage_error("unexpected argument '" + a + "'");
    auto eq = a.find('=');
    auto key = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool is_file = key == "config" || key == "check-config";
    if (!is_file && !setters().contains(key)) {
      if (key == "seeds") return usage_error("--seeds " + unknown_setting(key));
      return usage_error("unknown flag '--" + key + "'");
    }
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (key == "verbose") {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return usage_error("--" + key + " needs a value");
    }
    if (is_file) {
      if (!file_flag.empty()) {
        std::string err = "--" + key;
        err.append(": a config file is given already (--").append(file_flag).append(")");
        return usage_error(err);
      }
      file_flag = key;
      c.check_only = key == "check-config";
      if (auto err = apply_file(c, value)) return {std::nullopt, *err, false};
      c.config_path = value;
      c.file_settings = file_settings(value);
    } else {
      flags.emplace_back(key, value);
    }
  }
  for (auto& [key, value] : flags) {
    if (key == "cluster-secret")
      return usage_error(
          "--cluster-secret: a secret on the command line is visible to every local user (ps); give "
          "--cluster-secret-file FILE, or cluster-secret: \"${env.NAME}\" in the config file");
    if (auto err = apply(c, key, value, "--" + key)) return usage_error(*err);
    c.flag_settings.insert(key);
  }
  if (c.tenants.empty() && !is_loopback(c.listen_host))
    return {std::nullopt,
            "listen: refusing to listen on " + c.listen_host +
                ": without tenants (no auth) only loopback is allowed; configure tenants: first",
            false};
  // Encryption is not authentication: the same rule for the HTTPS port.
  if (c.tls_listen && c.tenants.empty() && !is_loopback(c.tls_listen->host))
    return {std::nullopt,
            "tls-listen: refusing to listen on " + host_port(c.tls_listen->host, c.tls_listen->port) +
                ": without tenants (no auth) only loopback is allowed; configure tenants: first",
            false};
  if (auto err = make_tls_listener(c)) return {std::nullopt, *err, false};
  if (auto err = make_cluster_tls(c)) return {std::nullopt, *err, false};
  // Members prove the cluster secret, but the node-to-node port's messages are
  // neither encrypted nor authenticated one by one (docs/cluster.md): beyond
  // loopback it needs a network only the nodes reach, said out loud.
  if (c.cluster_listen && !is_loopback(c.cluster_listen->substr(0, c.cluster_listen->rfind(':')))) {
    if (c.tenants.empty())
      return {std::nullopt,
              "cluster-listen: refusing to listen on " + *c.cluster_listen +
                  ": without tenants (no auth) only loopback is allowed; configure tenants: first",
              false};
    if (!c.cluster_private_network && !c.cluster_tls)
      return {std::nullopt,
              "cluster-private-network: cluster-listen " + *c.cluster_listen +
                  " is not loopback and the cluster port's traffic is neither encrypted nor authenticated "
                  "per message; set cluster-private-network: "
                  "true once only the nodes can reach it, or give the nodes certificates of a cluster CA "
                  "(cluster-tls: {ca, cert, key}; docs/cluster.md)",
              false};
  }
  if (c.write_quorum && *c.write_quorum + 1 > c.replication_factor)
    return {std::nullopt,
            "write-quorum: " + std::to_string(*c.write_quorum) + " followers, but replication-factor " +
                std::to_string(c.replication_factor) + " keeps only " +
                std::to_string(c.replication_factor - 1) +
                " (write-quorum counts followers, the owner aside)",
            false};
  auto wildcard = [](const std::string& host_port) {
    auto host = host_port.substr(0, host_port.rfind(':'));
    return host == "0.0.0.0" || host == "::" || host == "[::]";
  };
  if (c.cluster_listen && wildcard(*c.cluster_listen) && c.cluster_advertise.empty())
    return {std::nullopt,
            "cluster-advertise: cluster-listen " + *c.cluster_listen +
                " is a wildcard address; set cluster-advertise to the HOST:PORT other nodes dial",
            false};
  if (c.cluster_listen && wildcard(c.listen_host + ":") && c.advertise.empty())
    return {
        std::nullopt,
        "advertise: listen " + c.listen_host +
            " is a wildcard address; in a cluster set advertise to the HOST:PORT clients reach this node at",
        false};
  if (c.min_insync && *c.min_insync > c.replication_factor)
    return {std::nullopt,
            "min-insync: " + std::to_string(*c.min_insync) + " copies, but replication-factor " +
                std::to_string(c.replication_factor) + " keeps only " + std::to_string(c.replication_factor),
            false};
  if (c.cluster_listen && c.etcd_endpoints.empty())
    return {std::nullopt,
            "etcd: a cluster needs etcd, where its members and the leaders of its streams are agreed; give "
            "--etcd http://HOST:PORT[,...] (docs/cluster.md)",
            false};
  if (c.cluster_listen && c.cluster_secret.empty())
    return {std::nullopt,
            "cluster-secret: a cluster needs a secret every member holds, at least " +
                std::to_string(cluster_secret_min_bytes) +
                " bytes (openssl rand -hex 32 > FILE); give --cluster-secret-file FILE, or cluster-secret: "
                "\"${env.NAME}\" in the config file (docs/cluster.md)",
            false};
  if (!c.cluster_listen && (!c.etcd_endpoints.empty() || !c.cluster_advertise.empty()))
    return {std::nullopt, "etcd: a cluster needs cluster-listen too", false};
  if (auto err = make_etcd_tls(c)) return {std::nullopt, *err, false};
  if (!c.cluster_listen && !c.cluster_secret.empty())
    return {std::nullopt, "cluster-secret: a cluster secret needs cluster-listen too", false};
  if (c.audit_log.empty()) c.audit_log = c.data_dir + "/audit.ndjson";
  if (c.max_connections_per_address == 0) c.max_connections_per_address = c.tenants.empty() ? SIZE_MAX : 256;
  return {c, {}, false};
}

std::optional<std::string> plan_reload(const std::string& path, const config& running, reload_plan* plan) {
  if (path.empty()) return "the node was started without --config; there is nothing to reload";
  config fresh;
  if (auto err = apply_file(fresh, path)) return err;
  reload_plan out;
  out.tenants = std::move(fresh.tenants);
  // Flags are not given again: what they set at start still wins.
  if (running.flag_settings.contains("log-level")) fresh.log_levels = running.log_levels;
  if (running.flag_settings.contains("verbose")) fresh.verbose = running.verbose;
  out.log_levels = effective_log_levels(fresh);
  // Everything else is read once at start; say which of those changed.
  auto now = file_settings(path);
  auto differs = [&](const std::string& key) {
    auto was = running.file_settings.find(key);
    auto is = now.find(key);
    if (was == running.file_settings.end() || is == now.end())
      return was != running.file_settings.end() || is != now.end();
    return was->second != is->second;
  };
  // Upstreams are compared per connector (applied live), except
  // allowed_origins, which the front door reads at start.
  bool origins_changed = running.upstreams.web.allowed_origins != fresh.upstreams.web.allowed_origins;
  if (origins_changed) fresh.upstreams.web = running.upstreams.web;
  std::set<std::string> keys;
  for (const auto& [key, text] : now) keys.insert(key);
  for (const auto& [key, text] : running.file_settings) keys.insert(key);
  for (const auto& key : keys) {
    if (key == "log-level" || key == "verbose") continue;  // applied live
    if (key == "upstreams" ? origins_changed : differs(key)) out.restart_needed.push_back(key);
  }
  out.upstream_changes = diff_upstreams(running.upstreams, fresh.upstreams);
  const auto& d = out.upstream_changes;
  auto web_touched = [&d](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), "resources") != names.end();
  };
  if (!origins_changed && !web_touched(d.added) && !web_touched(d.removed) && !web_touched(d.changed)) {
    std::vector<sources::web::webhook_tokens> tokens;
    for (const auto& r : fresh.upstreams.web.resources)
      if (r.kind == sources::web::strategy::webhook)
        tokens.push_back({r.uri, r.token, r.previous_tokens, r.signature});
    out.webhook_tokens = std::move(tokens);
  }
  out.upstreams = std::move(fresh.upstreams);
  // Set by the node, not read from the file: a remade connector derives
  // the same tokens.
  out.upstreams.web.token_key = running.upstreams.web.token_key;
  *plan = std::move(out);
  return std::nullopt;
}

}  // namespace tidings::broker
