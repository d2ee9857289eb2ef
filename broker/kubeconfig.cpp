#include "broker/kubeconfig.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "net/base64.hpp"

namespace tidings::broker {
namespace {

namespace fs = std::filesystem;

// The entry of a kubeconfig list (clusters, users, contexts) named `name`:
// its inner map (cluster:, user:, context:), or an undefined node.
YAML::Node named(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& entry : list)
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry[inner];
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string text_of(const YAML::Node& map, const char* key) {
  return map && map.IsMap() && map[key] && map[key].IsScalar() ? map[key].as<std::string>() : std::string();
}

class reader {
 public:
  reader(std::string path, kube_credentials* out)
      : path_(std::move(path)), dir_(fs::path(path_).parent_path()), out_(out) {}

  std::optional<std::string> read(const std::string& wanted) {
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(path_);
    } catch (const YAML::BadFile&) {
      return fail("cannot be read");
    } catch (const YAML::Exception& e) {
      return fail("not YAML: " + std::string(e.what()));
    }
    auto context = wanted.empty() ? text_of(doc, "current-context") : wanted;
    if (context.empty()) return fail("has no current-context; name one with kubeconfig_context");
    auto ctx = named(doc["contexts"], context, "context");
    if (!ctx) return fail("has no context '" + context + "'");
    auto cluster_name = text_of(ctx, "cluster");
    auto cluster = named(doc["clusters"], cluster_name, "cluster");
    if (!cluster)
      return fail("context '" + context + "' names cluster '" + cluster_name + "', which is not there");
    if (auto err = read_cluster(cluster, cluster_name)) return err;
    auto user_name = text_of(ctx, "user");
    if (user_name.empty()) return std::nullopt;  // anonymous, as kubectl allows
    auto user = named(doc["users"], user_name, "user");
    if (!user) return fail("context '" + context + "' names user '" + user_name + "', which is not there");
    return read_user(user, user_name);
  }

 private:
  std::optional<std::string> fail(const std::string& what) const {
    return "kubeconfig " + path_ + ": " + what;
  }

  std::string resolved(const std::string& file) const {
    if (file.empty() || fs::path(file).is_absolute()) return file;
    return (dir_ / file).string();
  }

  // A *-data field: base64 of PEM text.
  std::optional<std::string> decoded(const YAML::Node& map, const char* key, const std::string& where,
                                     std::string* out) const {
    auto text = text_of(map, key);
    if (text.empty()) return std::nullopt;
    auto pem = net::base64_decode(text);
    if (!pem) return fail(where + "." + key + " is not base64");
    *out = std::move(*pem);
    return std::nullopt;
  }

  std::optional<std::string> read_cluster(const YAML::Node& c, const std::string& name) {
    out_->server = text_of(c, "server");
    if (out_->server.empty()) return fail("cluster '" + name + "' has no server");
    if (auto err = decoded(c, "certificate-authority-data", "cluster '" + name + "'", &out_->ca_pem))
      return err;
    // Inline data wins over a file, as kubectl has it.
    if (out_->ca_pem.empty()) out_->tls.ca_file = resolved(text_of(c, "certificate-authority"));
    out_->tls.insecure_skip_verify = text_of(c, "insecure-skip-tls-verify") == "true";
    return std::nullopt;
  }

  std::optional<std::string> read_user(const YAML::Node& u, const std::string& name) {
    const auto where = "user '" + name + "'";
    if (u["exec"] || u["auth-provider"])
      return fail(where + " authenticates with " + (u["exec"] ? "an exec plugin" : "an auth-provider") +
                  ", which tidings does not run; give it a token, tokenFile or client certificate instead");
    if (auto err = decoded(u, "client-certificate-data", where, &out_->client_cert_pem)) return err;
    if (auto err = decoded(u, "client-key-data", where, &out_->client_key_pem)) return err;
    if (out_->client_cert_pem.empty()) out_->tls.client_cert = resolved(text_of(u, "client-certificate"));
    if (out_->client_key_pem.empty()) out_->tls.client_key = resolved(text_of(u, "client-key"));
    out_->token = text_of(u, "token");
    out_->token_file = resolved(text_of(u, "tokenFile"));
    return std::nullopt;
  }

  std::string path_;
  fs::path dir_;
  kube_credentials* out_;
};

}  // namespace

std::optional<std::string> read_kubeconfig(const std::string& path, const std::string& context,
                                           kube_credentials* out) {
  return reader(path, out).read(context);
}

std::optional<std::string> read_in_cluster(const std::function<const char*(const char*)>& env,
                                           const std::string& account_dir, kube_credentials* out) {
  const char* host = env("KUBERNETES_SERVICE_HOST");
  const char* port = env("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0')
    return std::string(
        "in_cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a "
        "pod?)");
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // an IPv6 address
  out->server = "https://" + h + ":" + port;
  out->token_file = account_dir + "/token";
  out->tls.ca_file = account_dir + "/ca.crt";
  for (const auto& file : {out->token_file, out->tls.ca_file})
    if (!std::ifstream(file).good())
      return "in_cluster: " + file + " cannot be read (no service account mounted?)";
  return std::nullopt;
}

}  // namespace tidings::broker
