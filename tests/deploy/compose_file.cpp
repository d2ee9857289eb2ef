#include "tests/deploy/compose_file.hpp"
#include "tests/support/build_paths.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace tidings::testing::deploy {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto end = text.find(sep, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::filesystem::path resolve(const std::string& path) {
  return std::filesystem::weakly_canonical(source_dir() / path);
}

// The command as a list; compose's string form would need its shell-like
// splitting, which a test should not guess at.
std::vector<std::string> command_words(const std::string& name, const YAML::Node& service) {
  const auto& command = service["command"];
  if (!command || !command.IsSequence())
    throw std::runtime_error("service " + name + ": command must be a list of tidingsd's flags");
  std::vector<std::string> words;
  for (const auto& w : command) words.push_back(w.as<std::string>());
  return words;
}

// "--key value" and "--key=value" pairs, in order (later ones win, as in tidingsd).
std::vector<std::pair<std::string, std::string>> flag_pairs(const std::string& name,
                                                            const std::vector<std::string>& words) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto& w = words[i];
    if (w.rfind("--", 0) != 0) throw std::runtime_error("service " + name + ": '" + w + "' is not a flag");
    auto eq = w.find('=');
    if (eq != std::string::npos) {
      out.emplace_back(w.substr(2, eq - 2), w.substr(eq + 1));
    } else if (w == "--verbose") {
      out.emplace_back("verbose", "true");
    } else if (i + 1 < words.size()) {
      out.emplace_back(w.substr(2), words[++i]);
    } else {
      throw std::runtime_error("service " + name + ": " + w + " has no value");
    }
  }
  return out;
}

}  // namespace

std::filesystem::path source_dir() {
  return testing::source_dir();
}

YAML::Node load_compose() {
  return YAML::LoadFile((source_dir() / "compose.yaml").string());
}

std::vector<published_port> published_ports(const YAML::Node& service) {
  std::vector<published_port> out;
  for (const auto& p : service["ports"]) {
    if (p.IsMap()) {
      out.push_back({p["host_ip"] ? p["host_ip"].as<std::string>() : "",
                     p["published"] ? p["published"].as<std::string>() : "", p["target"].as<std::string>()});
      continue;
    }
    auto parts = split(p.as<std::string>(), ':');
    if (parts.size() == 3) {
      out.push_back({parts[0], parts[1], parts[2]});
    } else if (parts.size() == 2) {
      out.push_back({"", parts[0], parts[1]});
    } else {
      out.push_back({"", "", parts[0]});  // a random host port on every interface
    }
  }
  return out;
}

std::vector<mount> mounts(const YAML::Node& service) {
  std::vector<mount> out;
  for (const auto& v : service["volumes"]) {
    mount m;
    if (v.IsMap()) {
      m.source = v["source"].as<std::string>();
      m.target = v["target"].as<std::string>();
      m.bind = v["type"] && v["type"].as<std::string>() == "bind";
    } else {
      auto parts = split(v.as<std::string>(), ':');
      if (parts.size() < 2) throw std::runtime_error("anonymous volume " + parts[0] + ": give it a name");
      m.source = parts[0];
      m.target = parts[1];
      m.bind = !m.source.empty() && (m.source[0] == '.' || m.source[0] == '/' || m.source[0] == '~');
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::map<std::string, std::string> environment(const YAML::Node& service) {
  std::map<std::string, std::string> out;
  const auto& env = service["environment"];
  if (env.IsMap()) {
    for (const auto& kv : env) out[kv.first.as<std::string>()] = kv.second.as<std::string>("");
  } else {
    for (const auto& e : env) {
      auto text = e.as<std::string>();
      auto eq = text.find('=');
      out[text.substr(0, eq)] = eq == std::string::npos ? "" : text.substr(eq + 1);
    }
  }
  return out;
}

std::optional<std::string> interpolation_default(const std::string& value, std::string* name) {
  if (value.rfind("${", 0) != 0 || value.back() != '}') return std::nullopt;
  auto inner = value.substr(2, value.size() - 3);
  auto dash = inner.find('-');
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  auto var = inner.substr(0, inner[dash - 1] == ':' ? dash - 1 : dash);
  auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (var.empty() || !std::all_of(var.begin(), var.end(), is_name_char)) return std::nullopt;
  if (name) *name = var;
  return inner.substr(dash + 1);
}

host_port split_host_port(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("'" + address + "' is not HOST:PORT");
  return {address.substr(0, colon), address.substr(colon + 1)};
}

std::string node::setting(const std::string& key) const {
  auto it = settings.find(key);
  return it == settings.end() ? "" : it->second;
}

bool built_from_repo_dockerfile(const YAML::Node& service) {
  const auto& build = service["build"];
  if (!build) return false;
  std::string context = build.IsMap() ? build["context"].as<std::string>(".") : build.as<std::string>();
  std::string file = build.IsMap() ? build["dockerfile"].as<std::string>("Dockerfile") : "Dockerfile";
  // Another stage of it (the etcd members) is not a tidingsd node.
  if (build.IsMap() && build["target"]) return false;
  return std::filesystem::weakly_canonical(resolve(context) / file) ==
         std::filesystem::weakly_canonical(source_dir() / "Dockerfile");
}

std::vector<node> tidingsd_nodes(const YAML::Node& compose) {
  std::vector<node> out;
  for (const auto& kv : compose["services"]) {
    if (!built_from_repo_dockerfile(kv.second)) continue;
    node n;
    n.name = kv.first.as<std::string>();
    n.service = kv.second;
    std::string config_target;
    std::vector<std::pair<std::string, std::string>> flags;
    for (auto& [key, value] : flag_pairs(n.name, command_words(n.name, n.service))) {
      if (key == "config") {
        config_target = value;
        continue;
      }
      n.flags.push_back("--" + key);
      n.flags.push_back(value);
      flags.emplace_back(key, value);
    }
    if (config_target.empty()) throw std::runtime_error("service " + n.name + ": no --config FILE");
    for (const auto& m : mounts(n.service))
      if (m.bind && m.target == config_target) n.config = resolve(m.source);
    if (n.config.empty())
      throw std::runtime_error("service " + n.name + ": nothing is mounted at --config " + config_target);
    n.config_yaml = YAML::LoadFile(n.config.string());
    for (const auto& s : n.config_yaml)
      if (s.second.IsScalar()) n.settings[s.first.as<std::string>()] = s.second.as<std::string>();
    for (auto& [key, value] : flags) n.settings[key] = value;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace tidings::testing::deploy
