#include "apps/tidings_load/history_reader.hpp"

#include <charconv>
#include <stdexcept>

namespace tidings::load {

namespace {

using json = nlohmann::json;

constexpr std::size_t history_page = 1000;  // the history API's largest page

}  // namespace

std::optional<std::pair<std::string, std::uint64_t>> split_cursor(const std::string& cursor) {
  const auto colon = cursor.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::uint64_t seq = 0;
  const auto* end = cursor.data() + cursor.size();
  if (std::from_chars(cursor.data() + colon + 1, end, seq).ptr != end) return std::nullopt;
  return std::make_pair(cursor.substr(0, colon), seq);
}

stream_reader::stream_reader(const client::endpoint& node, const std::string& token) : conn_(node) {
  if (!token.empty()) headers_.emplace_back("Authorization", "Bearer " + token);
}

stream_head stream_reader::head(const std::string& stream) {
  auto r = conn_.request("GET", "/v1/streams/" + stream, {}, headers_);
  if (r.status == 404) return {};
  if (r.status != 200)
    throw std::runtime_error("GET /v1/streams/" + stream + ": " + std::to_string(r.status));
  const auto body = json::parse(r.body);
  const auto cursor = split_cursor(body.at("head").get<std::string>());
  if (!cursor) throw std::runtime_error("GET /v1/streams/" + stream + ": a head that is no cursor");
  return {cursor->first, cursor->second};
}

std::vector<std::pair<std::uint64_t, json>> stream_reader::events_after(const std::string& stream,
                                                                        std::uint64_t after) {
  std::vector<std::pair<std::uint64_t, json>> out;
  std::string since;
  for (;;) {
    std::string target = "/v1/streams/" + stream + "/events?limit=" + std::to_string(history_page);
    if (!since.empty()) target += "&since=" + client::url_encode(since);
    auto r = conn_.request("GET", target, {}, headers_);
    if (r.status != 200)
      throw std::runtime_error("GET " + target + ": " + std::to_string(r.status) + " " + r.body);
    const auto body = json::parse(r.body);
    const auto& events = body.at("events");
    for (const auto& ev : events) {
      const auto cursor = split_cursor(ev.at("cursor").get<std::string>());
      if (!cursor) throw std::runtime_error("an event whose cursor is no cursor");
      if (cursor->second > after) out.emplace_back(cursor->second, ev.at("data"));
    }
    if (events.empty() || !body.contains("next") || body.at("next").is_null()) return out;
    since = body.at("next").get<std::string>();
  }
}

}  // namespace tidings::load
