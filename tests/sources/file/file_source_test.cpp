#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "core/resource_routing.hpp"
#include "core/uri_template.hpp"
#include "sources/content_hash.hpp"
#include "sources/file/file_connector.hpp"
#include "sources/file/file_path.hpp"
#include "tests/sources/upstream_recorder.hpp"

using namespace tidings::sources;
using namespace tidings::sources::file;
namespace fs = std::filesystem;

namespace {

// A fresh directory holding `root` (the only configured root) and `outside`.
struct temp_tree {
  temp_tree() {
    std::string pattern = (fs::temp_directory_path() / "tidings-file-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    // The roots are compared as real paths; /tmp may itself be a symlink.
    base = fs::canonical(pattern).string();
    root = base + "/root";
    outside = base + "/outside";
    fs::create_directory(root);
    fs::create_directory(outside);
  }
  ~temp_tree() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  std::string base, root, outside;
};

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// Writes a temp file and renames it over `path`, as editors and config
// deployers do.
void replace_file(const std::string& path, const std::string& content) {
  write_file(path + ".tmp", content);
  fs::rename(path + ".tmp", path);
}

std::string uri_of(const std::string& path) {
  return "file://" + path;
}

// Runs the io_context until `done()` or a deadline; true when done.
bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(deadline - now);
  }
  return true;
}

// Runs whatever is ready now. inotify queues an event inside the syscall
// that causes it, so after a write returns its event is ready: this shows
// that a change produced no callback, without sleeping.
void run_ready(boost::asio::io_context& io) {
  for (int i = 0; i < 10; ++i) {
    if (io.stopped()) io.restart();
    io.poll();
  }
}

using recorder = tidings::sources::testing::upstream_recorder;

struct fixture {
  explicit fixture(file_config extra = {}) {
    extra.roots = {tree.root};
    connector = std::make_unique<file_connector>(io, extra);
    std::optional<std::string> error;
    connector->start([&](std::string e) { error = std::move(e); });
    REQUIRE(run_until(io, [&] { return error.has_value(); }));
    REQUIRE(*error == "");
  }

  std::unique_ptr<upstream> open(const std::string& path) {
    std::string error;
    auto up = connector->open(uri_of(path), &error);
    INFO(error);
    REQUIRE(up);
    return up;
  }

  std::string open_error(const std::string& uri) {
    std::string error;
    CHECK_FALSE(connector->open(uri, &error));
    return error;
  }

  read_result read(upstream& up) {
    std::optional<read_outcome> out;
    up.read([&](read_outcome o) { out = std::move(o); });
    REQUIRE(run_until(io, [&] { return out.has_value(); }));
    INFO(out->error);
    REQUIRE(out->result);
    return *out->result;
  }

  read_outcome connector_read(const std::string& uri) {
    std::optional<read_outcome> out;
    connector->read(uri, [&](read_outcome o) { out = std::move(o); });
    REQUIRE(run_until(io, [&] { return out.has_value(); }));
    return *out;
  }

  void subscribe(upstream& up, recorder& rec) {
    up.subscribe(rec.handlers());
    REQUIRE(run_until(io, [&] { return rec.subscribed == 1 || !rec.ended.empty(); }));
    REQUIRE(rec.ended.empty());
  }

  void await_update(recorder& rec, int count) {
    REQUIRE(run_until(io, [&] { return rec.updated >= count; }));
  }

  temp_tree tree;
  boost::asio::io_context io;
  std::unique_ptr<file_connector> connector;
};

int open_inotify_fds() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string() == "anon_inode:inotify") ++n;
  }
  return n;
}

// The kernel watches held by this process's inotify instances, as
// /proc/self/fdinfo lists them (one "inotify wd:" line each).
int kernel_watches() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec).string() != "anon_inode:inotify" || ec) continue;
    std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
    for (std::string line; std::getline(info, line);)
      if (line.starts_with("inotify wd:")) ++n;
  }
  return n;
}

