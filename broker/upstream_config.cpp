#include "broker/upstream_config.hpp"

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "broker/kubeconfig.hpp"
#include "broker/yaml_reader.hpp"
#include "logging/log.hpp"
#include "net/http_client.hpp"
#include "net/tls_context.hpp"
#include "net/tls_pem.hpp"
#include "sources/file/file_connector.hpp"
#include "sources/kube/kube_connector.hpp"
#include "sources/mcp/mcp_connector.hpp"
#include "sources/postgres/postgres_connector.hpp"
#include "sources/web/web_connector.hpp"

namespace tidings::broker {
namespace {

using YAML::Node;

// The TLS settings of an upstream reached over HTTP (issue 24), beside its
// url: the context is made here, so a file that cannot be used stops the
// node at start (and --check-config) instead of failing every request.
bool read_tls(yaml_reader& r, const Node& n, const std::string& path, net::tls_settings* out) {
  if (n["ca_file"] && !r.text(n["ca_file"], path + ".ca_file", &out->ca_file)) return false;
  if (n["client_cert"] && !r.text(n["client_cert"], path + ".client_cert", &out->client_cert)) return false;
  if (n["client_key"] && !r.text(n["client_key"], path + ".client_key", &out->client_key)) return false;
  if (n["insecure_skip_verify"] &&
      !r.flag(n["insecure_skip_verify"], path + ".insecure_skip_verify", &out->insecure_skip_verify))
    return false;
  return true;
}

// TLS settings of a client that reads the files itself when it connects
// (libpq for postgres: and sql_polling, libnats for nats_topic): a context
// is made from them here only so that a bad file stops the start, naming
// the setting.
bool read_checked_tls(yaml_reader& r, const Node& n, const std::string& path, net::tls_settings* out) {
  if (!read_tls(r, n, path, out)) return false;
  if (std::string error; out->any() && !net::make_tls_client_context(*out, &error))
    return r.fail(path, error);
  return true;
}

bool has_tls_keys(const Node& n) {
  return n["ca_file"] || n["client_cert"] || n["client_key"] || n["insecure_skip_verify"];
}

std::string tls_keys_misplaced(const std::string& url_key) {
  return "ca_file, client_cert, client_key and insecure_skip_verify apply to an https:// " + url_key +
         " only";
}

// The context of an upstream that has TLS settings: only for an https://
// url (url_key names its setting: "url", "server").
bool make_context(yaml_reader& r, const std::string& path, const std::string& url_key, const std::string& url,
                  const net::tls_settings& settings, const net::tls_pem& pem,
                  std::shared_ptr<net::tls_context>* context) {
  net::http_url parsed;
  std::string error;
  if (!net::parse_http_url(url, &parsed, &error) || !parsed.tls)
    return r.fail(path, tls_keys_misplaced(url_key));
  *context = net::make_tls_client_context(settings, pem, &error);
  if (!*context) return r.fail(path, error);
  return true;
}

bool parse_tls(yaml_reader& r, const Node& n, const std::string& path, const std::string& url_key,
               const std::string& url, net::tls_settings* out, std::shared_ptr<net::tls_context>* context) {
  if (!read_tls(r, n, path, out)) return false;
  // None: https:// uses the shared context of the system store.
  if (!has_tls_keys(n)) return true;
  return make_context(r, path, url_key, url, *out, {}, context);
}

bool parse_mcp(yaml_reader& r, const Node& section, upstreams_config* out) {
  if (!section.IsMap()) return r.fail("mcp", "must map server names to their settings");
  for (const auto& kv : section) {
    auto name = kv.first.as<std::string>();
    auto path = "mcp." + name;
    const auto& s = kv.second;
    if (!r.known_keys(s, path,
                      {"command", "env", "cwd", "url", "headers", "timeout_ms", "ca_file", "client_cert",
                       "client_key", "insecure_skip_verify"}))
      return false;
    sources::mcp::mcp_config c;
    c.name = name;
    if (s["command"] && s["url"]) return r.fail(path, "has both command (stdio) and url (http); pick one");
    if (s["command"]) {
      c.transport = sources::mcp::transport_kind::stdio;
      if (!r.texts(s["command"], path + ".command", &c.command)) return false;
      if (c.command.empty()) return r.fail(path + ".command", "must name a program");
      if (has_tls_keys(s)) return r.fail(path, tls_keys_misplaced("url"));
      if (s["env"] && !r.string_map(s["env"], path + ".env", &c.env)) return false;
      if (s["cwd"] && !r.text(s["cwd"], path + ".cwd", &c.cwd)) return false;
    } else if (s["url"]) {
      c.transport = sources::mcp::transport_kind::http;
      if (!r.text(s["url"], path + ".url", &c.url)) return false;
      if (s["headers"] && !r.string_map(s["headers"], path + ".headers", &c.headers)) return false;
      if (!parse_tls(r, s, path, "url", c.url, &c.tls, &c.tls_context)) return false;
    } else {
      return r.fail(path, "needs command (stdio) or url (Streamable HTTP)");
    }
    if (s["timeout_ms"] && !r.millis(s["timeout_ms"], path + ".timeout_ms", &c.request_timeout)) return false;
    out->mcp.push_back(std::move(c));
  }
  return true;
}

// Where a kube context's server and credentials come from: written out
// (server), a kubeconfig, or the pod's service account (in_cluster).
// Settings written beside a kubeconfig or in_cluster take precedence.
bool parse_kube_access(yaml_reader& r, const Node& s, const std::string& path,
                       sources::kube::kube_config* c) {
  bool in_cluster = false;
  if (s["in_cluster"] && !r.flag(s["in_cluster"], path + ".in_cluster", &in_cluster)) return false;
  const int origins = (s["server"] ? 1 : 0) + (s["kubeconfig"] ? 1 : 0) + (in_cluster ? 1 : 0);
  if (origins != 1)
    return r.fail(path,
                  origins == 0
                      ? "needs server (https://host:port of the API server), kubeconfig or in_cluster: true"
                      : "server, kubeconfig and in_cluster each say where the API server is: keep one");
  if ((s["kubeconfig_context"] && !s["kubeconfig"]) || (s["service_account_dir"] && !in_cluster))
    return r.fail(path, s["kubeconfig_context"] ? "kubeconfig_context goes with kubeconfig"
                                                : "service_account_dir goes with in_cluster: true");
  kube_credentials found;
  if (s["kubeconfig"]) {
    std::string file, context;
    if (!r.text(s["kubeconfig"], path + ".kubeconfig", &file)) return false;
    if (s["kubeconfig_context"] && !r.text(s["kubeconfig_context"], path + ".kubeconfig_context", &context))
      return false;
    if (auto err = read_kubeconfig(file, context, &found)) return r.fail(path, *err);
  } else if (in_cluster) {
    std::string dir = service_account_dir;
    if (s["service_account_dir"] && !r.text(s["service_account_dir"], path + ".service_account_dir", &dir))
      return false;
    if (auto err = read_in_cluster([](const char* name) { return std::getenv(name); }, dir, &found))
      return r.fail(path, *err);
  } else if (!r.text(s["server"], path + ".server", &found.server)) {
    return false;
  }
  // Trust written here replaces the file's trust, an identity its identity.
  if (s["ca_file"] || s["insecure_skip_verify"]) {
    found.tls.ca_file.clear();
    found.ca_pem.clear();
    found.tls.insecure_skip_verify = false;
  }
  if (s["client_cert"] || s["client_key"]) {
    found.tls.client_cert.clear();
    found.tls.client_key.clear();
    found.client_cert_pem.clear();
    found.client_key_pem.clear();
  }
  c->server = found.server;
  c->tls = found.tls;
  if (!read_tls(r, s, path, &c->tls)) return false;
  c->tls_inline = {found.ca_pem, found.client_cert_pem, found.client_key_pem};
  const auto& pem = c->tls_inline;
  if (s["token"] && !r.text(s["token"], path + ".token", &c->token)) return false;
  if (s["token_file"] && !r.text(s["token_file"], path + ".token_file", &c->token_file)) return false;
  if (s["token"] && s["token_file"])
    return r.fail(path, "token and token_file both give the token: keep one");
  if (!s["token"] && !s["token_file"]) {
    c->token = found.token;
    c->token_file = found.token_file;
  }
  if (!c->token_file.empty() && !std::ifstream(c->token_file).good())
    return r.fail(path, "token_file " + c->token_file + ": cannot be read");
  if (!c->tls.any() && !pem.any()) return true;  // https:// uses the shared context of the system store
  return make_context(r, path, "server", c->server, c->tls, pem, &c->tls_context);
}

bool parse_kube(yaml_reader& r, const Node& section, upstreams_config* out) {
  if (!section.IsMap()) return r.fail("kube", "must map context names to their API servers");
  for (const auto& kv : section) {
    auto name = kv.first.as<std::string>();
    auto path = "kube." + name;
    const auto& s = kv.second;
    if (!r.known_keys(s, path,
                      {"server", "kubeconfig", "kubeconfig_context", "in_cluster", "service_account_dir",
                       "token", "token_file", "timeout_ms", "watch_idle_timeout_ms", "ca_file", "client_cert",
                       "client_key", "insecure_skip_verify"}))
      return false;
    if (name.empty() || name.find_first_of("/?#{}") != std::string::npos)
      return r.fail(path, "a context name must not contain / ? # { }");
    sources::kube::kube_config c;
    c.context = name;
    if (!parse_kube_access(r, s, path, &c)) return false;
    if (s["timeout_ms"] && !r.millis(s["timeout_ms"], path + ".timeout_ms", &c.request_timeout)) return false;
    if (s["watch_idle_timeout_ms"] &&
        !r.millis(s["watch_idle_timeout_ms"], path + ".watch_idle_timeout_ms", &c.watch_idle_timeout))
      return false;
    out->kube.push_back(std::move(c));
  }
  return true;
}

bool parse_postgres(yaml_reader& r, const Node& section, upstreams_config* out) {
  if (!section.IsMap()) return r.fail("postgres", "must map database names to their settings");
  for (const auto& kv : section) {
    auto name = kv.first.as<std::string>();
    auto path = "postgres." + name;
    const auto& s = kv.second;
    if (!r.known_keys(s, path,
                      {"conninfo", "path_field", "connect_timeout_ms", "ca_file", "client_cert", "client_key",
                       "insecure_skip_verify"}))
      return false;
    if (name.empty() || name.find('/') != std::string::npos)
      return r.fail(path, "a name must not contain '/'");
    sources::postgres::postgres_config c;
    c.name = name;
    if (!s["conninfo"]) return r.fail(path, "needs conninfo (a libpq connection string)");
    if (!r.text(s["conninfo"], path + ".conninfo", &c.conninfo)) return false;
    if (!read_checked_tls(r, s, path, &c.tls)) return false;
    if (s["path_field"] && !r.text(s["path_field"], path + ".path_field", &c.path_field)) return false;
    if (s["connect_timeout_ms"] &&
        !r.millis(s["connect_timeout_ms"], path + ".connect_timeout_ms", &c.connect_timeout))
      return false;
    out->postgres.push_back(std::move(c));
  }
  return true;
}

bool parse_files(yaml_reader& r, const Node& section, upstreams_config* out) {
  if (!r.known_keys(section, "files", {"roots"})) return false;
  sources::file::file_config c;
  if (!section["roots"]) return r.fail("files", "needs roots (the directories that may be watched)");
  if (!r.texts(section["roots"], "files.roots", &c.roots)) return false;
  for (const auto& root : c.roots)
    if (root.empty() || root.front() != '/')
      return r.fail("files.roots", "'" + root + "' is not an absolute path");
  out->files = std::move(c);
  return true;
}

bool parse_backend(yaml_reader& r, const Node& n, const std::string& path,
                   sources::web::backend_config* out) {
  if (!r.known_keys(
          n, path,
          {"kind", "url", "method", "body", "headers", "expected_status_codes", "require_json_response",
           "timeout_ms", "ca_file", "client_cert", "client_key", "insecure_skip_verify"}))
    return false;
  std::string kind = "http";
  if (n["kind"] && !r.text(n["kind"], path + ".kind", &kind)) return false;
  if (kind != "http") return r.fail(path + ".kind", "must be http, not '" + kind + "'");
  if (!n["url"]) return r.fail(path, "needs url");
  if (!r.text(n["url"], path + ".url", &out->url)) return false;
  if (n["method"]) {
    std::string method;
    if (!r.text(n["method"], path + ".method", &method)) return false;
    std::transform(method.begin(), method.end(), method.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (method != "GET" && method != "POST")
      return r.fail(path + ".method", "must be get or post, not '" + method + "'");
    out->method = method;
  }
  if (n["body"]) {
    if (out->method != "POST") return r.fail(path + ".body", "goes with method: post");
    if (!r.text(n["body"], path + ".body", &out->body)) return false;
  }
  if (n["require_json_response"] &&
      !r.flag(n["require_json_response"], path + ".require_json_response", &out->require_json_response))
    return false;
  if (!parse_tls(r, n, path, "url", out->url, &out->tls, &out->tls_context)) return false;
  if (n["headers"] && !r.string_map(n["headers"], path + ".headers", &out->headers)) return false;
  if (n["expected_status_codes"]) {
    std::vector<std::string> codes;
    if (!r.texts(n["expected_status_codes"], path + ".expected_status_codes", &codes)) return false;
    out->expected_status_codes.clear();
    for (const auto& c : codes) {
      char* end = nullptr;
      auto v = std::strtol(c.c_str(), &end, 10);
      if (c.empty() || *end != '\0' || v < 100 || v > 599)
        return r.fail(path + ".expected_status_codes", "'" + c + "' is not an HTTP status");
      out->expected_status_codes.push_back(static_cast<int>(v));
    }
  }
  if (n["timeout_ms"] && !r.millis(n["timeout_ms"], path + ".timeout_ms", &out->timeout)) return false;
  return true;
}

// watch.strategy.signature of a webhook resource.
bool parse_signature(yaml_reader& r, const Node& n, const std::string& path,
                     sources::web::signature_config* out) {
  if (!r.known_keys(n, path,
                    {"scheme", "secret", "previous_secrets", "header", "timestamp_header", "window_s"}))
    return false;
  std::string scheme;
  if (!n["scheme"] || !r.text(n["scheme"], path + ".scheme", &scheme))
    return r.fail(path, "needs scheme (github, stripe or hmac-sha256)");
  auto parsed = sources::web::parse_signature_scheme(scheme);
  if (!parsed) return r.fail(path + ".scheme", "must be github, stripe or hmac-sha256, not '" + scheme + "'");
  out->scheme = *parsed;
  if (!n["secret"] || !r.text(n["secret"], path + ".secret", &out->secret))
    return r.fail(path, "needs secret");
  if (out->secret.empty()) return r.fail(path + ".secret", "must not be empty");
  if (n["previous_secrets"] &&
      !r.texts(n["previous_secrets"], path + ".previous_secrets", &out->previous_secrets))
    return false;
  std::erase(out->previous_secrets, std::string());
  for (const char* key : {"header", "timestamp_header"}) {
    if (!n[key]) continue;
    if (out->scheme != sources::web::signature_scheme::hmac_sha256)
      return r.fail(path + "." + key, "is for scheme hmac-sha256 only (" + scheme + " names its own header)");
    auto* field = std::string_view(key) == "header" ? &out->header : &out->timestamp_header;
    if (!r.text(n[key], path + "." + key, field)) return false;
  }
  if (n["window_s"]) {
    std::size_t window = 0;
    if (!r.count(n["window_s"], path + ".window_s", 1, 86400, &window)) return false;
    out->window = std::chrono::seconds(window);
  }
  return true;
}

// watch.strategy of type sql_polling: the database, the tracking query,
// how often, and libpq's TLS.
bool parse_sql_polling(yaml_reader& r, const Node& s, const std::string& spath,
                       sources::web::web_resource_config* out) {
  for (const char* key : {"signature", "token", "previous_tokens"})
    if (s[key]) return r.fail(spath + "." + key, "is for webhooks only");
  out->kind = sources::web::strategy::sql_polling;
  auto& sql = out->sql.emplace();
  if (!s["conninfo"]) return r.fail(spath, "needs conninfo (a libpq connection string or postgresql:// URI)");
  if (!r.text(s["conninfo"], spath + ".conninfo", &sql.conninfo)) return false;
  if (!s["query"])
    return r.fail(spath,
                  "needs query (a tracking query of one value, e.g. SELECT max(updated_at) FROM orders)");
  if (!r.text(s["query"], spath + ".query", &sql.query)) return false;
  if (s["params"] && !r.texts(s["params"], spath + ".params", &sql.params)) return false;
  if (s["interval_ms"] && !r.millis(s["interval_ms"], spath + ".interval_ms", &out->interval)) return false;
  if (s["timeout_ms"] && !r.millis(s["timeout_ms"], spath + ".timeout_ms", &sql.timeout)) return false;
  if (!read_checked_tls(r, s, spath, &sql.tls)) return false;
  return true;
}

// A NATS subject to subscribe to: tokens separated by '.', none empty or
// holding blanks; '*' is a whole token, '>' the whole last one.
bool nats_subject(std::string_view subject) {
  if (subject.empty()) return false;
  for (std::size_t start = 0;;) {
    auto dot = subject.find('.', start);
    auto token = subject.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    bool last = dot == std::string_view::npos;
    if (token.empty() || token.find_first_of(" \t\r\n") != std::string_view::npos) return false;
    if ((token.find('*') != std::string_view::npos && token != "*") ||
        (token.find('>') != std::string_view::npos && (token != ">" || !last)))
      return false;
    if (last) return true;
    start = dot + 1;
  }
}

// watch.strategy of type nats_topic: the server and the subject.
bool parse_nats_topic(yaml_reader& r, const Node& s, const std::string& spath,
                      sources::web::web_resource_config* out) {
  for (const char* key : {"signature", "token", "previous_tokens"})
    if (s[key]) return r.fail(spath + "." + key, "is for webhooks only");
  if (s["interval_ms"]) return r.fail(spath + ".interval_ms", "does not apply: NATS pushes each message");
  out->kind = sources::web::strategy::nats_topic;
  auto& nats = out->nats.emplace();
  if (s["url"] && !r.text(s["url"], spath + ".url", &nats.url)) return false;
  for (std::string_view rest = nats.url; !rest.empty();) {
    auto one = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), one.size() + 1));
    auto host = sources::web::nats_address(one);
    if (!(one.starts_with("nats://") || one.starts_with("tls://")) || host.empty() || host.front() == ':')
      return r.fail(
          spath + ".url",
          "must be nats://HOST:PORT or tls://HOST:PORT (comma-separated for several servers), not '" +
              std::string(one) + "'");
  }
  if (!read_checked_tls(r, s, spath, &nats.tls)) return false;
  if (!s["subject"]) return r.fail(spath, "needs subject (e.g. inventory.updates)");
  if (!r.text(s["subject"], spath + ".subject", &nats.subject)) return false;
  if (!nats_subject(nats.subject))
    return r.fail(
        spath + ".subject",
        "must be a NATS subject: tokens separated by '.', no blanks; '*' a whole token, '>' the whole "
        "last one");
  if (s["timeout_ms"] && !r.millis(s["timeout_ms"], spath + ".timeout_ms", &nats.timeout)) return false;
  return true;
}

