#include "apps/tidings_cli/cli_options.hpp"

#include <charconv>
#include <string_view>
#include <utility>

namespace tidings::cli {

const char* const usage_text =
    "usage: tidings [OPTIONS] publish STREAM [JSON] [--idempotency-key KEY]\n"
    "       tidings [OPTIONS] watch STREAM[:PREFIX]... [--since ID] [--once] [--count N]\n"
    "       tidings [OPTIONS] watch-start NAME URI [--on-event FILE] [--debounce-ms MS]\n"
    "                         [--max-wait-ms MS]\n"
    "       tidings [OPTIONS] watch-list [--json]\n"
    "       tidings [OPTIONS] watch-stop NAME\n"
    "       tidings [OPTIONS] admin watches|streams|sessions|nodes|tenants [--json]\n"
    "       tidings [OPTIONS] admin drain|reload\n"
    "       tidings [OPTIONS] admin revoke --jti ID | --sub SUBJECT\n"
    "\n"
    "publish      POSTs JSON (one event or an array; stdin when absent) and prints the cursors.\n"
    "watch        follows the streams over SSE and prints one line per event:\n"
    "             cursor<TAB>stream<TAB>path<TAB>type<TAB>data\n"
    "             except a watch's notice (stream watch:NAME, type NOTICE), which prints as\n"
    "             cursor<TAB>stream<TAB>first line, then each further line indented two spaces.\n"
    "watch-start  starts the watch NAME on URI (stream://STREAM[/PREFIX]), or replaces the one of\n"
    "             that name; --on-event names a file of Lua filter source (\"-\": stdin). Its\n"
    "             notices go to the stream watch:NAME.\n"
    "watch-list   prints the node's watches as a table; --json prints the server's JSON array.\n"
    "watch-stop   stops the watch NAME.\n"
    "admin        the node's admin API (a token with tidings.admin): watches (the running\n"
    "             upstream sources), streams, sessions, nodes and tenants print tables (--json:\n"
    "             the server's JSON); drain stops the node gracefully and reload re-reads its\n"
    "             config (both need an operator tenant's admin); revoke ends a token (--jti)\n"
    "             or every token of a subject (--sub) in the admin's tenant.\n"
    "\n"
    "OPTIONS (every command):\n"
    "--server HOST:PORT  the node; defaults to $TIDINGS_SERVER, else 127.0.0.1:8080.\n"
    "--token TOKEN       sent as \"Authorization: Bearer TOKEN\" with every request (a node with\n"
    "                    tenants refuses requests without one); defaults to $TIDINGS_TOKEN.\n";

namespace {

client::endpoint endpoint_or_usage(const std::string& text) {
  try {
    return client::parse_endpoint(text);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
}

// A bearer token goes into a header line as it is, so it must be one word of
// printable ASCII (a JWT always is). The message names `origin`, never the token.
std::string token_or_usage(const std::string& origin, const std::string& text) {
  if (text.empty()) throw usage_error(origin + " wants a non-empty TOKEN");
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) {
      throw usage_error(origin + " must be one word of printable ASCII (no spaces or line breaks)");
    }
  }
  return text;
}

std::uint64_t count_or_usage(const std::string& text) {
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value == 0) {
    throw usage_error("--count wants a positive number, got '" + text + "'");
  }
  return value;
}

// A whole number of milliseconds; the server owns the upper bound.
std::int64_t millis_or_usage(const std::string& flag, const std::string& text) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    throw usage_error(flag + " wants a whole number of milliseconds, got '" + text + "'");
  }
  return value;
}

// The command an option belongs to; --server, --token and --help belong to every one.
std::string_view owner_of(std::string_view flag) {
  if (flag == "--since" || flag == "--count" || flag == "--once") return "watch";
  if (flag == "--idempotency-key") return "publish";
  if (flag == "--on-event" || flag == "--debounce-ms" || flag == "--max-wait-ms") return "watch-start";
  if (flag == "--json") return "watch-list or admin";
  if (flag == "--jti" || flag == "--sub") return "admin revoke";
  return {};
}

// Whether `owner` (as owner_of names it) admits `command` ("admin revoke"
// counts as admin here; parse_cli checks the admin action itself).
bool owned_by(std::string_view owner, std::string_view command) {
  if (owner == command) return true;
  if (owner == "watch-list or admin") return command == "watch-list" || command == "admin";
  return owner == "admin revoke" && command == "admin";
}

bool admin_view(std::string_view action) {
  return action == "watches" || action == "streams" || action == "sessions" || action == "nodes" ||
         action == "tenants";
}

}  // namespace

