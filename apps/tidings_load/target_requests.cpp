#include "apps/tidings_load/target_requests.hpp"

#include <algorithm>

#include "client/http_client.hpp"

namespace tidings::load {

namespace {

std::string host_header(const boost::asio::ip::tcp::endpoint& server) {
  return "Host: " + server.address().to_string() + ":" + std::to_string(server.port()) + "\r\n";
}

std::string auth_header(const std::string& token) {
  return token.empty() ? std::string() : "Authorization: Bearer " + token + "\r\n";
}

}  // namespace

std::string subscribe_request(target t, const boost::asio::ip::tcp::endpoint& server,
                              const load_options& opts, std::size_t k) {
  const auto stream = stream_name(opts, k);
  std::string path;
  if (t == target::nchan) {
    path = "/sub/" + stream;
  } else if (!opts.uri.empty()) {
    path = "/v1/sse?uri=" + client::url_encode(opts.uri);
  } else {
    path = "/v1/sse?stream=" + stream;
    // Several streams on one connection: k, k+1, ... (mod C).
    for (std::size_t j = 1; j < opts.streams_per_session; ++j)
      path += "&stream=" + stream_name(opts, (k + j) % opts.streams);
  }
  // nchan picks its EventSource subscriber by this Accept header.
  return "GET " + path + " HTTP/1.1\r\n" + host_header(server) + auth_header(opts.token) +
         "Accept: text/event-stream\r\n\r\n";
}

std::string with_last_event_id(const std::string& request, const std::string& last_id) {
  if (last_id.empty()) return request;
  // Before the blank line that ends the header block.
  return request.substr(0, request.size() - 2) + "Last-Event-ID: " + last_id + "\r\n\r\n";
}

std::vector<std::string> subscribe_requests(target t, const boost::asio::ip::tcp::endpoint& server,
                                            const load_options& opts) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < std::max<std::size_t>(opts.streams, 1); ++k)
    out.push_back(subscribe_request(t, server, opts, k));
  return out;
}

std::string publish_head_prefix(target t, const boost::asio::ip::tcp::endpoint& server,
                                const std::string& stream, const std::string& token) {
  const std::string path = t == target::nchan ? "/pub/" + stream : "/v1/streams/" + stream + "/events";
  return "POST " + path + " HTTP/1.1\r\n" + host_header(server) + auth_header(token) +
         "Content-Type: application/json\r\nContent-Length: ";
}

std::string payload_pad(std::size_t payload_bytes) {
  const std::size_t fixed = 49;  // the payload without its pad, at typical figures
  return std::string(payload_bytes > fixed ? payload_bytes - fixed : 0, 'x');
}

std::string publish_body(target t, std::int64_t sent_ns, std::int64_t index, std::size_t publisher,
                         const std::string& pad) {
  std::string payload = "{\"t\":" + std::to_string(sent_ns) + ",\"i\":" + std::to_string(index) +
                        ",\"p\":" + std::to_string(publisher) + ",\"pad\":\"" + pad + "\"}";
  if (t == target::nchan) return payload;
  return "{\"path\":\"/\",\"type\":\"CHANGED\",\"data\":" + payload + "}";
}

std::string publish_batch_body(std::int64_t sent_ns, std::int64_t first, std::size_t count,
                               std::size_t publisher, const std::string& pad) {
  std::string body = "[";
  for (std::size_t i = 0; i < count; ++i) {
    if (i) body += ',';
    body += publish_body(target::tidings, sent_ns, first + static_cast<std::int64_t>(i), publisher, pad);
  }
  return body + "]";
}

std::string stream_name(const load_options& opts, std::size_t k) {
  return opts.streams <= 1 ? opts.stream : opts.stream + "-" + std::to_string(k);
}

bool publish_accepted(target t, int status) {
  if (t == target::nchan) return status == 201 || status == 202;
  // 200 is an idempotent replay; the load client sends no key, but it is still an ack.
  return status == 201 || status == 200;
}

}  // namespace tidings::load
