#pragma once

// compose.yaml read as Docker Compose would read it, for the parts the
// deployment tests check: services, their published ports and mounts, their
// environment, and for each tidingsd node the settings it really starts with
// (its --config file, found through the mount compose puts there, overlaid by
// the command's flags, as tidingsd itself does). No Docker engine or compose
// client is needed.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace tidings::testing::deploy {

// The repository root: where compose.yaml, the Dockerfile and config/ live.
std::filesystem::path source_dir();
// compose.yaml from the repository root (throws when it does not parse).
YAML::Node load_compose();

struct published_port {
  std::string host_ip;  // empty: every interface of the host
  std::string host_port;
  std::string container_port;
};
// `ports:` in the short ("IP:HOST:CONTAINER", "HOST:CONTAINER") or long form.
std::vector<published_port> published_ports(const YAML::Node& service);

struct mount {
  std::string source;  // a named volume, or a host path (bind)
  std::string target;
  bool bind = false;  // source is a path (starts with . / or ~)
};
std::vector<mount> mounts(const YAML::Node& service);

// `environment:` in the map or the list ("NAME=VALUE") form.
std::map<std::string, std::string> environment(const YAML::Node& service);

// The value compose gives "${NAME:-default}" or "${NAME-default}" when NAME
// is unset in the shell (the default); nullopt for anything else.
std::optional<std::string> interpolation_default(const std::string& value, std::string* name = nullptr);

struct host_port {
  std::string host;
  std::string port;
};
// "HOST:PORT" split at the last colon; throws when there is none.
host_port split_host_port(const std::string& address);

// A service built from the repository's Dockerfile, that is, a tidingsd node.
struct node {
  std::string name;                // the service name, its host name on the compose network
  YAML::Node service;              // as in compose.yaml
  std::vector<std::string> flags;  // the command without --config FILE
  std::filesystem::path config;    // the host file compose mounts at --config
  YAML::Node config_yaml;          // that file, parsed
  // Top-level scalar settings of the file, flags winning over them.
  std::map<std::string, std::string> settings;
  std::string setting(const std::string& key) const;  // "" when not set
};
// True when the service's build is the repository root's Dockerfile.
bool built_from_repo_dockerfile(const YAML::Node& service);
// Every such service, in compose.yaml order. Throws with a message when a
// node's command or config mount cannot be read.
std::vector<node> tidingsd_nodes(const YAML::Node& compose);

}  // namespace tidings::testing::deploy
