#include "apps/tidings_cli/admin_table.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidings::cli {

namespace {

using json = nlohmann::json;
using row = std::vector<std::string>;

// A cell stays on its line: control characters become spaces.
std::string cell_text(std::string text) {
  for (auto& ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) ch = ' ';
  }
  return text;
}

std::string text_of(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "-";
  return cell_text(it->is_string() ? it->get<std::string>()
                                   : it->dump(-1, ' ', false, json::error_handler_t::replace));
}

// Width on a terminal, near enough: UTF-8 code points, not bytes.
std::size_t display_width(const std::string& text) {
  std::size_t n = 0;
  for (const char ch : text)
    if ((static_cast<unsigned char>(ch) & 0xc0) != 0x80) ++n;
  return n;
}

std::string format_rows(const std::vector<row>& rows) {
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], display_width(r[i]));
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size()) out.append(widths[i] - display_width(r[i]) + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

std::string seconds_text(std::int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string bytes_text(std::uint64_t b) {
  constexpr std::uint64_t kib = 1024;
  constexpr std::uint64_t mib = kib * kib;
  constexpr std::uint64_t gib = mib * kib;
  if (b < 10 * kib) return std::to_string(b) + " B";
  if (b < 10 * mib) return std::to_string(b / kib) + " KiB";
  if (b < 10 * gib) return std::to_string(b / mib) + " MiB";
  return std::to_string(b / gib) + " GiB";
}

std::uint64_t count_of(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

// {"used": N, "limit": M or null} as "N/M" ("N/-" without a limit).
std::string usage_text(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return "-";
  return text_of(*it, "used") + "/" + text_of(*it, "limit");
}

std::string last_fire(const json& w, std::int64_t now_ms) {
  const auto it = w.find("last_fire_ms");
  if (it == w.end() || !it->is_number_integer()) return "-";
  return seconds_text((now_ms - it->get<std::int64_t>()) / 1000) + " ago";
}

// "retrying (next in 12s): <the last failure>".
std::string state_cell(const json& w, std::int64_t now_ms) {
  std::string out = text_of(w, "state");
  if (const auto n = w.find("next_attempt_ms"); n != w.end() && n->is_number_integer())
    out += " (next in " + seconds_text((n->get<std::int64_t>() - now_ms + 999) / 1000) + ")";
  if (const auto e = w.find("error"); e != w.end() && e->is_string())
    out += ": " + cell_text(e->get<std::string>());
  return out;
}

struct view_spec {
  std::string_view name;
  const char* list_key;
  const char* empty_text;
  row header;
  row (*cells)(const json& item, std::int64_t now_ms);
};

// Built on first use: a namespace-scope table could throw before main.
const std::vector<view_spec>& views() {
  static const std::vector<view_spec> table = {
      {"watches",
       "watches",
       "no watchers (nothing is subscribed upstream)\n",
       {"TENANT", "URI", "STRATEGY", "SHAPE", "SUBSCRIBERS", "EVENTS", "LAST FIRE", "FAILURES", "STATE"},
       [](const json& w, std::int64_t now_ms) -> row {
         return {text_of(w, "tenant"), text_of(w, "uri"),         text_of(w, "strategy"),
                 text_of(w, "shape"),  text_of(w, "subscribers"), text_of(w, "events"),
                 last_fire(w, now_ms), text_of(w, "failures"),    state_cell(w, now_ms)};
       }},
      {"streams",
       "streams",
       "no streams\n",
       {"TENANT", "NAME", "HEAD", "FIRST", "EVENTS", "SUBSCRIBERS", "OWNER", "SIZE"},
       [](const json& s, std::int64_t) -> row {
         return {text_of(s, "tenant"), text_of(s, "name"),
                 text_of(s, "head"),   text_of(s, "first_seq"),
                 text_of(s, "events"), text_of(s, "subscribers"),
                 text_of(s, "owner"),  bytes_text(count_of(s, "bytes"))};
       }},
      {"sessions",
       "sessions",
       "no sessions\n",
       {"ID", "TENANT", "SUBJECT", "STREAMS", "QUEUE", "AGE", "REMOTE"},
       [](const json& s, std::int64_t) -> row {
         std::string streams;
         if (const auto it = s.find("streams"); it != s.end() && it->is_array())
           for (const auto& name : *it) {
             if (!streams.empty()) streams += ",";
             streams += name.is_string() ? cell_text(name.get<std::string>()) : "?";
           }
         const auto age = s.find("age_seconds");
         return {text_of(s, "id"),
                 text_of(s, "tenant"),
                 text_of(s, "subject"),
                 streams,
                 std::to_string(count_of(s, "queue_frames")) + " (" + bytes_text(count_of(s, "queue_bytes")) +
                     ")",
                 age != s.end() && age->is_number_integer() ? seconds_text(age->get<std::int64_t>()) : "-",
                 text_of(s, "remote")};
       }},
      {"nodes",
       "nodes",
       "no nodes\n",
       {"ID", "ADDRESS", "STATE", "UPTIME", "STREAMS", "SOURCES", "WATCHES", "SESSIONS"},
       [](const json& n, std::int64_t) -> row {
         std::string state = text_of(n, "state");
         if (const auto self = n.find("self"); self != n.end() && self->is_boolean() && self->get<bool>())
           state += " (self)";
         const auto up = n.find("uptime_seconds");
         return {text_of(n, "id"),
                 text_of(n, "address"),
                 state,
                 up != n.end() && up->is_number_integer() ? seconds_text(up->get<std::int64_t>()) : "-",
                 text_of(n, "streams"),
                 text_of(n, "sources"),
                 text_of(n, "watches"),
                 text_of(n, "sessions")};
       }},
      {"tenants",
       "tenants",
       "no tenants\n",
       {"TENANT", "SESSIONS", "WATCHES", "STREAMS", "SOURCES", "PUBLISH RATE", "OPERATOR"},
       [](const json& t, std::int64_t) -> row {
         std::string rate = text_of(t, "publish_rate");
         if (rate != "-") rate += "/s";
         const auto op = t.find("operator");
         return {text_of(t, "tenant"),
                 usage_text(t, "sessions"),
                 usage_text(t, "watches"),
                 text_of(t, "streams"),
                 text_of(t, "sources"),
                 rate,
                 op != t.end() && op->is_boolean() && op->get<bool>() ? "yes" : "no"};
       }},
  };
  return table;
}

}  // namespace

std::optional<std::string> admin_table(std::string_view view, const std::string& body_json,
                                       std::int64_t now_ms) {
  const auto spec =
      std::find_if(views().begin(), views().end(), [&](const auto& v) { return v.name == view; });
  if (spec == views().end()) return std::nullopt;
  const auto body = json::parse(body_json, nullptr, false);
  if (!body.is_object()) return std::nullopt;
  const auto list = body.find(spec->list_key);
  if (list == body.end() || !list->is_array()) return std::nullopt;
  std::string note;
  if (const auto p = body.find("partial"); p != body.end() && p->is_boolean() && p->get<bool>())
    note = "(partial: some parts of the node did not answer in time)\n";
  if (list->empty()) return spec->empty_text + note;
  std::vector<row> rows{spec->header};
  for (const auto& item : *list) {
    if (!item.is_object()) return std::nullopt;
    rows.push_back(spec->cells(item, now_ms));
  }
  return format_rows(rows) + note;
}

}  // namespace tidings::cli
