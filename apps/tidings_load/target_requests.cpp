#include "apps/tidings_load/target_requests.hpp"

namespace tidings::load {

namespace {

std::string host_header(const boost::asio::ip::tcp::endpoint& server) {
  return "Host: " + server.address().to_string() + ":" + std::to_string(server.port()) + "\r\n";
}

}  // namespace

std::string subscribe_request(target t, const boost::asio::ip::tcp::endpoint& server,
                              const std::string& stream) {
  // nchan picks its EventSource subscriber by this Accept header.
  const std::string path = t == target::nchan ? "/sub/" + stream : "/v1/sse?stream=" + stream;
  return "GET " + path + " HTTP/1.1\r\n" + host_header(server) + "Accept: text/event-stream\r\n\r\n";
}

std::string publish_head_prefix(target t, const boost::asio::ip::tcp::endpoint& server,
                                const std::string& stream) {
  const std::string path = t == target::nchan ? "/pub/" + stream : "/v1/streams/" + stream + "/events";
  return "POST " + path + " HTTP/1.1\r\n" + host_header(server) +
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