bool parse_resource(yaml_reader& r, const Node& n, const std::string& path,
                    sources::web::web_resource_config* out) {
  if (!r.known_keys(n, path, {"uri", "uri_template", "name", "description", "mime_type", "backend", "watch"}))
    return false;
  if (n["uri"] && n["uri_template"])
    return r.fail(path, "has uri and uri_template: a resource is one or the other");
  if (n["uri_template"]) {
    // Each URI it matches is a resource of its own (seeds/001).
    if (!r.text(n["uri_template"], path + ".uri_template", &out->uri)) return false;
    out->is_template = true;
  } else {
    if (!n["uri"]) return r.fail(path, "needs uri (or uri_template, RFC 6570)");
    if (!r.text(n["uri"], path + ".uri", &out->uri)) return false;
  }
  if (n["name"] && !r.text(n["name"], path + ".name", &out->name)) return false;
  if (n["description"] && !r.text(n["description"], path + ".description", &out->description)) return false;
  if (n["mime_type"] && !r.text(n["mime_type"], path + ".mime_type", &out->mime_type)) return false;
  if (n["backend"]) {
    out->backend.emplace();
    if (!parse_backend(r, n["backend"], path + ".backend", &*out->backend)) return false;
  }
  auto watch = n["watch"];
  // Nothing polls without a watch: block (invariant 1); one without a
  // strategy is the operator's opt-in to a poll every 60 s.
  if (!watch)
    return r.fail(path,
                  "needs watch (with strategy webhook, poll, sql_polling or nats_topic; without one it polls "
                  "every 60 s)");
  if (watch.IsNull() || (watch.IsMap() && !watch["strategy"])) {
    if (watch.IsMap() && !r.known_keys(watch, path + ".watch", {"strategy"})) return false;
    out->kind = sources::web::strategy::poll;
    out->interval = sources::web::default_poll_interval;
    return true;
  }
  if (!r.known_keys(watch, path + ".watch", {"strategy"})) return false;
  auto s = watch["strategy"];
  auto spath = path + ".watch.strategy";
  if (!r.known_keys(
          s, spath,
          {"type", "token", "previous_tokens", "signature", "interval_ms", "conninfo", "query", "params",
           "timeout_ms", "ca_file", "client_cert", "client_key", "insecure_skip_verify", "url", "subject"}))
    return false;
  std::string type;
  if (!s["type"] || !r.text(s["type"], spath + ".type", &type)) return r.fail(spath, "needs type");
  if (type != "sql_polling")
    for (const char* key : {"conninfo", "query", "params"})
      if (s[key]) return r.fail(spath + "." + key, "is for sql_polling only");
  if (type != "sql_polling" && type != "nats_topic")
    for (const char* key : {"ca_file", "client_cert", "client_key", "insecure_skip_verify"})
      if (s[key])
        return r.fail(spath + "." + key, "is for sql_polling and nats_topic only (a backend has its own)");
  if (type != "nats_topic")
    for (const char* key : {"url", "subject"})
      if (s[key]) return r.fail(spath + "." + key, "is for nats_topic only");
  if (type != "sql_polling" && type != "nats_topic" && s["timeout_ms"])
    return r.fail(spath + ".timeout_ms", "is for sql_polling and nats_topic only");
  if (type == "webhook") {
    out->kind = sources::web::strategy::webhook;
    if (s["token"] && !r.text(s["token"], spath + ".token", &out->token)) return false;
    if (s["previous_tokens"] &&
        !r.texts(s["previous_tokens"], spath + ".previous_tokens", &out->previous_tokens))
      return false;
    std::erase(out->previous_tokens, std::string());
    if (s["signature"]) {
      out->signature.emplace();
      if (!parse_signature(r, s["signature"], spath + ".signature", &*out->signature)) return false;
    }
  } else if (type == "poll") {
    if (s["signature"]) return r.fail(spath + ".signature", "is for webhooks only");
    out->kind = sources::web::strategy::poll;
    if (s["interval_ms"] && !r.millis(s["interval_ms"], spath + ".interval_ms", &out->interval)) return false;
  } else if (type == "sql_polling") {
    return parse_sql_polling(r, s, spath, out);
  } else if (type == "nats_topic") {
    return parse_nats_topic(r, s, spath, out);
  } else {
    return r.fail(spath + ".type", "must be webhook, poll, sql_polling or nats_topic, not '" + type + "'");
  }
  return true;
}

