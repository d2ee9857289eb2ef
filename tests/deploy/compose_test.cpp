// compose.yaml at the repository root, checked at the schema level because no
// Docker engine runs where the tests do: three tidingsd nodes from the
// repository's Dockerfile that register in the three-member etcd beside them,
// publish HTTP on the host's loopback only, keep data in volumes of their own
// and have healthchecks; and the PostgreSQL the examples use. Each node's
// settings are read as tidingsd would: its mounted --config file, flags
// winning (compose_file.hpp).

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/deploy/compose_file.hpp"
#include "tests/deploy/dockerfile_text.hpp"

namespace {

using namespace tidings::testing::deploy;

std::vector<node> three_nodes() {
  auto nodes = tidingsd_nodes(load_compose());
  REQUIRE(nodes.size() == 3);
  return nodes;
}

std::string port_of(const std::string& address) {
  return split_host_port(address).port;
}

std::set<std::string> split_list(const std::string& list) {
  std::set<std::string> out;
  std::istringstream in(list);
  for (std::string s; std::getline(in, s, ',');) out.insert(s);
  return out;
}

std::vector<std::string> healthcheck_words(const YAML::Node& service) {
  std::vector<std::string> out;
  for (const auto& w : service["healthcheck"]["test"]) out.push_back(w.as<std::string>());
  return out;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("compose.yaml runs three tidingsd nodes from the repository's Dockerfile, one image",
          "[deploy][compose]") {
  auto nodes = three_nodes();
  std::set<std::string> images;
  for (const auto& n : nodes) {
    INFO("service " << n.name);
    REQUIRE(n.service["image"]);
    images.insert(n.service["image"].as<std::string>());
  }
  // One tag for the three builds of the same context: the cache builds it once.
  CHECK(images.size() == 1);
}

TEST_CASE("every node registers in the three etcd members compose runs and is dialled by service name",
          "[deploy][compose]") {
  auto compose = load_compose();
  auto nodes = three_nodes();
  std::set<std::string> members;
  for (const auto& kv : compose["services"]) {
    auto name = kv.first.as<std::string>();
    if (name.rfind("etcd", 0) != 0) continue;
    INFO("service " << name);
    members.insert("http://" + name + ":2379");
    // One etcd cluster: each member lists all three peers.
    bool peers = false;
    for (const auto& w : kv.second["command"])
      if (w.as<std::string>().rfind("--initial-cluster=", 0) == 0)
        peers = w.as<std::string>() ==
                "--initial-cluster=etcd1=http://etcd1:2380,etcd2=http://etcd2:2380,etcd3=http://etcd3:2380";
    CHECK(peers);
    CHECK(kv.second["build"]["target"].as<std::string>("") == "etcd");
    auto words = healthcheck_words(kv.second);
    CHECK(std::find(words.begin(), words.end(), "etcdctl") != words.end());
  }
  CHECK(members.size() == 3);
  for (const auto& n : nodes) {
    INFO("service " << n.name);
    REQUIRE_FALSE(n.setting("cluster-listen").empty());
    // Dialled by the others from the record, so it must be this service's
    // name on the compose network and the port the node listens on (the
    // default, cluster-listen, would be 0.0.0.0 here).
    CHECK(n.setting("cluster-advertise") == n.name + ":" + port_of(n.setting("cluster-listen")));
    CHECK(split_list(n.setting("etcd")) == members);
    for (const auto& m : members) {
      auto service = m.substr(7, m.rfind(':') - 7);
      CHECK(n.service["depends_on"][service]["condition"].as<std::string>("") == "service_healthy");
    }
  }
}

TEST_CASE("HTTP is published on the host's loopback only, the cluster port not at all", "[deploy][compose]") {
  auto compose = load_compose();
  for (const auto& kv : compose["services"]) {
    for (const auto& p : published_ports(kv.second)) {
      INFO("service " << kv.first.as<std::string>() << " port " << p.container_port);
      CHECK(p.host_ip == "127.0.0.1");
    }
  }
  std::set<std::string> host_ports;
  for (const auto& n : three_nodes()) {
    INFO("service " << n.name);
    auto ports = published_ports(n.service);
    REQUIRE(ports.size() == 1);
    CHECK(ports[0].container_port == port_of(n.setting("listen")));
    CHECK(ports[0].container_port != port_of(n.setting("cluster-listen")));
    host_ports.insert(ports[0].host_port);
    // Where `closing` sends this node's clients: the address the host reaches it at.
    CHECK(n.setting("advertise") == "127.0.0.1:" + ports[0].host_port);
  }
  CHECK(host_ports.size() == 3);
}

TEST_CASE("each node keeps its data in a named volume of its own", "[deploy][compose]") {
  auto compose = load_compose();
  std::set<std::string> volumes;
  for (const auto& n : three_nodes()) {
    INFO("service " << n.name);
    REQUIRE_FALSE(n.setting("data-dir").empty());
    auto ms = mounts(n.service);
    auto data =
        std::find_if(ms.begin(), ms.end(), [&](const mount& m) { return m.target == n.setting("data-dir"); });
    REQUIRE(data != ms.end());
    CHECK_FALSE(data->bind);
    CHECK(compose["volumes"][data->source]);  // declared, so compose creates it
    volumes.insert(data->source);
  }
  CHECK(volumes.size() == 3);
}

TEST_CASE("each node has a healthcheck on its own /healthz, with a tool the image installs",
          "[deploy][compose]") {
  auto runtime = dockerfile_stages().back();
  for (const auto& n : three_nodes()) {
    INFO("service " << n.name);
    auto words = healthcheck_words(n.service);
    REQUIRE(words.size() >= 2);
    CHECK(words[0] == "CMD");
    // With tenants every route but /healthz needs a token, so a token-less
    // probe of /readyz would never pass.
    auto url = "http://127.0.0.1:" + port_of(n.setting("listen")) + "/healthz";
    CHECK(std::find(words.begin(), words.end(), url) != words.end());
    INFO("healthcheck runs " << words[1]);
    CHECK(runtime.has("RUN", "apt-get install"));
    CHECK(runtime.has("RUN", " " + words[1]));
  }
}

TEST_CASE("every file compose mounts from the repository exists", "[deploy][compose]") {
  auto compose = load_compose();
  std::size_t binds = 0;
  for (const auto& kv : compose["services"]) {
    for (const auto& m : mounts(kv.second)) {
      if (!m.bind) continue;
      INFO("service " << kv.first.as<std::string>() << " mounts " << m.source);
      CHECK(std::filesystem::exists(source_dir() / m.source));
      ++binds;
    }
  }
  CHECK(binds >= 3);  // at least each node's config
}

TEST_CASE("a node's config takes its secrets from variables compose passes from the shell",
          "[deploy][compose]") {
  for (const auto& n : three_nodes()) {
    INFO("service " << n.name);
    auto env = environment(n.service);
    auto text = read_text(n.config);
    std::regex reference(R"(\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\})");
    std::size_t found = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it, ++found) {
      auto name = (*it)[1].str();
      INFO("the config reads ${env." << name << "}");
      REQUIRE(env.contains(name));
      // From the shell (with a dev-only default), never a literal in the file.
      std::string shell_name;
      CHECK(interpolation_default(env[name], &shell_name));
      CHECK(shell_name == name);
    }
    CHECK(found >= 1);  // tenants' key: listening beyond loopback needs auth
  }
}

TEST_CASE("postgres has a pg_isready healthcheck and the nodes wait for it", "[deploy][compose]") {
  auto compose = load_compose();
  for (const auto& n : three_nodes()) {
    for (const auto& pg : n.config_yaml["upstreams"]["postgres"]) {
      INFO("service " << n.name << ", upstream pg:" << pg.first.as<std::string>());
      std::smatch host;
      auto conninfo = pg.second["conninfo"].as<std::string>();
      REQUIRE(std::regex_search(conninfo, host, std::regex(R"(host=(\S+))")));
      auto service = compose["services"][host[1].str()];
      REQUIRE(service);
      CHECK(service["image"].as<std::string>("").rfind("postgres:", 0) == 0);
      auto words = healthcheck_words(service);
      CHECK(std::find(words.begin(), words.end(), "pg_isready") != words.end());
      CHECK(n.service["depends_on"][host[1].str()]["condition"].as<std::string>("") == "service_healthy");
    }
  }
  REQUIRE(compose["services"]["postgres"]);
  auto words = healthcheck_words(compose["services"]["postgres"]);
  CHECK(std::find(words.begin(), words.end(), "pg_isready") != words.end());
}
