#include "apps/tidings_load/load_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <boost/asio/ip/address.hpp>

namespace tidings::load {

const char* const load_usage =
    "usage: tidings-load (--server HOST:PORT [--pid PID] | --tidingsd PATH [--node-arg ARG]...\n"
    "                     | --servers HOST:PORT,HOST:PORT,...)\n"
    "                    [--target tidings|nchan]\n"
    "                    [--scenario fanout|many-streams|resume|restart|idle|idle-streams|cluster|\n"
    "                                publish|failover]\n"
    "                    [--nodes N] [--publish-node K] [--etcd-members 1|3] [--rounds N]\n"
    "                    [--sessions N] [--events N] [--streams C] [--batch B] [--rate R]\n"
    "                    [--streams-per-session M]\n"
    "                    [--payload-bytes N] [--publishers K] [--stream NAME]\n"
    "                    [--connect-window N] [--timeout-s N] [--token JWT]\n"
    "                    [--uri URI] [--hold-s N [--hold-events N]] [--report FILE]\n"
    "                    [--tls-port PORT [--tls-resume on|off]]\n"
    "\n"
    "fanout (default): N sessions (1000) on one stream, E events (2000) published by K\n"
    "  keep-alive publishers each waiting for its ack; prints deliveries/s,\n"
    "  publish-to-receive latency p50/p90/p99/p99.9/max, ack rate and CPU of node and client.\n"
    "many-streams: C streams (1000) named NAME-0..NAME-(C-1), N sessions (2 per stream), each\n"
    "  on one stream; E events (20000) spread over the streams, B consecutive ones per request.\n"
    "  --streams-per-session M: each session reads M consecutive streams on one connection.\n"
    "resume: fanout's sessions get the first half of the events, all disconnect, the second\n"
    "  half is published while they are away, and they reconnect with Last-Event-ID: every\n"
    "  session must end with every event once, in order (any resync fails the run).\n"
    "restart (with --tidingsd): fanout, and once a third of the events are acknowledged the\n"
    "  node is killed (SIGKILL) and started again on its port and data; publishers resend\n"
    "  unanswered requests with their Idempotency-Key, sessions resume with Last-Event-ID:\n"
    "  every acknowledged event must reach every session once, in order.\n"
    "--rate R: offer R events/s in all (each request is due at its time; latency counts from\n"
    "  then, so a late send is not hidden); without it publishers go as fast as acks return.\n"
    "cluster: fanout over a cluster: N sessions (999) spread evenly over its nodes (session s\n"
    "  on node s mod M + 1), every publish to node K (--publish-node, 1); the same checks, plus\n"
    "  the stream's owner and its relay feeds (one per other node with sessions).\n"
    "  --tidingsd PATH --nodes M (3): starts M nodes on loopback, node 1 the seed of the others,\n"
    "  and waits until node 1 lists them all alive; --servers: a running cluster's nodes.\n"
    "  --etcd-members 1|3: the etcd tidings-load starts for them (1). --owner-node J (with\n"
    "  --tidingsd, no --token): the stream is named NAME-k for the first k that placement\n"
    "  puts on node J, so that publishes are (J = K) or are not forwarded whatever ids the\n"
    "  nodes drew (the run fails if node J is not the owner).\n"
    "failover (with --tidingsd): N rounds (--rounds, 5), each a fresh cluster of M nodes (3,\n"
    "  an etcd of --etcd-members): a stream's owner is killed (SIGKILL) while K publishers (4)\n"
    "  send R events/s (--rate, 200) through the other nodes, retrying with Idempotency-Keys;\n"
    "  prints the time from the kill to the first acknowledged write, in member leases, and\n"
    "  reads the stream back through every survivor: every acknowledged event once, under\n"
    "  the cursor it was acknowledged with.\n"
    "publish: the durable publish path alone, no sessions: K publishers (64) send E events\n"
    "  (100000), B per request, over C streams (--streams, 1); prints events and requests\n"
    "  acknowledged per second, ack latency and CPU per event. Against tidings every stream\n"
    "  is then read back: its head moved by exactly the events acknowledged, and what it\n"
    "  retains of them is each event once, each publisher's in order, cursors contiguous.\n"
    "idle: N sessions (10000) wait after hello; prints the node's RSS per idle session.\n"
    "  --uri URI: the sessions read an upstream resource (uri=) instead of --stream.\n"
    "  --hold-s N: once ready (a line 'ready: N sessions' on stdout), keep them open N s\n"
    "  (SIGTERM or SIGINT ends the hold early), count the events each one receives, of\n"
    "  any payload, and check their order; prints min/max events per session.\n"
    "  --hold-events N ends the hold once every session has received N events.\n"
    "idle-streams: C streams (--streams, 20000) get one event each, then nothing; waits for the\n"
    "  node to release every one from memory (start it with --node-arg --stream-idle-ms=MS;\n"
    "  fails past --timeout-s) and prints its RSS with the streams held and after, per stream.\n"
    "--token JWT: a bearer token for every request (a node with tenants).\n"
    "--tls-port PORT (fanout, resume, idle; with --server): sessions read over HTTPS on that port of\n"
    "  --server's host (the client verifies nothing: loopback), publishes stay on --server.\n"
    "  --tls-resume on|off: a reconnecting session offers the TLS session it had (on).\n"
    "--report FILE: also write an HTML page with the figures and plots (latency\n"
    "  distribution, deliveries over time, the node's memory) for the publishing scenarios.\n"
    "--target nchan: the server is nginx with nchan (with --server; --pid is its single\n"
    "  worker): subscribe GET /sub/STREAM (eventsource), publish POST /pub/STREAM.\n"
    "Loopback only. Ends with one JSON line holding every figure.\n";

namespace {

std::size_t number(const std::string& flag, const std::string& text, std::size_t min) {
  std::size_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min) {
    throw usage_error(flag + " wants a number >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return value;
}

// "HOST:PORT" on loopback ("localhost" spelled 127.0.0.1, as the Host header sends it).
client::endpoint loopback_endpoint(const std::string& flag, const std::string& text) {
  client::endpoint ep;
  try {
    ep = client::parse_endpoint(text);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  if (ep.host == "localhost") ep.host = "127.0.0.1";
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(ep.host, ec);
  // A benchmark that floods a remote node is a denial of service, not a measurement.
  if (ec || !addr.is_loopback()) throw usage_error(flag + " must be a loopback address, got '" + text + "'");
  return ep;
}

// The stream name and the token, as every scenario sends them.
void check_names(const load_options& out) {
  // Both ends put the name in a URL path unescaped; this keeps it one segment.
  const bool plain = !out.stream.empty() && out.stream.size() <= 128 &&
                     std::all_of(out.stream.begin(), out.stream.end(), [](unsigned char c) {
                       return std::islower(c) || std::isdigit(c) || c == '_' || c == '-' || c == '.';
                     });
  if (!plain) throw usage_error("--stream wants 1..128 of [a-z0-9_.-], got '" + out.stream + "'");
  const bool token_ok =
      std::all_of(out.token.begin(), out.token.end(), [](unsigned char c) { return c > 32 && c < 127; });
  if (!token_ok) throw usage_error("--token must be printable ASCII without spaces");
}

}  // namespace

load_options parse_load_options(const std::vector<std::string>& args) {
  load_options out;
  bool events_given = false;
  bool publishers_given = false;
  bool etcd_given = false;
  bool rounds_given = false;
  bool rate_given = false;
  bool tls_resume_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage_error(arg + " needs a value");
      return args[++i];
    };
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      return out;
    } else if (arg == "--server") {
      out.server = loopback_endpoint(arg, value());
    } else if (arg == "--servers") {
      const auto list = value();
      std::size_t start = 0;
      for (auto comma = list.find(','); start <= list.size(); comma = list.find(',', start)) {
        if (comma == std::string::npos) comma = list.size();
        out.servers.push_back(loopback_endpoint(arg, list.substr(start, comma - start)));
        start = comma + 1;
      }
    } else if (arg == "--nodes") {
      out.nodes = number(arg, value(), 1);
    } else if (arg == "--etcd-members") {
      out.etcd_members = number(arg, value(), 1);
      if (out.etcd_members != 1 && out.etcd_members != 3) throw usage_error("--etcd-members is 1 or 3");
      etcd_given = true;
    } else if (arg == "--rounds") {
      out.rounds = number(arg, value(), 1);
      rounds_given = true;
    } else if (arg == "--owner-node") {
      out.owner_node = number(arg, value(), 1);
    } else if (arg == "--publish-node") {
      out.publish_node = number(arg, value(), 1);
    } else if (arg == "--tidingsd") {
      out.tidingsd = value();
    } else if (arg == "--node-arg") {
      out.node_args.push_back(value());
    } else if (arg == "--scenario") {
      const auto v = value();
      if (v == "fanout") {
        out.kind = scenario::fanout;
      } else if (v == "many-streams") {
        out.kind = scenario::many_streams;
      } else if (v == "resume") {
        out.kind = scenario::resume;
      } else if (v == "restart") {
        out.kind = scenario::restart;
      } else if (v == "idle") {
        out.kind = scenario::idle;
      } else if (v == "idle-streams") {
        out.kind = scenario::idle_streams;
      } else if (v == "cluster") {
        out.kind = scenario::cluster;
      } else if (v == "publish") {
        out.kind = scenario::publish;
      } else if (v == "failover") {
        out.kind = scenario::failover;
      } else {
        throw usage_error(
            "--scenario is fanout, many-streams, resume, restart, idle, idle-streams, cluster, publish or "
            "failover, "
            "got '" +
            v + "'");
      }
    } else if (arg == "--target") {
      const auto v = value();
      if (v == "tidings") {
        out.peer = target::tidings;
      } else if (v == "nchan") {
        out.peer = target::nchan;
      } else {
        throw usage_error("--target is tidings or nchan, got '" + v + "'");
      }
    } else if (arg == "--sessions") {
      out.sessions = number(arg, value(), 1);
    } else if (arg == "--events") {
      out.events = number(arg, value(), 1);
      events_given = true;
    } else if (arg == "--streams") {
      out.streams = number(arg, value(), 1);
    } else if (arg == "--streams-per-session") {
      out.streams_per_session = number(arg, value(), 1);
    } else if (arg == "--batch") {
      out.batch = number(arg, value(), 1);
      if (out.batch > 1000) throw usage_error("--batch is at most 1000 (a publish's limit)");
    } else if (arg == "--rate") {
      out.rate = static_cast<double>(number(arg, value(), 1));
      rate_given = true;
    } else if (arg == "--payload-bytes") {
      out.payload_bytes = number(arg, value(), 0);
    } else if (arg == "--publishers") {
      out.publishers = number(arg, value(), 1);
      publishers_given = true;
    } else if (arg == "--connect-window") {
      out.connect_window = number(arg, value(), 1);
    } else if (arg == "--stream") {
      out.stream = value();
    } else if (arg == "--report") {
      out.report_path = value();
    } else if (arg == "--uri") {
      out.uri = value();
    } else if (arg == "--token") {
      out.token = value();
    } else if (arg == "--hold-s") {
      out.hold_s = static_cast<unsigned>(number(arg, value(), 1));
    } else if (arg == "--hold-events") {
      out.hold_events = number(arg, value(), 1);
    } else if (arg == "--timeout-s") {
      out.timeout_s = static_cast<unsigned>(number(arg, value(), 1));
    } else if (arg == "--tls-port") {
      const auto port = number(arg, value(), 1);
      if (port > 65535) throw usage_error("--tls-port is a port, 1 to 65535");
      out.tls_port = static_cast<std::uint16_t>(port);
    } else if (arg == "--tls-resume") {
      const auto v = value();
      if (v != "on" && v != "off") throw usage_error("--tls-resume is on or off, got '" + v + "'");
      out.tls_resume = v == "on";
      tls_resume_given = true;
    } else if (arg == "--pid") {
      out.pid = static_cast<pid_t>(number(arg, value(), 1));
    } else {
      throw usage_error("unknown argument " + arg);
    }
  }
  if (out.kind == scenario::failover) {
    if (out.tidingsd.empty() || out.server || !out.servers.empty())
      throw usage_error(
          "--scenario failover needs --tidingsd (it starts its clusters and kills their nodes)");
    if (out.nodes == 0) out.nodes = 3;
    if (out.nodes < 3)
      throw usage_error(
          "--scenario failover needs --nodes 3 or more (a survivor to lead, another to follow)");
    if (!publishers_given) out.publishers = 4;
    if (!rate_given) out.rate = 200;
    if (out.sessions || events_given || out.batch > 1 || out.publish_node != 1 || out.owner_node ||
        out.peer != target::tidings || !out.report_path.empty())
      throw usage_error(
          "--scenario failover takes --nodes, --etcd-members, --rounds, --publishers, --rate, --stream, "
          "--token and --node-arg");
    check_names(out);
    return out;
  }
  if (rounds_given) throw usage_error("--rounds goes with --scenario failover");
  const bool cluster = out.kind == scenario::cluster;
  if (etcd_given && !(cluster && !out.tidingsd.empty()))
    throw usage_error("--etcd-members goes with --tidingsd and --scenario cluster or failover");
  if (int(out.server.has_value()) + int(!out.servers.empty()) + int(!out.tidingsd.empty()) != 1) {
    throw usage_error(cluster ? "give exactly one of --servers and --tidingsd"
                              : "give exactly one of --server and --tidingsd");
  }
  if (cluster) {
    if (out.server) throw usage_error("--scenario cluster takes --servers (every node), not --server");
    if (out.peer != target::tidings) throw usage_error("--scenario cluster runs against tidings");
    if (!out.servers.empty() && out.nodes)
      throw usage_error("--nodes goes with --tidingsd (with --servers, every node is named)");
    if (!out.servers.empty()) out.nodes = out.servers.size();
    if (out.nodes == 0) out.nodes = 3;
    if (out.publish_node > out.nodes)
      throw usage_error("--publish-node is at most the number of nodes (" + std::to_string(out.nodes) + ")");
    if (out.owner_node > out.nodes)
      throw usage_error("--owner-node is at most the number of nodes (" + std::to_string(out.nodes) + ")");
    if (out.owner_node && (out.tidingsd.empty() || !out.token.empty()))
      throw usage_error(
          "--owner-node goes with --tidingsd and no --token (placement is computed for the default tenant)");
  } else if (!out.servers.empty() || out.nodes || out.publish_node != 1 || out.owner_node) {
    throw usage_error("--servers, --nodes, --publish-node and --owner-node go with --scenario cluster");
  }
  if (out.pid && !out.server) throw usage_error("--pid goes with --server");
  if (out.tls_port &&
      (!out.server || out.peer != target::tidings ||
       (out.kind != scenario::fanout && out.kind != scenario::resume && out.kind != scenario::idle)))
    throw usage_error("--tls-port goes with --server and --scenario fanout, resume or idle against tidings");
  if (tls_resume_given && !out.tls_port) throw usage_error("--tls-resume goes with --tls-port");
  check_names(out);
  if (out.peer == target::nchan && !out.server) {
    throw usage_error("--target nchan needs --server (tidings-load does not start nginx)");
  }
  if (!out.uri.empty() && (out.kind != scenario::idle || out.peer != target::tidings)) {
    throw usage_error("--uri goes with --scenario idle against tidings");
  }
  if (out.hold_s && out.kind != scenario::idle) throw usage_error("--hold-s goes with --scenario idle");
  if (out.hold_events && !out.hold_s) throw usage_error("--hold-events goes with --hold-s");
  const bool many = out.kind == scenario::many_streams;
  const bool publish = out.kind == scenario::publish;
  const bool idle_streams = out.kind == scenario::idle_streams;
  if (out.streams == 0) out.streams = many ? 1000 : idle_streams ? 20000 : 1;
  if (out.streams > 1 && !many && !publish && !idle_streams)
    throw usage_error("--streams goes with --scenario many-streams, publish or idle-streams");
  if (out.streams_per_session > std::min<std::size_t>(out.streams, 64))
    throw usage_error("--streams-per-session is at most --streams and 64 (a session's limit)");
  if (out.streams_per_session > 1 && out.peer == target::nchan)
    throw usage_error("--streams-per-session needs --target tidings");
  if (many && !events_given) out.events = 20000;
  if (publish) {
    if (out.sessions) throw usage_error("--scenario publish opens no sessions (--sessions does not apply)");
    if (out.streams_per_session > 1) throw usage_error("--streams-per-session does not apply to publish");
    if (!events_given) out.events = 100000;
    if (!publishers_given) out.publishers = 64;
  }
  // cluster: 333 sessions on each of 3 nodes.
  if (out.sessions == 0 && !publish)
    out.sessions = many ? 2 * out.streams : out.kind == scenario::idle ? 10000 : cluster ? 999 : 1000;
  if ((out.kind == scenario::resume || out.kind == scenario::restart) && out.peer == target::nchan)
    throw usage_error(
        "--scenario resume and restart run against tidings (nchan keeps no cursor across a reconnect)");
  if (out.kind == scenario::restart && out.tidingsd.empty())
    throw usage_error("--scenario restart needs --tidingsd (it kills and restarts the node it started)");
  if (out.kind == scenario::resume && out.events < 2)
    throw usage_error("--scenario resume needs --events >= 2");
  if (out.peer == target::nchan && out.batch > 1)
    throw usage_error("--batch needs --target tidings (nchan takes one message per publish)");
  if ((out.kind == scenario::idle || publish) && !out.report_path.empty())
    throw usage_error("--report goes with the scenarios that deliver to sessions (it plots deliveries)");
  if (out.kind == scenario::idle && (out.batch > 1 || out.rate > 0))
    throw usage_error("--batch and --rate go with the publishing scenarios");
  return out;
}

const char* target_name(target t) {
  return t == target::nchan ? "nchan" : "tidings";
}

}  // namespace tidings::load