using nlohmann::json;

json settings_of(const net::tls_settings& t) {
  return {{"ca_file", t.ca_file},
          {"client_cert", t.client_cert},
          {"client_key", t.client_key},
          {"insecure_skip_verify", t.insecure_skip_verify}};
}

// A connector's settings as one comparable value (for a reload's diff).
json settings_of(const sources::mcp::mcp_config& c) {
  return {{"transport", c.transport == sources::mcp::transport_kind::stdio ? "stdio" : "http"},
          {"command", c.command},
          {"env", c.env},
          {"cwd", c.cwd},
          {"url", c.url},
          {"headers", c.headers},
          {"tls", settings_of(c.tls)},
          {"timeout_ms", c.request_timeout.count()},
          {"max_message_bytes", c.max_message_bytes}};
}

json settings_of(const sources::kube::kube_config& c) {
  return {{"server", c.server},
          {"token", c.token},
          {"token_file", c.token_file},
          {"tls_inline", {c.tls_inline.ca, c.tls_inline.client_cert, c.tls_inline.client_key}},
          {"tls", settings_of(c.tls)},
          {"timeout_ms", c.request_timeout.count()},
          {"watch_idle_timeout_ms", c.watch_idle_timeout.count()},
          {"list_page_size", c.list_page_size},
          {"max_list_bytes", c.max_list_bytes},
          {"max_event_bytes", c.max_event_bytes},
          {"ring_capacity", c.ring_capacity}};
}

