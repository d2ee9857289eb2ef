#include "tests/support/watching.hpp"

#include <fstream>
#include <stdexcept>

#include "tests/support/publishing.hpp"

namespace tidings::testing {

namespace {

const client::header_list json_content{{"Content-Type", "application/json"}};

[[noreturn]] void unexpected(const std::string& what, const client::http_response& r) {
  throw std::runtime_error(what + ": status " + std::to_string(r.status) + ", body " + r.body);
}

}  // namespace

client::http_response start_watch(const client::endpoint& ep, const nlohmann::json& spec) {
  client::http_connection conn(ep);
  return conn.request("POST", "/v1/watches", spec.dump(), json_content);
}

nlohmann::json start_watch_ok(const client::endpoint& ep, const nlohmann::json& spec) {
  auto r = start_watch(ep, spec);
  if (r.status != 201 && r.status != 200) unexpected("start watch", r);
  return parse_body(r);
}

nlohmann::json list_watches(const client::endpoint& ep) {
  client::http_connection conn(ep);
  auto r = conn.request("GET", "/v1/watches");
  if (r.status != 200) unexpected("list watches", r);
  auto body = parse_body(r);
  if (!body.is_array()) unexpected("watch list is not an array", r);
  return body;
}

bool stop_watch(const client::endpoint& ep, const std::string& name) {
  client::http_connection conn(ep);
  auto r = conn.request("DELETE", "/v1/watches/" + name);
  if (r.status != 200) unexpected("stop watch", r);
  return parse_body(r).at("stopped").get<bool>();
}

std::string publish_state(const client::endpoint& ep, const std::string& stream, const std::string& path,
                          const nlohmann::json& state) {
  return publish(ep, stream, event_json(path, "CHANGED", {{"shape", "state"}, {"state", state}}));
}

std::vector<std::string> notice_lines(const data_event& event) {
  if (event.type != "NOTICE" || !event.data.contains("lines") || !event.data["lines"].is_array())
    throw std::runtime_error("not a notice: " + event.raw.dump());
  return event.data["lines"].get<std::vector<std::string>>();
}

std::vector<data_event> await_notices(client::sse_stream& session, std::size_t count,
                                      std::chrono::milliseconds timeout) {
  return collect_data_events(session, count, timeout).events;
}

std::filesystem::path write_watched_file(const std::filesystem::path& dir, const std::string& content) {
  auto root = dir / "etc";
  std::filesystem::create_directories(root);
  auto file = root / "app.json";
  std::ofstream(file) << content;
  return file;
}

void replace_file(const std::filesystem::path& path, const std::string& content) {
  auto tmp = path.parent_path() / (".tmp-" + path.filename().string());
  std::ofstream(tmp) << content;
  std::filesystem::rename(tmp, path);
}

}  // namespace tidings::testing
