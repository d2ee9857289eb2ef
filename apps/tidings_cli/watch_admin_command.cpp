#include "apps/tidings_cli/watch_admin_command.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/tidings_cli/event_line.hpp"
#include "apps/tidings_cli/node_request.hpp"
#include "apps/tidings_cli/server_auth.hpp"
#include "apps/tidings_cli/watch_table.hpp"

namespace tidings::cli {

namespace {

constexpr const char* watches_target = "/v1/watches";

// The whole file ("-": stdin), or nullopt with the reason in *error.
std::optional<std::string> read_source(const std::string& file, std::string* error) {
  if (file == "-") {
    std::string text(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      *error = "cannot read the filter from stdin";
      return std::nullopt;
    }
    return text;
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!f) {
    const int err = errno;
    *error = "cannot read the filter file '" + file + "': " + std::strerror(err);
    return std::nullopt;
  }
  std::string text;
  char buf[8192];
  while (const auto n = std::fread(buf, 1, sizeof buf, f.get())) text.append(buf, n);
  // A directory opens fine and fails here (EISDIR).
  if (std::ferror(f.get())) {
    const int err = errno;
    *error = "cannot read the filter file '" + file + "': " + std::strerror(err);
    return std::nullopt;
  }
  return text;
}

// The node said no: its message, and for a 401 what to do about the token. Exit code 1.
int refused(const client::http_response& res, const server_options& server) {
  std::cerr << "tidings: " << error_message(res.body) << "\n";
  if (const auto hint = auth_hint(res.status, server)) std::cerr << "tidings: " << *hint << "\n";
  return 1;
}

std::string string_field(const nlohmann::json& obj, const char* key, const std::string& fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

int run_watch_start(const server_options& server, const watch_start_options& opts) {
  nlohmann::json request = {{"name", opts.name}, {"uri", opts.uri}};
  if (opts.on_event_file) {
    std::string error;
    auto source = read_source(*opts.on_event_file, &error);
    if (!source) {
      std::cerr << "tidings: " << error << "\n";
      return 2;
    }
    request["on_event"] = std::move(*source);
  }
  if (opts.debounce_ms) request["debounce_ms"] = *opts.debounce_ms;
  if (opts.max_wait_ms) request["max_wait_ms"] = *opts.max_wait_ms;

  std::string body;
  try {
    body = request.dump();
  } catch (const nlohmann::json::type_error&) {
    // Replacing the bytes would change the filter behind the user's back.
    std::cerr << "tidings: the filter source, NAME and URI must be UTF-8 text\n";
    return 2;
  }

  const auto res = exchange(server, "POST", watches_target, body);
  if (!res) return 1;
  if (res->status != 200 && res->status != 201) return refused(*res, server);
  const auto reply = nlohmann::json::parse(res->body, nullptr, false);
  if (!reply.is_object()) {
    std::cerr << "tidings: unexpected reply: " << res->body << "\n";
    return 1;
  }
  std::cout << (res->status == 201 ? "started " : "replaced ") << string_field(reply, "name", opts.name)
            << " on " << string_field(reply, "uri", opts.uri)
            << " (shape: " << string_field(reply, "shape", "?") << ")\n";
  return 0;
}

int run_watch_list(const server_options& server, const watch_list_options& opts) {
  const auto res = exchange(server, "GET", watches_target);
  if (!res) return 1;
  if (res->status != 200) return refused(*res, server);
  if (opts.json) {
    print_body(res->body);
    return 0;
  }
  const auto table = watch_table(res->body);
  if (!table) {
    std::cerr << "tidings: unexpected reply: " << res->body << "\n";
    return 1;
  }
  std::cout << *table;
  return 0;
}

int run_watch_stop(const server_options& server, const watch_stop_options& opts) {
  const auto res =
      exchange(server, "DELETE", std::string(watches_target) + "/" + client::url_encode(opts.name));
  if (!res) return 1;
  if (res->status != 200) return refused(*res, server);
  const auto reply = nlohmann::json::parse(res->body, nullptr, false);
  if (!reply.is_object() || !reply.contains("stopped") || !reply["stopped"].is_boolean()) {
    std::cerr << "tidings: unexpected reply: " << res->body << "\n";
    return 1;
  }
  if (!reply["stopped"].get<bool>()) {
    std::cerr << "tidings: no watch named " << opts.name << "\n";
    return 1;
  }
  std::cout << "stopped " << opts.name << "\n";
  return 0;
}

}  // namespace tidings::cli