json settings_of(const sources::postgres::postgres_config& c) {
  return {{"conninfo", c.conninfo},
          {"tls", settings_of(c.tls)},
          {"path_field", c.path_field},
          {"connect_timeout_ms", c.connect_timeout.count()},
          {"ring_capacity", c.ring_capacity}};
}

json settings_of(const sources::file::file_config& c) {
  return {{"roots", c.roots},
          {"max_file_bytes", c.max_file_bytes},
          {"max_dir_entries", c.max_dir_entries},
          {"max_listing_hash_bytes", c.max_listing_hash_bytes}};
}

// Without tokens (applied to the running connector) and allowed_origins
// (read at start).
json settings_of(const sources::web::web_config& c) {
  json out = json::array();
  for (const auto& r : c.resources) {
    // As it runs: a new poll floor matters only where it moves an interval.
    auto interval = r.polled() ? std::max(r.interval, c.poll_floor) : r.interval;
    json one = {{"uri", r.uri},
                {"template", r.is_template},
                {"name", r.name},
                {"description", r.description},
                {"mime_type", r.mime_type},
                {"kind", r.kind == sources::web::strategy::webhook       ? "webhook"
                         : r.kind == sources::web::strategy::poll        ? "poll"
                         : r.kind == sources::web::strategy::sql_polling ? "sql_polling"
                                                                         : "nats_topic"},
                {"interval_ms", interval.count()}};
    if (r.sql)
      one["sql"] = {{"conninfo", r.sql->conninfo},
                    {"query", r.sql->query},
                    {"params", r.sql->params},
                    {"timeout_ms", r.sql->timeout.count()},
                    {"tls", settings_of(r.sql->tls)}};
    if (r.nats)
      one["nats"] = {{"url", r.nats->url},
                     {"subject", r.nats->subject},
                     {"timeout_ms", r.nats->timeout.count()},
                     {"tls", settings_of(r.nats->tls)}};
    if (r.backend)
      one["backend"] = {{"url", r.backend->url},
                        {"method", r.backend->method},
                        {"body", r.backend->body},
                        {"require_json_response", r.backend->require_json_response},
                        {"headers", r.backend->headers},
                        {"tls", settings_of(r.backend->tls)},
                        {"expected_status_codes", r.backend->expected_status_codes},
                        {"timeout_ms", r.backend->timeout.count()},
                        {"max_body_bytes", r.backend->max_body_bytes}};
    out.push_back(std::move(one));
  }
  return out;
}

