#include "broker/config.hpp"

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <thread>

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

std::optional<std::string> set_listen(config& c, const std::string& v) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos) return "must be HOST:PORT";
  auto host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto port = parse_number<std::uint16_t>(v.substr(colon + 1), 0, 65535);
  if (host.empty() || !port) return "must be HOST:PORT with a port from 0 to 65535";
  // Checked again once the whole config is read: without tenants (no auth)
  // anything but loopback would serve every stream to anyone.
  c.listen_host = host == "localhost" ? "127.0.0.1" : host;
  c.listen_port = *port;
  return std::nullopt;
}

const std::map<std::string, setter>& setters() {
  static const std::map<std::string, setter> table = {
      {"listen", set_listen},
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
      {"heartbeat-ms",
       number<std::int64_t>(
           10, 3'600'000, [](config& c, std::int64_t v) { c.sse.heartbeat = std::chrono::milliseconds(v); })},
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
       number<std::size_t>(1, 1'000'000,
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
      {"audit-log",
       [](config& c, const std::string& v) -> std::
                                               optional<std::string> {
                                                 c.audit_log = v;
                                                 return std::nullopt;
                                               }},
      {"verbose",
       [](config& c, const std::string& v) -> std::
                                               optional<std::string> {
                                                 if (v != "true" && v != "false")
                                                   return "must be true or false";
                                                 c.verbose = v == "true";
                                                 return std::nullopt;
                                               }},
  };
  return table;
}

std::optional<std::string> apply(config& c, const std::string& key, const std::string& value,
                                 const std::string& where) {
  auto it = setters().find(key);
  if (it == setters().end()) return where + ": unknown setting '" + key + "'";
  if (auto err = it->second(c, value)) {
    // Flags are named in `where` already; file settings name their key.
    return where.rfind("--", 0) == 0 ? where + " " + *err : where + ": " + key + " " + *err;
  }
  return std::nullopt;
}

std::optional<std::string> apply_file(config& c, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return "cannot read config file " + path + ": " + e.what();
  }
  if (root.IsNull()) return std::nullopt;
  if (!root.IsMap()) return "config file " + path + ": expected a mapping of settings";
  for (const auto& kv : root) {
    auto key = kv.first.as<std::string>();
    if (key == "upstreams") {
      if (auto err = parse_upstreams(kv.second, &c.upstreams)) return "config file " + path + ": " + *err;
      continue;
    }
    if (key == "tenants") {
      if (auto err = parse_tenants(kv.second, &c.tenants)) return "config file " + path + ": " + *err;
      continue;
    }
    if (!kv.second.IsScalar()) {
      std::string err = "config file ";
      err.append(path).append(": ").append(key).append(" must be a single value");
      return err;
    }
    if (auto err = apply(c, key, kv.second.as<std::string>(), "config file " + path)) return err;
  }
  return std::nullopt;
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

std::string usage() {
  return "usage: tidingsd [--config FILE] [--listen HOST:PORT] [--data-dir DIR]\n"
         "                [--durability sync|batch|none] [--retention-events N]\n"
         "                [--retention-age-ms MS] [--heartbeat-ms MS] [--queue-frames N]\n"
         "                [--queue-bytes N] [--ring-events N] [--max-body-bytes N]\n"
         "                [--max-header-bytes N] [--max-header-count N]\n"
         "                [--idle-timeout-ms MS] [--header-timeout-ms MS]\n"
         "                [--max-connections N] [--max-connections-per-address N]\n"
         "                [--io-threads N] [--drain-ms MS]\n"
         "                [--coalesce-us US] [--max-unknown-streams N] [--max-watches N]\n"
         "                [--filter-budget-ms MS] [--filter-max-instructions N]\n"
         "                [--filter-memory-mb MB] [--watch-queue-frames N]\n"
         "                [--source-backoff-ms MS] [--audit-log FILE|-] [--verbose]\n"
         "Upstream sources are configured in the config file's upstreams: section,\n"
         "tenants and their token keys in its tenants: section (docs/security.md).\n";
}

parse_outcome parse_config(const std::vector<std::string>& args) {
  config c;
  // The file goes first whatever its position, so flags always win over it.
  std::vector<std::pair<std::string, std::string>> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--help" || a == "-h") return {std::nullopt, {}};
    if (a.rfind("--", 0) != 0) return {std::nullopt, "unexpected argument '" + a + "'"};
    auto eq = a.find('=');
    auto key = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (key != "config" && !setters().contains(key)) return {std::nullopt, "unknown flag '--" + key + "'"};
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (key == "verbose") {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return {std::nullopt, "--" + key + " needs a value"};
    }
    if (key == "config") {
      if (auto err = apply_file(c, value)) return {std::nullopt, *err};
      c.config_path = value;
      c.file_settings = file_settings(value);
    } else {
      flags.emplace_back(key, value);
    }
  }
  for (auto& [key, value] : flags)
    if (auto err = apply(c, key, value, "--" + key)) return {std::nullopt, *err};
  if (c.tenants.empty() && !is_loopback(c.listen_host))
    return {std::nullopt,
            "refusing to listen on " + c.listen_host +
                ": without tenants (no auth) only loopback is allowed; configure tenants: first"};
  if (c.audit_log.empty()) c.audit_log = c.data_dir + "/audit.ndjson";
  if (c.max_connections_per_address == 0) c.max_connections_per_address = c.tenants.empty() ? SIZE_MAX : 256;
  return {c, {}};
}

std::optional<std::string> reload_tenants(const std::string& path, const config& running,
                                          std::vector<tenant_spec>* tenants,
                                          std::vector<std::string>* restart_needed) {
  if (path.empty()) return "the node was started without --config; there is nothing to reload";
  config fresh;
  if (auto err = apply_file(fresh, path)) return err;
  *tenants = std::move(fresh.tenants);
  // Everything else is read once at start; say which of those changed.
  auto now = file_settings(path);
  for (const auto& [key, text] : now) {
    auto it = running.file_settings.find(key);
    if (it == running.file_settings.end() || it->second != text) restart_needed->push_back(key);
  }
  for (const auto& [key, text] : running.file_settings)
    if (!now.contains(key)) restart_needed->push_back(key);
  return std::nullopt;
}

}  // namespace tidings::broker
