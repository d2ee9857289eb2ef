// Where a kube context's server and credentials come from (broker/kubeconfig):
// a kubeconfig file as kubectl writes it (current or named context, files
// relative to it, inline base64 data, exec plugins refused) and a pod's
// service account, and the node configuration that uses them.

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "broker/config.hpp"
#include "broker/kubeconfig.hpp"
#include "net/base64.hpp"
#include "tests/persistence/temp_dir.hpp"
#include "tests/support/test_pki.hpp"

namespace {

using namespace tidings;
using namespace tidings::broker;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Two contexts: "dev" (current; a token and files next to the kubeconfig)
// and "prod" (inline CA and client certificate).
std::string two_contexts(const std::string& ca_data, const std::string& cert_data,
                         const std::string& key_data) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
         "clusters:\n"
         "- name: dev-cluster\n  cluster: {server: \"https://127.0.0.1:6443\", certificate-authority: "
         "ca.pem}\n"
         "- name: prod-cluster\n  cluster: {server: \"https://prod.example:443\", "
         "certificate-authority-data: " +
         ca_data +
         "}\n"
         "users:\n"
         "- name: dev-user\n  user: {tokenFile: token}\n"
         "- name: prod-user\n  user: {client-certificate-data: " +
         cert_data + ", client-key-data: " + key_data +
         "}\n"
         "- name: eks-user\n  user: {exec: {command: aws, args: [eks, get-token]}}\n"
         "contexts:\n"
         "- name: dev\n  context: {cluster: dev-cluster, user: dev-user}\n"
         "- name: prod\n  context: {cluster: prod-cluster, user: prod-user}\n"
         "- name: eks\n  context: {cluster: prod-cluster, user: eks-user}\n";
}

config parsed_config(const std::string& yaml_path) {
  auto out = parse_config({"--config", yaml_path});
  INFO(out.error);
  REQUIRE(out.cfg);
  return *out.cfg;
}

std::string config_error(const std::string& yaml_path) {
  auto out = parse_config({"--config", yaml_path});
  REQUIRE_FALSE(out.cfg);
  return out.error;
}

}  // namespace

TEST_CASE("a kubeconfig's current context, files relative to it, and its named contexts", "[kubeconfig]") {
  persistence::testing::temp_dir dir;
  testing::test_ca ca(dir.str(), "kube");
  testing::leaf_spec spec{"tidings", {"DNS:tidings"}};
  spec.usage = testing::usage::client;
  const auto client = ca.issue("tidings", spec);
  const auto kubeconfig = dir.str() + "/config";
  write(kubeconfig,
        two_contexts(net::base64_encode(slurp(ca.files().cert)), net::base64_encode(slurp(client.cert)),
                     net::base64_encode(slurp(client.key))));

  kube_credentials dev;
  REQUIRE_FALSE(read_kubeconfig(kubeconfig, "", &dev));
  CHECK(dev.server == "https://127.0.0.1:6443");
  CHECK(dev.tls.ca_file == dir.str() + "/ca.pem");
  CHECK(dev.token_file == dir.str() + "/token");
  CHECK(dev.ca_pem.empty());

  kube_credentials prod;
  REQUIRE_FALSE(read_kubeconfig(kubeconfig, "prod", &prod));
  CHECK(prod.server == "https://prod.example:443");
  CHECK(prod.ca_pem == slurp(ca.files().cert));
  CHECK(prod.client_cert_pem == slurp(client.cert));
  CHECK(prod.client_key_pem == slurp(client.key));
  CHECK(prod.tls.ca_file.empty());

  // Both a file and data: the data, as kubectl reads it.
  write(kubeconfig,
        "current-context: c\nclusters:\n- name: k\n  cluster: {server: \"https://h\", "
        "certificate-authority: ca.pem, certificate-authority-data: " +
            net::base64_encode("PEM") + "}\ncontexts:\n- name: c\n  context: {cluster: k}\n");
  kube_credentials both;
  REQUIRE_FALSE(read_kubeconfig(kubeconfig, "", &both));
  CHECK(both.ca_pem == "PEM");
  CHECK(both.tls.ca_file.empty());
  write(kubeconfig,
        two_contexts(net::base64_encode(slurp(ca.files().cert)), net::base64_encode(slurp(client.cert)),
                     net::base64_encode(slurp(client.key))));

  kube_credentials other;
  CHECK(
      read_kubeconfig(kubeconfig, "eks", &other).value_or("") ==
      "kubeconfig " + kubeconfig +
          ": user 'eks-user' authenticates with an exec plugin, which tidings does not run; give it a token, "
          "tokenFile or client certificate instead");
  CHECK(read_kubeconfig(kubeconfig, "staging", &other).value_or("") ==
        "kubeconfig " + kubeconfig + ": has no context 'staging'");
  CHECK(read_kubeconfig(dir.str() + "/missing", "", &other).value_or("") ==
        "kubeconfig " + dir.str() + "/missing: cannot be read");
  write(kubeconfig, "clusters: []\n");
  CHECK(read_kubeconfig(kubeconfig, "", &other).value_or("") ==
        "kubeconfig " + kubeconfig + ": has no current-context; name one with kubeconfig_context");
}