// The connectors whose TLS peer goes unverified, with the setting that says so.
std::vector<std::pair<std::string, std::string>> unverified_tls(const upstreams_config& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < cfg.web.resources.size(); ++i)
    if (cfg.web.resources[i].tls_unverified()) {
      const auto& r = cfg.web.resources[i];
      const bool backend = r.backend && r.backend->tls.insecure_skip_verify;
      out.emplace_back("resources", "upstreams.resources[" + std::to_string(i) + "]." +
                                        (backend ? "backend" : "watch.strategy") + ".insecure_skip_verify");
    }
  for (const auto& c : cfg.kube)
    if (c.tls.insecure_skip_verify)
      out.emplace_back("kube:" + c.context, "upstreams.kube." + c.context + ".insecure_skip_verify");
  for (const auto& c : cfg.postgres)
    if (c.tls.insecure_skip_verify)
      out.emplace_back("pg:" + c.name, "upstreams.postgres." + c.name + ".insecure_skip_verify");
  for (const auto& c : cfg.mcp)
    if (c.tls.insecure_skip_verify)
      out.emplace_back(c.name, "upstreams.mcp." + c.name + ".insecure_skip_verify");
  return out;
}

// Connector name -> settings, in make_connectors order.
std::vector<std::pair<std::string, json>> connector_settings(const upstreams_config& cfg) {
  std::vector<std::pair<std::string, json>> out;
  if (!cfg.web.resources.empty()) out.emplace_back("resources", settings_of(cfg.web));
  if (cfg.files) out.emplace_back("files", settings_of(*cfg.files));
  for (const auto& c : cfg.kube) out.emplace_back("kube:" + c.context, settings_of(c));
  for (const auto& c : cfg.postgres) out.emplace_back("pg:" + c.name, settings_of(c));
  for (const auto& c : cfg.mcp) out.emplace_back(c.name, settings_of(c));
  return out;
}

}  // namespace