nlohmann::json listing(const read_result& r) {
  REQUIRE(r.mime_type == "application/json");
  return nlohmann::json::parse(r.text);
}

const nlohmann::json* entry(const nlohmann::json& list, const std::string& name) {
  for (const auto& e : list)
    if (e.at("name") == name) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("a watched file: each write is an update and the read shows it", "[file]") {
  fixture f;
  auto path = f.tree.root + "/config.json";
  write_file(path, R"({"v":1})");
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);

  auto first = f.read(*up);
  CHECK(first.mime_type == "application/json");
  CHECK(first.text == R"({"v":1})");

  write_file(path, R"({"v":2})");
  f.await_update(rec, 1);
  CHECK(f.read(*up).text == R"({"v":2})");

  write_file(path, "plain words");
  f.await_update(rec, 2);
  auto text = f.read(*up);
  CHECK(text.mime_type == "text/plain");
  CHECK(text.text == "plain words");
  CHECK(rec.ended.empty());
}

TEST_CASE("atomic replace by rename is seen, and so is a delete", "[file]") {
  fixture f;
  auto path = f.tree.root + "/app.json";
  write_file(path, R"({"v":1})");
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);

  replace_file(path, R"({"v":"replaced"})");
  f.await_update(rec, 1);
  CHECK(f.read(*up).text == R"({"v":"replaced"})");

  // The new inode is still watched: the parent directory is.
  int before = rec.updated;
  replace_file(path, R"({"v":"again"})");
  f.await_update(rec, before + 1);
  CHECK(f.read(*up).text == R"({"v":"again"})");

  before = rec.updated;
  fs::remove(path);
  f.await_update(rec, before + 1);
  auto gone = f.read(*up);
  CHECK(gone.mime_type == "application/json");
  CHECK(gone.text == "null");

  before = rec.updated;
  write_file(path, R"({"v":"back"})");
  f.await_update(rec, before + 1);
  CHECK(f.read(*up).text == R"({"v":"back"})");
  CHECK(rec.ended.empty());
}

TEST_CASE("a file being created counts when its writer closes it", "[file]") {
  fixture f;
  auto path = f.tree.root + "/new.json";
  write_file(path, "{}");
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);
  fs::remove(path);
  f.await_update(rec, 1);

  std::ofstream out(path);
  run_ready(f.io);
  CHECK(rec.updated == 1);  // created, still empty: not yet
  out << R"({"done":true})";
  out.close();
  f.await_update(rec, 2);
  CHECK(f.read(*up).text == R"({"done":true})");

  // A hard link arrives complete.
  fs::remove(path);
  f.await_update(rec, 3);
  write_file(f.tree.root + "/elsewhere.json", "[7]");
  run_ready(f.io);
  fs::create_hard_link(f.tree.root + "/elsewhere.json", path);
  f.await_update(rec, 4);
  CHECK(f.read(*up).text == "[7]");
}

TEST_CASE("other entries of the parent directory are not updates", "[file]") {
  fixture f;
  auto path = f.tree.root + "/watched.txt";
  write_file(path, "a");
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);

  write_file(f.tree.root + "/neighbour.txt", "x");
  replace_file(f.tree.root + "/other.json", "{}");
  fs::remove(f.tree.root + "/neighbour.txt");
  run_ready(f.io);
  CHECK(rec.updated == 0);

  write_file(path, "b");
  f.await_update(rec, 1);
  CHECK(f.read(*up).text == "b");
}

