// The Dockerfile compose.yaml builds, read as text (no Docker engine here): a
// Debian bookworm build stage that installs its packages with the project's
// own scripts/bootstrap, and a bookworm runtime stage with the binaries, a
// user that is not root and the nodes' data directory as a volume.

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>

#include "tests/deploy/compose_file.hpp"
#include "tests/deploy/dockerfile_text.hpp"

namespace {

using namespace tidings::testing::deploy;

}  // namespace

TEST_CASE("the Dockerfile builds on Debian bookworm with scripts/bootstrap", "[deploy][dockerfile]") {
  auto stages = dockerfile_stages();
  REQUIRE(stages.size() >= 2);
  const auto& build = stages.front();
  CHECK(build.from == "debian:bookworm");
  CHECK(build.has("COPY", "scripts/bootstrap"));
  CHECK(build.has("RUN", "scripts/bootstrap"));
  CHECK(build.has("RUN", "--target tidingsd"));
}

TEST_CASE("the runtime stage is bookworm, runs tidingsd as a user, data in a volume",
          "[deploy][dockerfile]") {
  auto stages = dockerfile_stages();
  REQUIRE(stages.size() >= 2);
  const auto& runtime = stages.back();
  CHECK(runtime.from.rfind("debian:bookworm", 0) == 0);
  CHECK(runtime.has("COPY", "--from=" + stages.front().name));
  CHECK(runtime.has("ENTRYPOINT", "tidingsd"));
  std::string user;
  for (const auto& i : runtime.instructions)
    if (i.keyword == "USER") user = i.args;
  CHECK_FALSE(user.empty());
  CHECK(user != "root");
  CHECK(user.rfind("0", 0) != 0);
  // The directory the nodes keep their data in (their volume's mount point).
  std::set<std::string> data_dirs;
  for (const auto& n : tidingsd_nodes(load_compose())) data_dirs.insert(n.setting("data-dir"));
  REQUIRE(data_dirs.size() == 1);
  CHECK(runtime.has("VOLUME", *data_dirs.begin()));
}

TEST_CASE(".dockerignore keeps the build directories and .git out of the context", "[deploy][dockerfile]") {
  std::ifstream in(source_dir() / ".dockerignore");
  REQUIRE(in);
  std::set<std::string> patterns;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') patterns.insert(line);
  // Gigabytes of local builds would be sent to the engine and bust its cache.
  CHECK(patterns.contains(".git"));
  CHECK(patterns.contains("build"));
  CHECK(patterns.contains("build-*"));
}