std::optional<std::string> interpolate_env(const std::string& text, std::string* out) {
  out->clear();
  std::size_t pos = 0;
  while (true) {
    auto start = text.find("${env.", pos);
    if (start == std::string::npos) break;
    auto end = text.find('}', start);
    if (end == std::string::npos) return "unterminated ${env.NAME}";
    out->append(text, pos, start - pos);
    auto name = text.substr(start + 6, end - start - 6);
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if (!value) return "environment variable " + name + " is not set";
    out->append(value);
    pos = end + 1;
  }
  out->append(text, pos, std::string::npos);
  return std::nullopt;
}

std::optional<std::string> parse_upstreams(const YAML::Node& section, upstreams_config* out) {
  yaml_reader r("upstreams");
  *out = upstreams_config();
  try {
    if (!r.known_keys(
            section, "",
            {"mcp", "kube", "postgres", "files", "resources", "allowed_origins", "poll_floor_ms"})) {
      // known_keys names the path as "upstreams..key"; tidy it.
      auto e = *r.error();
      if (auto p = e.find(".."); p != std::string::npos) e.erase(p, 1);
      return e;
    }
    if (section["mcp"] && !parse_mcp(r, section["mcp"], out)) return r.error();
    if (section["kube"] && !parse_kube(r, section["kube"], out)) return r.error();
    if (section["postgres"] && !parse_postgres(r, section["postgres"], out)) return r.error();
    if (section["files"] && !parse_files(r, section["files"], out)) return r.error();
    if (section["resources"]) {
      const auto& list = section["resources"];
      if (!list.IsSequence()) return "upstreams.resources: must be a list";
      for (std::size_t i = 0; i < list.size(); ++i) {
        sources::web::web_resource_config c;
        if (!parse_resource(r, list[i], "resources[" + std::to_string(i) + "]", &c)) return r.error();
        out->web.resources.push_back(std::move(c));
      }
    }
    if (section["allowed_origins"] &&
        !r.texts(section["allowed_origins"], "allowed_origins", &out->web.allowed_origins))
      return r.error();
    if (section["poll_floor_ms"]) {
      if (!r.millis(section["poll_floor_ms"], "poll_floor_ms", &out->web.poll_floor)) return r.error();
      if (out->web.poll_floor < sources::web::lowest_poll_floor)
        return "upstreams.poll_floor_ms: must be at least " +
               std::to_string(sources::web::lowest_poll_floor.count());
    }
  } catch (const YAML::Exception& e) {
    return "upstreams: " + std::string(e.what());
  }
  auto problems = sources::web::check_web_config(out->web);
  if (!problems.empty()) return "upstreams.resources: " + problems.front();
  return std::nullopt;
}

