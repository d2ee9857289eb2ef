#include "apps/tidings_load/target_requests.hpp"

#include <cctype>

namespace tidings::load {

namespace {

std::string host_header(const boost::asio::ip::tcp::endpoint& server) {
  return "Host: " + server.address().to_string() + ":" + std::to_string(server.port()) + "\r\n";
}

std::string auth_header(const std::string& token) {
  return token.empty() ? std::string() : "Authorization: Bearer " + token + "\r\n";
}

std::string query_escape(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/' || c == ':') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string subscribe_request(target t, const boost::asio::ip::tcp::endpoint& server,
                              const load_options& opts) {
  std::string path;
  if (t == target::nchan) {
    path = "/sub/" + opts.stream;
  } else if (!opts.uri.empty()) {
    path = "/v1/sse?uri=" + query_escape(opts.uri);
  } else {
    path = "/v1/sse?stream=" + opts.stream;
  }
  // nchan picks its EventSource subscriber by this Accept header.
  return "GET " + path + " HTTP/1.1\r\n" + host_header(server) + auth_header(opts.token) +
         "Accept: text/event-stream\r\n\r\n";
}

std::string publish_head_prefix(target t, const boost::asio::ip::tcp::endpoint& server,
                                const std::string& stream, const std::string& token) {
  const std::string path = t == target::nchan ? "/pub/" + stream : "/v1/streams/" + stream + "/events";
  return "POST " + path + " HTTP/1.1\r\n" + host_header(server) + auth_header(token) +
         "Content-Type: application/json\r\nContent-Length: ";
}

std::string publish_body(target t, std::int64_t sent_ns, std::int64_t index, std::size_t publisher,
                         const std::string& pad) {
  std::string payload = "{\"t\":" + std::to_string(sent_ns) + ",\"i\":" + std::to_string(index) +
                        ",\"p\":" + std::to_string(publisher) + ",\"pad\":\"" + pad + "\"}";
  if (t == target::nchan) return payload;
  return "{\"path\":\"/\",\"type\":\"CHANGED\",\"data\":" + payload + "}";
}

bool publish_accepted(target t, int status) {
  if (t == target::nchan) return status == 201 || status == 202;
  // 200 is an idempotent replay; the load client sends no key, but it is still an ack.
  return status == 201 || status == 200;
}

}  // namespace tidings::load