TEST_CASE("a watched directory: create, modify and delete change the listing", "[file]") {
  fixture f;
  auto dir = f.tree.root + "/dir";
  fs::create_directory(dir);
  fs::create_directory(dir + "/sub");
  auto up = f.open(dir);
  recorder rec;
  f.subscribe(*up, rec);

  auto empty = listing(f.read(*up));
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].at("name") == "sub");
  CHECK(empty[0].at("type") == "dir");
  CHECK(empty[0].at("sha256").is_null());

  write_file(dir + "/b.txt", "hello");
  f.await_update(rec, 1);
  auto one = listing(f.read(*up));
  REQUIRE(one.size() == 2);
  CHECK(one[0].at("name") == "b.txt");  // sorted by name
  CHECK(one[0].at("type") == "file");
  CHECK(one[0].at("size") == 5);
  CHECK(one[0].at("sha256") == sha256_hex("hello"));
  CHECK(one[0].at("mtime_ms").get<std::int64_t>() > 0);

  int before = rec.updated;
  write_file(dir + "/b.txt", "hello, world");
  f.await_update(rec, before + 1);
  auto modified = listing(f.read(*up));
  REQUIRE(entry(modified, "b.txt"));
  CHECK(entry(modified, "b.txt")->at("sha256") == sha256_hex("hello, world"));

  before = rec.updated;
  replace_file(dir + "/a.json", "{}");
  f.await_update(rec, before + 1);
  auto renamed = listing(f.read(*up));
  CHECK(renamed.size() == 3);
  CHECK(renamed[0].at("name") == "a.json");
  CHECK_FALSE(entry(renamed, "a.json.tmp"));

  before = rec.updated;
  fs::remove(dir + "/b.txt");
  f.await_update(rec, before + 1);
  auto deleted = listing(f.read(*up));
  CHECK_FALSE(entry(deleted, "b.txt"));
  CHECK(deleted.size() == 2);
  CHECK(rec.ended.empty());
}

TEST_CASE("a symlink in a listing is reported, not followed", "[file]") {
  fixture f;
  write_file(f.tree.outside + "/secret", "s3cret");
  fs::create_symlink(f.tree.outside + "/secret", f.tree.root + "/link");
  auto out = f.connector_read(uri_of(f.tree.root));
  REQUIRE(out.result);
  auto list = listing(*out.result);
  REQUIRE(entry(list, "link"));
  CHECK(entry(list, "link")->at("type") == "symlink");
  CHECK(entry(list, "link")->at("sha256").is_null());
}

TEST_CASE("removing a watched directory updates, then ends the subscription", "[file]") {
  fixture f;
  auto dir = f.tree.root + "/doomed";
  fs::create_directory(dir);
  auto up = f.open(dir);
  recorder rec;
  f.subscribe(*up, rec);
  fs::remove(dir);
  REQUIRE(run_until(f.io, [&] { return !rec.ended.empty(); }));
  CHECK(rec.updated >= 1);
  CHECK(rec.ended.size() == 1);
  CHECK(rec.ended[0] == uri_of(dir) + ": directory removed");
  CHECK(f.read(*up).text == "null");

  // Resubscribing to a path that is still gone fails fast again.
  recorder again;
  up->subscribe(again.handlers());
  REQUIRE(run_until(f.io, [&] { return !again.ended.empty(); }));
  CHECK(again.subscribed == 0);
  CHECK(again.ended[0] == uri_of(dir) + ": No such file or directory");
}

TEST_CASE("a missing path fails the subscription fast", "[file]") {
  fixture f;
  int watches_before = kernel_watches();
  auto path = f.tree.root + "/missing.json";
  auto up = f.open(path);  // opening is fine: the path may appear before subscribe
  recorder rec;
  up->subscribe(rec.handlers());
  REQUIRE(run_until(f.io, [&] { return !rec.ended.empty(); }));
  CHECK(rec.subscribed == 0);
  REQUIRE(rec.ended.size() == 1);
  CHECK(rec.ended[0] == uri_of(path) + ": No such file or directory");
  CHECK(kernel_watches() == watches_before);

  // Closed before the failure is delivered: nothing is.
  auto closing = f.open(path);
  recorder quiet;
  closing->subscribe(quiet.handlers());
  closing->close();
  run_ready(f.io);
  CHECK(quiet.ended.empty());

  auto one_off = f.connector_read(uri_of(path));
  CHECK_FALSE(one_off.result);
  CHECK(one_off.error == uri_of(path) + ": No such file or directory");

  // In a missing directory, too.
  auto deeper = f.open(f.tree.root + "/no/such/file");
  recorder rec2;
  deeper->subscribe(rec2.handlers());
  REQUIRE(run_until(f.io, [&] { return !rec2.ended.empty(); }));
  CHECK(rec2.ended[0] == uri_of(f.tree.root + "/no/such/file") + ": No such file or directory");
}

