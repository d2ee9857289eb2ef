// HTTPS upstreams through the real tidingsd (issue 24): a poll resource
// whose backend serves TLS, verified against its ca_file, refused without
// it (the read's error names the upstream and why, /metrics counts it), and one whose
// insecure_skip_verify is written: warned at start and shown in
// /v1/sources; a Kubernetes API reached through a kubeconfig and a pod's
// service account, its token file read again after a rotation. The peers
// are TLS servers of the test's own with certificates made for the test.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.hpp"
#include "client/sse_client.hpp"
#include "net/base64.hpp"
#include "tests/support/metrics_scrape.hpp"
#include "tests/support/sse_reading.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tidingsd_process.hpp"
#include "tests/support/tls_loopback_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace tidings;
using namespace tidings::testing;
using nlohmann::json;

client::http_response read_resource(const client::endpoint& ep, const std::string& uri) {
  return client::request(ep, "GET", "/v1/resources/read?uri=" + client::url_encode(uri));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const json* source_for(const json& sources, const std::string& uri) {
  for (const auto& s : sources)
    if (s["uri"] == uri) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE(
    "https backends: verified by their ca_file, refused without it naming why, unverified only when written",
    "[sources][tls]") {
  temp_dir dir;
  test_ca ca(dir.path().string(), "backend");
  const auto leaf = ca.issue("backend", {"localhost", {"DNS:localhost", "IP:127.0.0.1"}});
  std::atomic<int> version{1};
  tls_loopback_server backend(leaf, [&](tls_socket& s) {
    if (read_http_request(s).empty()) return;
    const std::string body = "report v" + std::to_string(version.load());
    write_all(s, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  const auto port = std::to_string(backend.port());
  const auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n"
                        "  poll_floor_ms: 100\n"
                        "  resources:\n"
                        "    - uri: drive://verified\n"
                        "      backend: {url: \"https://localhost:"
                     << port << "/r\", ca_file: " << ca.files().cert
                     << "}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n"
                        "    - uri: drive://untrusted\n"
                        "      backend: {url: \"https://localhost:"
                     << port
                     << "/r\"}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n"
                        "    - uri: drive://unverified\n"
                        "      backend: {url: \"https://127.0.0.1:"
                     << port
                     << "/r\", insecure_skip_verify: true}\n"
                        "      watch: {strategy: {type: poll, interval_ms: 100}}\n";
  tidingsd_process node(dir.path() / "data", {"--config", cfg.string()});
  const auto ep = node.endpoint();
  REQUIRE(node.await_log("\"source.tls_unverified\"", 5s));
  CHECK(node.log().find("upstreams.resources[2].backend.insecure_skip_verify") != std::string::npos);

  // The system store does not know the test's CA.
  const auto untrusted = read_resource(ep, "drive://untrusted");
  CHECK(untrusted.status == 502);
  CHECK(json::parse(untrusted.body)["error"].get<std::string>().find(
            "TLS handshake with localhost:" + port + " failed: unknown CA (") != std::string::npos);
  // Counted by upstream and kind.
  CHECK(scrape_metrics(ep).value_or_zero("tidings_upstream_tls_failures_total",
                                         {{"upstream", "localhost:" + port}, {"kind", "unknown CA"}}) >= 1);
  const auto verified = read_resource(ep, "drive://verified");
  REQUIRE(verified.status == 200);
  CHECK(json::parse(verified.body) == "report v1");

  client::sse_stream session(ep, "/v1/sse?uri=" + client::url_encode("drive://verified"));
  await_hello(session);
  client::sse_stream lax(ep, "/v1/sse?uri=" + client::url_encode("drive://unverified"));
  await_hello(lax);
  version = 2;
  const auto got = collect_data_events(session, 1, 10s);
  REQUIRE(got.events.size() == 1);
  CHECK(got.events[0].type == "CHANGED");
  CHECK(got.events[0].data["old"] == "report v1");
  CHECK(got.events[0].data["new"] == "report v2");

  const auto r = client::request(ep, "GET", "/v1/sources");
  REQUIRE(r.status == 200);
  const auto sources = json::parse(r.body);
  const auto* checked = source_for(sources, "drive://verified");
  const auto* unchecked = source_for(sources, "drive://unverified");
  REQUIRE(checked);
  REQUIRE(unchecked);
  CHECK_FALSE(checked->contains("tls"));
  CHECK((*unchecked)["tls"] == "unverified (insecure_skip_verify)");
}

// A Kubernetes API over https whose client setup comes from a kubeconfig
// (inline CA, a token file beside it) and from a pod's service account
// (the environment, a token and ca.crt): lists through each, and the token
// file read again after it was replaced, as a projected token is hourly.
TEST_CASE(
    "a Kubernetes API over https from a kubeconfig and from a pod's service account, its rotated token "
    "file read again",
    "[sources][kube][tls]") {
  temp_dir dir;
  const auto root = dir.path().string();
  test_ca ca(root, "kube");
  const auto leaf = ca.issue("apiserver", {"kube-apiserver", {"DNS:localhost", "IP:127.0.0.1"}});
  std::mutex mutex;
  std::string accepted = "Bearer token-1";
  tls_loopback_server api(leaf, [&](tls_socket& s) {
    auto request = read_http_request(s);
    if (request.empty()) return;
    const auto at = request.find("\r\nAuthorization: ");
    const auto auth =
        at == std::string::npos ? "" : request.substr(at + 17, request.find("\r\n", at + 2) - at - 17);
    std::string status = "200 OK";
    std::string body =
        R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[)"
        R"({"metadata":{"name":"app","namespace":"default","uid":"u1","resourceVersion":"7"},"data":{"mode":"blue"}}]})";
    {
      std::lock_guard lock(mutex);
      if (auth != accepted) {
        status = "401 Unauthorized";
        body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401})";
      }
    }
    write_all(s, "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  const auto port = std::to_string(api.port());
  std::ofstream(root + "/token") << "token-1\n";
  std::ofstream(root + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
         "clusters:\n- name: lab\n  cluster: {server: \"https://localhost:"
      << port << "\", certificate-authority-data: " << net::base64_encode(read_file(ca.files().cert))
      << "}\nusers:\n- name: robot\n  user: {tokenFile: token}\n"
         "contexts:\n- name: lab\n  context: {cluster: lab, user: robot}\n";
  std::filesystem::create_directories(root + "/sa");
  std::ofstream(root + "/sa/token") << "token-1";
  std::filesystem::copy_file(ca.files().cert, root + "/sa/ca.crt");
  const auto cfg = dir.path() / "tidings.yaml";
  std::ofstream(cfg) << "upstreams:\n  kube:\n    lab: {kubeconfig: " << root
                     << "/kubeconfig}\n    pod: {in_cluster: true, service_account_dir: " << root << "/sa}\n";
  // What a pod's environment says; tidingsd inherits it (and the test
  // process forgets it once the node has started, or failed to).
  struct pod_environment {
    explicit pod_environment(const std::string& port) {
      ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
      ::setenv("KUBERNETES_SERVICE_PORT", port.c_str(), 1);
    }
    ~pod_environment() {
      ::unsetenv("KUBERNETES_SERVICE_HOST");
      ::unsetenv("KUBERNETES_SERVICE_PORT");
    }
  };
  auto node = [&] {
    pod_environment env(port);
    return std::make_unique<tidingsd_process>(dir.path() / "data",
                                              std::vector<std::string>{"--config", cfg.string()});
  }();
  const auto ep = node->endpoint();

  for (const auto* context : {"lab", "pod"}) {
    const auto listed = read_resource(ep, std::string("kube://") + context + "/configmaps?namespace=default");
    INFO(context << ": " << listed.body);
    REQUIRE(listed.status == 200);
    CHECK(json::parse(listed.body)[0]["data"]["mode"] == "blue");
  }
  // The API server moves on to a new token before the file has it: refused.
  {
    std::lock_guard lock(mutex);
    accepted = "Bearer token-2";
  }
  const auto refused = read_resource(ep, "kube://lab/configmaps?namespace=default");
  CHECK(refused.status == 502);
  CHECK(json::parse(refused.body)["error"].get<std::string>().find("401 Unauthorized") != std::string::npos);
  // The file is replaced (as the kubelet does, by rename): the next request reads it.
  std::ofstream(root + "/token.new") << "token-2\n";
  std::filesystem::rename(root + "/token.new", root + "/token");
  CHECK(read_resource(ep, "kube://lab/configmaps?namespace=default").status == 200);
}