TEST_CASE("a pod's service account: the API server from the environment, the token and CA files",
          "[kubeconfig]") {
  persistence::testing::temp_dir dir;
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"}};
  auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  kube_credentials c;
  CHECK(read_in_cluster(lookup, dir.str(), &c).value_or("") ==
        "in_cluster: " + dir.str() + "/token cannot be read (no service account mounted?)");
  write(dir.str() + "/token", "eyJ...\n");
  write(dir.str() + "/ca.crt", "-----BEGIN CERTIFICATE-----\n");
  REQUIRE_FALSE(read_in_cluster(lookup, dir.str(), &c));
  CHECK(c.server == "https://10.96.0.1:443");
  CHECK(c.token_file == dir.str() + "/token");
  CHECK(c.tls.ca_file == dir.str() + "/ca.crt");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  REQUIRE_FALSE(read_in_cluster(lookup, dir.str(), &c));
  CHECK(c.server == "https://[fd00::1]:443");
  env.clear();
  CHECK(read_in_cluster(lookup, dir.str(), &c).value_or("").find("KUBERNETES_SERVICE_HOST") !=
        std::string::npos);
}

TEST_CASE("a kube context from a kubeconfig or a token file in the node's configuration",
          "[kubeconfig][config]") {
  persistence::testing::temp_dir dir;
  testing::test_ca ca(dir.str(), "kube");
  const auto kubeconfig = dir.str() + "/kubeconfig";
  write(kubeconfig, two_contexts(net::base64_encode(slurp(ca.files().cert)), "", ""));
  const auto yaml = dir.str() + "/tidings.yaml";
  auto kube = [&](const std::string& settings) {
    write(yaml, "upstreams:\n  kube:\n    k: {" + settings + "}\n");
  };

  // The inline CA makes the context's own TLS context.
  kube("kubeconfig: " + kubeconfig + ", kubeconfig_context: prod");
  auto prod = parsed_config(yaml);
  REQUIRE(prod.upstreams.kube.size() == 1);
  CHECK(prod.upstreams.kube[0].server == "https://prod.example:443");
  CHECK(prod.upstreams.kube[0].tls_context != nullptr);

  // A token file must be readable at start; a token written here wins.
  kube("kubeconfig: " + kubeconfig);
  CHECK(config_error(yaml).ends_with("upstreams.kube.k: token_file " + dir.str() + "/token: cannot be read"));
  write(dir.str() + "/token", "t0\n");
  write(dir.str() + "/ca.pem", slurp(ca.files().cert));
  auto dev = parsed_config(yaml);
  CHECK(dev.upstreams.kube[0].token_file == dir.str() + "/token");
  kube("kubeconfig: " + kubeconfig + ", token: written");
  CHECK(parsed_config(yaml).upstreams.kube[0].token == "written");
  CHECK(parsed_config(yaml).upstreams.kube[0].token_file.empty());

  kube("server: \"https://h:6443\", kubeconfig: " + kubeconfig);
  CHECK(config_error(yaml).ends_with(
      "upstreams.kube.k: server, kubeconfig and in_cluster each say where the API server is: keep one"));
  kube("token: t");
  CHECK(
      config_error(yaml).ends_with("upstreams.kube.k: needs server (https://host:port of the API server), "
                                   "kubeconfig or in_cluster: true"));
  kube("server: \"https://h:6443\", token: t, token_file: " + dir.str() + "/token");
  CHECK(config_error(yaml).ends_with("upstreams.kube.k: token and token_file both give the token: keep one"));
  kube("server: \"https://h:6443\", kubeconfig_context: prod");
  CHECK(config_error(yaml).ends_with("upstreams.kube.k: kubeconfig_context goes with kubeconfig"));
  // Trust written here replaces the kubeconfig's: a file its data, and
  // insecure_skip_verify (which a CA beside it would contradict) both.
  kube("kubeconfig: " + kubeconfig + ", kubeconfig_context: prod, ca_file: " + ca.files().cert);
  auto replaced = parsed_config(yaml).upstreams.kube[0];
  CHECK(replaced.tls.ca_file == ca.files().cert);
  CHECK(replaced.tls_inline.ca.empty());
  kube("kubeconfig: " + kubeconfig + ", kubeconfig_context: prod, insecure_skip_verify: true");
  auto lax = parsed_config(yaml).upstreams.kube[0];
  CHECK(lax.tls.insecure_skip_verify);
  CHECK(lax.tls_inline.ca.empty());
  CHECK(lax.tls_context != nullptr);
}