TEST_CASE("paths outside the roots are refused, however they are spelled", "[file]") {
  fixture f;
  write_file(f.tree.outside + "/x.json", "{}");
  write_file(f.tree.root + "/in.json", "{}");

  CHECK(f.open_error(uri_of(f.tree.outside + "/x.json")).find("outside the allowed file roots") !=
        std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/../outside/x.json")).find("outside the allowed file roots") !=
        std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/%2E%2E/outside/x.json")).find("outside the allowed file roots") !=
        std::string::npos);
  CHECK(f.open_error("file:///etc/passwd").find("outside the allowed file roots") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.base)).find("outside") != std::string::npos);

  // Symlinks inside the root that point out of it.
  fs::create_directory_symlink(f.tree.outside, f.tree.root + "/escape-dir");
  fs::create_symlink(f.tree.outside + "/x.json", f.tree.root + "/escape-file");
  CHECK(f.open_error(uri_of(f.tree.root + "/escape-dir/x.json")).find("outside") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/escape-dir/not-there")).find("outside") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/escape-file")).find("outside") != std::string::npos);
  auto read = f.connector_read(uri_of(f.tree.root + "/escape-file"));
  CHECK_FALSE(read.result);
  CHECK(read.error.find("outside") != std::string::npos);

  // A missing name cannot step back out either.
  CHECK_FALSE(f.open_error(uri_of(f.tree.root + "/nothing/../../outside/x.json")).empty());

  // Inside the root, `..` and symlinks resolve to the real path.
  fs::create_symlink(f.tree.root + "/in.json", f.tree.root + "/alias.json");
  fs::create_directory(f.tree.root + "/sub");
  CHECK(f.connector->canonical(uri_of(f.tree.root + "/sub/../alias.json")) ==
        uri_of(f.tree.root + "/in.json"));
  CHECK(f.connector->canonical("file://localhost" + f.tree.root + "/./in.json") ==
        uri_of(f.tree.root + "/in.json"));
  CHECK(f.open(f.tree.root + "/alias.json"));
}

TEST_CASE("a watched file swapped for a symlink out of the roots stops reading", "[file]") {
  fixture f;
  auto path = f.tree.root + "/later.json";
  write_file(path, "{}");
  write_file(f.tree.outside + "/secret.json", R"({"secret":true})");
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);
  fs::remove(path);
  fs::create_symlink(f.tree.outside + "/secret.json", path);
  f.await_update(rec, 1);
  std::optional<read_outcome> out;
  up->read([&](read_outcome o) { out = std::move(o); });
  REQUIRE(run_until(f.io, [&] { return out.has_value(); }));
  CHECK_FALSE(out->result);
  CHECK(out->error.find("outside the allowed file roots") != std::string::npos);
}