std::vector<std::unique_ptr<sources::connector>> make_connectors(boost::asio::io_context& ioc,
                                                                 const upstreams_config& cfg) {
  auto all = connector_names(cfg);
  return make_connectors(ioc, cfg, std::set<std::string>(all.begin(), all.end()));
}

std::vector<std::unique_ptr<sources::connector>> make_connectors(boost::asio::io_context& ioc,
                                                                 const upstreams_config& cfg,
                                                                 const std::set<std::string>& only) {
  std::vector<std::unique_ptr<sources::connector>> out;
  if (!cfg.web.resources.empty() && only.contains("resources"))
    out.push_back(std::make_unique<sources::web::web_connector>(ioc, cfg.web));
  if (cfg.files && only.contains("files"))
    out.push_back(std::make_unique<sources::file::file_connector>(ioc, *cfg.files));
  for (const auto& c : cfg.kube)
    if (only.contains("kube:" + c.context))
      out.push_back(std::make_unique<sources::kube::kube_connector>(ioc, c));
  for (const auto& c : cfg.postgres)
    if (only.contains("pg:" + c.name))
      out.push_back(std::make_unique<sources::postgres::postgres_connector>(ioc, c));
  // MCP servers last: one that advertises resources.subscribe takes any URI
  // nobody else lists, so the specific connectors must be asked first.
  for (const auto& c : cfg.mcp)
    if (only.contains(c.name)) out.push_back(std::make_unique<sources::mcp::mcp_connector>(ioc, c));
  // At start and on each reload that makes the connector again.
  for (const auto& [name, setting] : unverified_tls(cfg))
    if (only.contains(name))
      logging::warn(
          "source.tls_unverified",
          {{"connector", name}, {"setting", setting}, {"risk", "anyone on the path can read and change it"}});
  return out;
}

std::vector<std::string> connector_names(const upstreams_config& cfg) {
  std::vector<std::string> out;
  for (auto& [name, settings] : connector_settings(cfg)) out.push_back(name);
  return out;
}

upstreams_diff diff_upstreams(const upstreams_config& running, const upstreams_config& fresh) {
  std::map<std::string, json> was;
  for (auto& [name, settings] : connector_settings(running)) was.emplace(name, std::move(settings));
  upstreams_diff out;
  for (auto& [name, settings] : connector_settings(fresh)) {
    auto it = was.find(name);
    if (it == was.end()) {
      out.added.push_back(name);
      continue;
    }
    if (it->second != settings) out.changed.push_back(name);
    was.erase(it);
  }
  for (auto& [name, settings] : was) out.removed.push_back(name);
  return out;
}

void post_webhook_tokens(sources::source_loop& loop, std::vector<sources::web::webhook_tokens> tokens) {
  boost::asio::post(loop.context(), [&loop, tokens = std::move(tokens)] {
    if (auto* web = dynamic_cast<sources::web::web_connector*>(loop.upstreams().find("resources")))
      web->update_tokens(tokens);
  });
}

}  // namespace tidings::broker
