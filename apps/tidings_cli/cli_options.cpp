#include "apps/tidings_cli/cli_options.hpp"

#include <charconv>

namespace tidings::cli {

const char* const usage_text =
    "usage: tidings [--server HOST:PORT] publish STREAM [JSON] [--idempotency-key KEY]\n"
    "       tidings [--server HOST:PORT] watch STREAM[:PREFIX]... [--since ID] [--once] [--count N]\n"
    "\n"
    "publish  POSTs JSON (one event or an array; stdin when absent) and prints the cursors.\n"
    "watch    follows the streams over SSE and prints one line per event:\n"
    "         cursor<TAB>stream<TAB>path<TAB>type<TAB>data\n"
    "The server defaults to $TIDINGS_SERVER, else 127.0.0.1:8080.\n";

namespace {

client::endpoint endpoint_or_usage(const std::string& text) {
  try {
    return client::parse_endpoint(text);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
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

}  // namespace

cli_options parse_cli(const std::vector<std::string>& args, const char* env_server) {
  cli_options out;
  std::optional<std::string> server_flag;
  std::vector<std::string> positional;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      if (const auto eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
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
    } else if (arg == "--since") {
      out.watch.since = value();
    } else if (arg == "--count") {
      out.watch.count = count_or_usage(value());
    } else if (arg == "--once") {
      no_value();
      out.watch.once = true;
    } else if (arg == "--idempotency-key") {
      out.publish.idempotency_key = value();
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      throw usage_error("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }

  if (server_flag) {
    out.server = endpoint_or_usage(*server_flag);
  } else if (env_server && *env_server) {
    out.server = endpoint_or_usage(env_server);
  }

  if (positional.empty()) throw usage_error("missing command (publish or watch)");
  out.command = positional.front();
  const std::vector<std::string> rest(positional.begin() + 1, positional.end());

  if (out.command == "publish") {
    if (rest.empty() || rest.size() > 2) throw usage_error("publish wants STREAM [JSON]");
    if (out.watch.since || out.watch.count || out.watch.once) {
      throw usage_error("--since, --count and --once belong to watch");
    }
    out.publish.stream = rest[0];
    if (rest.size() == 2 && rest[1] != "-") out.publish.json = rest[1];
  } else if (out.command == "watch") {
    if (rest.empty()) throw usage_error("watch wants at least one STREAM[:PREFIX]");
    if (out.publish.idempotency_key) throw usage_error("--idempotency-key belongs to publish");
    out.watch.streams = rest;
  } else {
    throw usage_error("unknown command '" + out.command + "'");
  }
  return out;
}

}  // namespace tidings::cli