TEST_CASE("malformed file URIs say why", "[file]") {
  fixture f;
  CHECK(f.open_error("http://example.com/x").find("not a file:// URI") != std::string::npos);
  CHECK(f.open_error("file://host" + f.tree.root).find("no host") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/a?b")).find("the one query a file URI takes is recursive") !=
        std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/a#b")).find("no fragment") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/bad%zz")).find("percent-encoding") != std::string::npos);
  CHECK(f.open_error(uri_of(f.tree.root + "/nul%00")).find("NUL") != std::string::npos);
  CHECK(f.open_error("file://").find("no path") != std::string::npos);
}

TEST_CASE("percent-encoded names round-trip through the canonical URI and the template", "[file]") {
  fixture f;
  auto path = f.tree.root + "/my file #1?.json";
  write_file(path, "[1]");
  auto canonical = file_uri(path);
  CHECK(canonical.find(' ') == std::string::npos);
  CHECK(f.connector->canonical(canonical) == canonical);
  auto up = f.open(f.tree.root + "/my%20file%20%231%3F.json");
  CHECK(f.read(*up).text == "[1]");

  auto resources = f.connector->resources();
  REQUIRE(resources.size() == 1);
  const auto& info = resources[0];
  CHECK(info.uri == "file://{+path}");
  CHECK(info.template_);
  CHECK(info.subscribable);
  CHECK(info.server == "files");
  CHECK(info.example == "watch uri=" + uri_of(f.tree.root + "/config.json"));
  auto tmpl = tidings::core::uri_template::parse(info.uri, nullptr);
  REQUIRE(tmpl);
  auto vars = tmpl->match(canonical);
  REQUIRE(vars);
  CHECK(vars->at("path") == path);
}

TEST_CASE("reads are bounded", "[file]") {
  file_config small;
  small.max_file_bytes = 8;
  small.max_dir_entries = 3;
  fixture f(small);
  write_file(f.tree.root + "/big.txt", "0123456789");
  auto big = f.connector_read(uri_of(f.tree.root + "/big.txt"));
  CHECK_FALSE(big.result);
  CHECK(big.error == uri_of(f.tree.root + "/big.txt") + ": larger than 8 bytes");

  auto listed = f.connector_read(uri_of(f.tree.root));
  REQUIRE(listed.result);
  CHECK(listing(*listed.result)[0].at("sha256").is_null());  // too large to hash

  for (auto name : {"a", "b", "c"}) write_file(f.tree.root + "/" + name, "");
  auto crowded = f.connector_read(uri_of(f.tree.root));
  CHECK_FALSE(crowded.result);
  CHECK(crowded.error.find("more than 3 entries") != std::string::npos);
}

TEST_CASE("close(): no callback afterwards and its kernel watch is gone", "[file]") {
  fixture f;
  auto path = f.tree.root + "/closing.json";
  write_file(path, "{}");
  int before = kernel_watches();
  auto up = f.open(path);
  recorder rec;
  f.subscribe(*up, rec);
  CHECK(kernel_watches() == before + 1);

  // An event already queued and a read already posted must not come through.
  write_file(path, R"({"late":1})");
  bool read_done = false;
  up->read([&](read_outcome) { read_done = true; });
  up->close();
  CHECK(kernel_watches() == before);
  write_file(path, R"({"later":2})");
  run_ready(f.io);
  CHECK(rec.updated == 0);
  CHECK_FALSE(read_done);
  CHECK(rec.ended.empty());
  up.reset();
  run_ready(f.io);
}

TEST_CASE("closing inside a handler, and resubscribing, are safe", "[file]") {
  fixture f;
  int watches_before = kernel_watches();
  auto path = f.tree.root + "/reentrant.json";
  write_file(path, "{}");
  auto up = f.open(path);
  int updates = 0;
  upstream::handlers h;
  h.subscribed = [] {};
  h.updated = [&] {
    ++updates;
    up.reset();  // destroys the upstream inside its own callback
  };
  h.ended = [](std::string) {};
  up->subscribe(h);
  run_ready(f.io);
  write_file(path, "[]");
  REQUIRE(run_until(f.io, [&] { return updates == 1; }));
  write_file(path, "[1]");
  run_ready(f.io);
  CHECK(updates == 1);
  CHECK(kernel_watches() == watches_before);

  // A second subscribe replaces the first: one kernel watch, one set of handlers.
  auto again = f.open(path);
  recorder first, second;
  f.subscribe(*again, first);
  f.subscribe(*again, second);
  CHECK(kernel_watches() == watches_before + 1);
  write_file(path, "[2]");
  f.await_update(second, 1);
  CHECK(first.updated == 0);
}

TEST_CASE("the connector checks its roots and goes quiet after stop()", "[file]") {
  boost::asio::io_context io;
  temp_tree tree;
  file_connector none(io, {});
  std::optional<std::string> error;
  none.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(io, [&] { return error.has_value(); }));
  CHECK(*error == "files: no file roots configured");

  file_config missing;
  missing.roots = {tree.base + "/not-yet"};
  file_connector later(io, missing);
  error.reset();
  later.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(io, [&] { return error.has_value(); }));
  CHECK(*error == "files: file root " + tree.base + "/not-yet: No such file or directory");
  std::string open_error;
  CHECK_FALSE(later.open(uri_of(tree.base + "/not-yet/x"), &open_error));
  CHECK(open_error == *error);

  // The root appears: a retried start succeeds.
  fs::create_directory(tree.base + "/not-yet");
  error.reset();
  later.start([&](std::string e) { error = std::move(e); });
  REQUIRE(run_until(io, [&] { return error.has_value(); }));
  CHECK(*error == "");

  bool called = false;
  later.read(uri_of(tree.base + "/not-yet"), [&](read_outcome) { called = true; });
  later.stop();
  run_ready(io);
  CHECK_FALSE(called);
}