cli_options parse_cli(const std::vector<std::string>& args, const char* env_server, const char* env_token) {
  cli_options out;
  std::optional<std::string> server_flag;
  std::optional<std::string> token_flag;
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string_view>> command_flags;  // option, its command

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      if (const auto eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
    if (const auto owner = owner_of(arg); !owner.empty()) command_flags.emplace_back(arg, owner);
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw usage_error(arg + " needs a value");
      return args[++i];
    };
    auto no_value = [&] {
      if (inline_value) throw usage_error(arg + " takes no value");
    };

    if (arg == "-h" || arg == "--help") {
      out.help = true;
      return out;
    } else if (arg == "--server") {
      server_flag = value();
    } else if (arg == "--token") {
      token_flag = token_or_usage(arg, value());
    } else if (arg == "--since") {
      out.watch.since = value();
    } else if (arg == "--count") {
      out.watch.count = count_or_usage(value());
    } else if (arg == "--once") {
      no_value();
      out.watch.once = true;
    } else if (arg == "--idempotency-key") {
      out.publish.idempotency_key = value();
    } else if (arg == "--on-event") {
      out.watch_start.on_event_file = value();
    } else if (arg == "--debounce-ms") {
      out.watch_start.debounce_ms = millis_or_usage(arg, value());
    } else if (arg == "--max-wait-ms") {
      out.watch_start.max_wait_ms = millis_or_usage(arg, value());
    } else if (arg == "--json") {
      no_value();
      out.watch_list.json = true;
      out.admin.json = true;
    } else if (arg == "--jti") {
      out.admin.jti = value();
    } else if (arg == "--sub") {
      out.admin.sub = value();
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      throw usage_error("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }

  if (server_flag) {
    out.server.endpoint = endpoint_or_usage(*server_flag);
  } else if (env_server && *env_server) {
    out.server.endpoint = endpoint_or_usage(env_server);
  }
  if (token_flag) {
    out.server.token = std::move(token_flag);
    out.server.token_origin = "--token";
  } else if (env_token && *env_token) {
    out.server.token = token_or_usage("TIDINGS_TOKEN", env_token);
    out.server.token_origin = "TIDINGS_TOKEN";
  }

  if (positional.empty()) {
    throw usage_error("missing command (publish, watch, watch-start, watch-list, watch-stop or admin)");
  }
  out.command = positional.front();
  const std::vector<std::string> rest(positional.begin() + 1, positional.end());

  if (out.command == "publish") {
    if (rest.empty() || rest.size() > 2) throw usage_error("publish wants STREAM [JSON]");
    out.publish.stream = rest[0];
    if (rest.size() == 2 && rest[1] != "-") out.publish.json = rest[1];
  } else if (out.command == "watch") {
    if (rest.empty()) throw usage_error("watch wants at least one STREAM[:PREFIX]");
    out.watch.streams = rest;
  } else if (out.command == "watch-start") {
    if (rest.size() != 2) throw usage_error("watch-start wants NAME URI");
    out.watch_start.name = rest[0];
    out.watch_start.uri = rest[1];
  } else if (out.command == "watch-list") {
    if (!rest.empty()) throw usage_error("watch-list takes no arguments");
  } else if (out.command == "watch-stop") {
    if (rest.size() != 1) throw usage_error("watch-stop wants NAME");
    out.watch_stop.name = rest[0];
  } else if (out.command == "admin") {
    if (rest.size() != 1)
      throw usage_error(
          "admin wants one of watches, streams, sessions, nodes, tenants, drain, reload, revoke");
    out.admin.action = rest[0];
    const auto& action = out.admin.action;
    if (!admin_view(action) && action != "drain" && action != "reload" && action != "revoke")
      throw usage_error("unknown admin command '" + action +
                        "' (watches, streams, sessions, nodes, tenants, drain, reload or revoke)");
    if (out.admin.json && !admin_view(action))
      throw usage_error("--json belongs to admin watches, streams, sessions, nodes and tenants");
    if (action == "revoke") {
      if (out.admin.jti.has_value() == out.admin.sub.has_value())
        throw usage_error("admin revoke wants exactly one of --jti ID or --sub SUBJECT");
      if ((out.admin.jti && out.admin.jti->empty()) || (out.admin.sub && out.admin.sub->empty()))
        throw usage_error("admin revoke wants a non-empty --jti or --sub");
    } else if (out.admin.jti || out.admin.sub) {
      throw usage_error("--jti and --sub belong to admin revoke");
    }
  } else {
    throw usage_error("unknown command '" + out.command + "'");
  }
  for (const auto& [flag, owner] : command_flags) {
    if (!owned_by(owner, out.command)) throw usage_error(flag + " belongs to " + std::string(owner));
  }
  return out;
}

}  // namespace tidings::cli