TEST_CASE("every watch of a node shares one inotify instance, past the kernel's 128 instances per user",
          "[file]") {
  fixture f;
  int instances = open_inotify_fds();
  // More than fs.inotify.max_user_instances' default, each file in a
  // directory of its own (a kernel watch each).
  constexpr int n = 200;
  std::vector<std::unique_ptr<upstream>> ups;
  std::vector<recorder> recs(n);
  for (int i = 0; i < n; ++i) {
    auto dir = f.tree.root + "/d" + std::to_string(i);
    fs::create_directory(dir);
    write_file(dir + "/v.json", "0");
    ups.push_back(f.open(dir + "/v.json"));
    f.subscribe(*ups.back(), recs[static_cast<std::size_t>(i)]);
  }
  CHECK(open_inotify_fds() <= std::max(instances, 1));
  write_file(f.tree.root + "/d150/v.json", "1");
  f.await_update(recs[150], 1);
  run_ready(f.io);
  CHECK(recs[149].updated == 0);
  CHECK(recs[151].updated == 0);

  // Two watches on one directory share its kernel watch, each hearing its
  // own: the directory's listing and one of its files.
  auto dir = f.tree.root + "/shared";
  fs::create_directory(dir);
  write_file(dir + "/a.json", "1");
  int before = kernel_watches();
  auto listing_up = f.open(dir);
  auto file_up = f.open(dir + "/a.json");
  recorder listing_rec, file_rec;
  f.subscribe(*listing_up, listing_rec);
  f.subscribe(*file_up, file_rec);
  CHECK(kernel_watches() == before + 1);
  write_file(dir + "/b.json", "2");
  f.await_update(listing_rec, 1);
  run_ready(f.io);
  CHECK(file_rec.updated == 0);
  // One leaving keeps the other's watch.
  listing_up->close();
  CHECK(kernel_watches() == before + 1);
  write_file(dir + "/a.json", "3");
  f.await_update(file_rec, 1);
  file_up->close();
  CHECK(kernel_watches() == before);
}

TEST_CASE("a recursive directory watch sees every directory beneath it, new ones included", "[file]") {
  fixture f;
  auto dir = f.tree.root + "/tree";
  fs::create_directories(dir + "/a/deep");
  write_file(dir + "/a/deep/x.txt", "x");
  auto up = f.open(dir + "?recursive=true");
  recorder rec;
  f.subscribe(*up, rec);
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& e : listing(f.read(*up))) out.push_back(e.at("name"));
    return out;
  };
  CHECK(names() == std::vector<std::string>{"a", "a/deep", "a/deep/x.txt"});
  int watches = kernel_watches();

  // A write two levels down.
  write_file(dir + "/a/deep/x.txt", "xx");
  f.await_update(rec, 1);
  auto deep = listing(f.read(*up));
  REQUIRE(entry(deep, "a/deep/x.txt"));
  CHECK(entry(deep, "a/deep/x.txt")->at("sha256") == sha256_hex("xx"));

  // A directory made with content already inside, then written into.
  int before = rec.updated;
  fs::create_directories(dir + "/b/c");
  f.await_update(rec, before + 1);
  before = rec.updated;
  write_file(dir + "/b/c/y.txt", "y");
  f.await_update(rec, before + 1);
  CHECK(names() == std::vector<std::string>{"a", "a/deep", "a/deep/x.txt", "b", "b/c", "b/c/y.txt"});
  CHECK(kernel_watches() == watches + 2);

  // Moved out of the tree: no longer part of it, nor watched.
  before = rec.updated;
  fs::rename(dir + "/a", f.tree.root + "/moved");
  f.await_update(rec, before + 1);
  CHECK(names() == std::vector<std::string>{"b", "b/c", "b/c/y.txt"});
  before = rec.updated;
  write_file(f.tree.root + "/moved/deep/x.txt", "gone");
  run_ready(f.io);
  CHECK(rec.updated == before);
  CHECK(kernel_watches() == watches);

  // Moved back in: watched again.
  fs::rename(f.tree.root + "/moved", dir + "/a2");
  f.await_update(rec, before + 1);
  before = rec.updated;
  write_file(dir + "/a2/deep/x.txt", "back");
  f.await_update(rec, before + 1);
  CHECK(entry(listing(f.read(*up)), "a2/deep/x.txt"));

  // A symlink in the tree is listed, not followed, and not watched: what
  // it points at (outside the roots) changes nothing.
  fs::create_directory(f.tree.outside + "/secret");
  before = rec.updated;
  fs::create_directory_symlink(f.tree.outside + "/secret", dir + "/link");
  f.await_update(rec, before + 1);
  auto with_link = listing(f.read(*up));
  REQUIRE(entry(with_link, "link"));
  CHECK(entry(with_link, "link")->at("type") == "symlink");
  before = rec.updated;
  write_file(f.tree.outside + "/secret/s.txt", "s");
  run_ready(f.io);
  CHECK(rec.updated == before);
  CHECK_FALSE(entry(listing(f.read(*up)), "link/s.txt"));
  fs::remove(dir + "/link");
  f.await_update(rec, before + 1);

  // A removed subtree is a change, and its watches go with it.
  before = rec.updated;
  fs::remove_all(dir + "/b");
  f.await_update(rec, before + 1);
  CHECK(names() == std::vector<std::string>{"a2", "a2/deep", "a2/deep/x.txt"});
  CHECK(rec.ended.empty());
  up->close();
}

TEST_CASE("recursive=true names a directory, and a tree past max_dir_entries is refused", "[file]") {
  file_config small;
  small.max_dir_entries = 3;
  fixture f(small);
  write_file(f.tree.root + "/plain.json", "{}");
  // Why a subscription to `path` ends.
  auto ended = [&](const std::string& path) {
    auto up = f.open(path);
    recorder rec;
    up->subscribe(rec.handlers());
    REQUIRE(run_until(f.io, [&] { return !rec.ended.empty(); }));
    return rec.ended[0];
  };
  CHECK(ended(f.tree.root + "/plain.json?recursive=true").find("recursive=true watches a directory") !=
        std::string::npos);
  CHECK(f.connector_read(uri_of(f.tree.root + "/plain.json?recursive=true")).error.find("not one") !=
        std::string::npos);

  fs::create_directories(f.tree.root + "/big/a/b/c/d");
  CHECK(ended(f.tree.root + "/big?recursive=true").find("more than 3 directories") != std::string::npos);
  CHECK(f.connector_read(uri_of(f.tree.root + "/big?recursive=true")).error.find("more than 3 entries") !=
        std::string::npos);
  // The canonical URI keeps the flag; recursive=false is the plain watch.
  CHECK(f.connector->canonical(uri_of(f.tree.root + "/big?recursive=true")) ==
        file_uri(f.tree.root + "/big") + "?recursive=true");
  CHECK(f.connector->canonical(uri_of(f.tree.root + "/big?recursive=false")) ==
        file_uri(f.tree.root + "/big"));
}
