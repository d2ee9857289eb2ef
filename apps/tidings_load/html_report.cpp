#include "apps/tidings_load/html_report.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

namespace tidings::load {

namespace {

using nlohmann::json;
using point = std::pair<double, double>;

// Every plot shares one frame (SVG user units; CSS scales the drawing), so
// the plots line up when stacked. The right margin leaves room for the CDF axis.
constexpr double svg_w = 720, svg_h = 300;
constexpr double left = 64, right = 664, top = 16, bottom = 250;
// Colours are Okabe-Ito's, which colour-blind readers tell apart, darkened
// where needed for a 3:1 contrast with white.

template <typename... Args>
std::string print(const char* format, Args... args) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  return std::string(buf, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}

std::string html_escape(std::string_view s) {
  constexpr std::string_view special = "&<>\"'";
  constexpr const char* entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
  std::string out;
  for (const char c : s)
    if (const auto i = special.find(c); i == std::string_view::npos)
      out += c;
    else
      out += entities[i];
  return out;
}

// Three significant digits below 100 (0.0123, 4.57, 86.4), whole numbers
// above, thousands grouped (12,346): as precise as a run repeats.
std::string format_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  const int decimals = a >= 100 || a == 0 ? 0
                       : a >= 10          ? 1
                       : a >= 1           ? 2
                                          : std::min(6, 2 - static_cast<int>(std::floor(std::log10(a))));
  std::string s = print("%.*f", decimals, v);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") return "0";
  const std::size_t digits_from = s[0] == '-' ? 1 : 0;
  for (auto i = std::min(s.find('.'), s.size()); i > digits_from + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

// Axis ticks stay short so they never run into the axis title (400k, 1.5M);
// `top`, the axis's largest tick, picks one suffix for the whole axis.
std::string tick_label(double v, double top) {
  if (v == 0) return "0";
  if (std::fabs(top) >= 1e6) return format_number(v / 1e6) + "M";
  if (std::fabs(top) >= 1e4) return format_number(v / 1e3) + "k";
  return format_number(v);
}

// Strings are user input (stream names, targets): always escaped.
std::string format_value(const json& v) {
  if (v.is_number()) return format_number(v.get<double>());
  return html_escape(v.is_string() ? v.get<std::string>() : v.dump());
}

// summary[key] or summary[key][sub]; nullptr when absent or null.
const json* field(const json& j, const char* key, const char* sub = nullptr) {
  if (!j.is_object() || !j.contains(key)) return nullptr;
  const json* v = &j.at(key);
  if (sub) v = v->is_object() && v->contains(sub) ? &v->at(sub) : nullptr;
  return v && !v->is_null() ? v : nullptr;
}

// 0, step, 2 step... up to at least hi, with step 1, 2 or 5 times a power of ten.
std::vector<double> linear_ticks(double hi) {
  if (!(hi > 0) || !std::isfinite(hi)) return {0, 1};
  const double raw = hi / 6;
  const double pow10 = std::pow(10, std::floor(std::log10(raw)));
  const double m = raw / pow10;
  const double step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * pow10;
  std::vector<double> ticks{0};
  while (ticks.back() < hi * (1 - 1e-9)) ticks.push_back(step * static_cast<double>(ticks.size()));
  return ticks;
}

// Snaps outward to 1, 2 or 5 times a power of ten, for a log axis's ends.
double snap_log(double v, bool up) {
  const double pow10 = std::pow(10, std::floor(std::log10(v) + 1e-9));
  const double m = v / pow10;
  if (up) return (m <= 1 + 1e-9 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * pow10;
  return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * pow10;
}

// Decades, with 2 and 5 between when there are few, from lo to hi (both 1,
// 2 or 5 times a power of ten).
std::vector<double> log_ticks(double lo, double hi) {
  const bool decades_only = std::log10(hi / lo) >= 3;
  std::vector<double> ticks;
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  for (int k = first; k <= static_cast<int>(std::ceil(std::log10(hi))); ++k)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double t = m * std::pow(10, k);
      if ((m == 1 || !decades_only) && t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
    }
  return ticks;
}

// Maps data to the frame and collects the drawing. Every coordinate passes
// through x() or y(), so a degenerate input can never put NaN in the SVG.
struct plot {
  double x_lo, x_hi, y_lo, y_hi;
  bool log_x = false;
  std::string svg;

  static double finite(double v) { return std::isfinite(v) ? v : 0; }
  double x(double v) const {
    if (log_x)
      return finite(left + std::log(std::max(v, x_lo) / x_lo) / std::log(x_hi / x_lo) * (right - left));
    return finite(left + (v - x_lo) / (x_hi - x_lo) * (right - left));
  }
  double y(double v) const { return finite(bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top)); }
};

void x_axis(plot& p, const std::vector<double>& ticks, const char* label) {
  for (const double t : ticks)
    p.svg += print(R"(<line class="grid" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"/>)"
                   R"(<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>)",
                   p.x(t), p.x(t), top, bottom, p.x(t), bottom + 18,
                   tick_label(t, p.log_x ? t : ticks.back()).c_str());
  p.svg += print(R"(<line class="axis" x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f"/>)"
                 R"(<text class="label" x="%.0f" y="%.0f" text-anchor="middle">%s</text>)",
                 left, right, bottom, bottom, (left + right) / 2, svg_h - 8, label);
}

// Gridlines come with the left axis only; a right axis (in percent of the
// left's range) just labels its ticks.
void y_axis(plot& p, const std::vector<double>& ticks, const char* label, bool on_right = false) {
  const double scale = on_right ? (p.y_hi - p.y_lo) / 100 : 1;
  for (const double t : ticks) {
    const double y = p.y(t * scale);
    if (!on_right)
      p.svg += print(R"(<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>)", left, right, y, y);
    p.svg +=
        print(R"(<text x="%.0f" y="%.1f" dy="4" text-anchor="%s">%s</text>)", on_right ? right + 6 : left - 6,
              y, on_right ? "start" : "end", tick_label(t, ticks.back()).c_str());
  }
  p.svg += print(
      R"svg(<text class="label" transform="translate(%.0f %.0f) rotate(%d)" text-anchor="middle">%s</text>)svg",
      on_right ? svg_w - 10 : 14, (top + bottom) / 2, on_right ? 90 : -90, label);
}

std::string points(const plot& p, const std::vector<point>& data) {
  std::string s;
  for (const auto& [x, y] : data) s += print("%.1f,%.1f ", p.x(x), p.y(y));
  return s;
}

// A plot in its card; <title> and <desc> tell a screen reader what it shows.
std::string figure(const char* id, const char* heading, const char* caption, const std::string& desc,
                   const std::string& body) {
  return std::string("<figure><h2>") + heading + "</h2><figcaption>" + caption + "</figcaption>" +
         print(
             R"(<svg viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="%s-t %s-d"><title id="%s-t">%s</title>)",
             svg_w, svg_h, id, id, id, heading) +
         "<desc id=\"" + id + "-d\">" + html_escape(desc) + "</desc>" + body + "</svg></figure>\n";
}

std::string note(const char* heading, const char* text) {
  return std::string("<figure><h2>") + heading + "</h2><p class=\"note\">" + text + "</p></figure>\n";
}

// Labelled vertical lines; the labels step down so that close percentiles
// stay legible.
void percentile_marks(plot& p, const latency_histogram& latency) {
  const std::pair<const char*, double> marks[] = {{"p50", 0.5}, {"p99", 0.99}, {"p99.9", 0.999}};
  for (std::size_t i = 0; i < std::size(marks); ++i) {
    const double v = latency.percentile_ms(marks[i].second), x = p.x(v);
    const bool flip = x > right - 110;  // keep labels near the right edge inside the frame
    p.svg += print(R"(<line class="mark" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"/>)"
                   R"(<text class="mark-label" x="%.1f" y="%.0f" text-anchor="%s">%s %s ms</text>)",
                   x, x, top, bottom, flip ? x - 4 : x + 4, top + 16 + 19 * static_cast<double>(i),
                   flip ? "end" : "start", marks[i].first, format_number(v).c_str());
  }
}

// Percent of samples in each of at most 60 equal bins across the log axis.
// A bin is never narrower than a fine bucket (1.6 %), so the bars do not comb.
std::vector<double> display_bins(const std::vector<std::pair<double, std::uint64_t>>& buckets, const plot& p,
                                 double total) {
  const double decades = std::log10(p.x_hi / p.x_lo);
  const int bins = std::clamp(static_cast<int>(decades / std::log10(65.0 / 64)), 1, 60);
  std::vector<double> share(static_cast<std::size_t>(bins));
  for (const auto& [ms, n] : buckets) {
    const double at = std::log10(std::max(ms, p.x_lo) * (1 + 1.0 / 128) / p.x_lo) / decades;  // bucket middle
    share[static_cast<std::size_t>(std::clamp(static_cast<int>(at * bins), 0, bins - 1))] +=
        static_cast<double>(n) / total * 100;
  }
  return share;
}

// Bars show where deliveries fall, the line how many arrived by then.
std::string latency_plot(const latency_histogram& latency) {
  const auto buckets = latency.buckets_ms();
  if (buckets.empty()) return note("Latency distribution", "No deliveries were timed.");
  const double total = static_cast<double>(latency.count());
  // A log axis has no 0: it starts at the smallest positive bucket.
  const auto first = std::find_if(buckets.begin(), buckets.end(), [](const auto& b) { return b.first > 0; });
  const double lo = first == buckets.end() ? 1e-6 : first->first;
  const double hi = std::max({latency.summary().max_ms, buckets.back().first * 65 / 64, lo * 1.5});
  plot p{snap_log(lo, false), snap_log(hi, true), 0, 1, true, {}};
  const auto share = display_bins(buckets, p, total);
  // Headroom above the tallest bar for the percentile labels.
  const auto y_ticks = linear_ticks(*std::max_element(share.begin(), share.end()) * 1.25);
  p.y_hi = y_ticks.back();

  const auto pct = [&](double q) { return latency.percentile_ms(q); };
  const auto desc = print(
      "%s publish-to-receive latencies from %s to %s ms; p50 %s ms, p99 %s ms, p99.9 %s ms.",
      format_number(total).c_str(), format_number(p.x_lo).c_str(), format_number(p.x_hi).c_str(),
      format_number(pct(0.5)).c_str(), format_number(pct(0.99)).c_str(), format_number(pct(0.999)).c_str());
  y_axis(p, y_ticks, "share of deliveries (%)");
  y_axis(p, {0, 25, 50, 75, 100}, "cumulative (%)", true);
  x_axis(p, log_ticks(p.x_lo, p.x_hi), "latency (ms, log scale)");
  const double w = (right - left) / static_cast<double>(share.size());
  for (std::size_t i = 0; i < share.size(); ++i)
    if (share[i] > 0)
      p.svg += print(R"(<rect class="bar" x="%.1f" width="%.1f" y="%.1f" height="%.1f"/>)",
                     left + w * static_cast<double>(i) + 0.5, std::max(w - 1, 0.5), p.y(share[i]),
                     bottom - p.y(share[i]));
  // The CDF rises across each bucket, from its lower bound (where
  // percentile_ms puts a percentile) to the next: it crosses 50 % within a
  // bucket of the p50 line, and stays smooth where a step would bead.
  std::vector<point> cdf{{p.x_lo, 0}};
  double seen = 0;
  for (const auto& [ms, n] : buckets) {
    cdf.emplace_back(ms, seen / total * p.y_hi);
    seen += static_cast<double>(n);
  }
  cdf.emplace_back(buckets.back().first * 65 / 64, p.y_hi);
  cdf.emplace_back(p.x_hi, p.y_hi);
  p.svg += "<polyline class=\"cdf\" points=\"" + points(p, cdf) + "\"/>";
  percentile_marks(p, latency);
  return figure("lat", "Latency distribution",
                "Publish to receive. Bars: share of deliveries in each bin (left axis); line: share "
                "delivered within that time (right axis).",
                desc, p.svg);
}

// A line over time with a light area under it. Long runs are averaged down
// to at most 1000 points, which keeps the page small and the line readable.
std::string series_plot(const char* id, const char* heading, std::vector<double> values, double step_s,
                        const char* y_label, const char* unit, const char* colour) {
  if (step_s <= 0 || !std::isfinite(step_s)) return note(heading, "The sampling step was not positive.");
  if (const std::size_t k = (values.size() + 999) / 1000; k > 1) {
    std::vector<double> merged;
    for (std::size_t i = 0; i < values.size(); i += k) {
      const auto end = std::min(values.size(), i + k);
      double sum = 0;
      for (std::size_t j = i; j < end; ++j) sum += values[j];
      merged.push_back(sum / static_cast<double>(end - i));
    }
    values = std::move(merged);
    step_s *= static_cast<double>(k);
  }
  const double span = step_s * static_cast<double>(values.size());
  auto x_ticks = linear_ticks(span);  // time ends where the run did, not on a round tick
  if (x_ticks.back() > span * (1 + 1e-9)) x_ticks.pop_back();
  const auto y_ticks =
      linear_ticks(*std::max_element(values.begin(), values.end()) * 1.05);  // off the top edge
  plot p{0, span, 0, y_ticks.back(), false, {}};
  std::vector<point> line;
  for (std::size_t i = 0; i < values.size(); ++i)
    line.emplace_back(step_s * static_cast<double>(i + 1), values[i]);
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  y_axis(p, y_ticks, y_label);
  x_axis(p, x_ticks, "time since first publish (s)");
  p.svg += print(R"(<g fill="%s" stroke="%s">)", colour, colour) + "<polygon class=\"area\" points=\"" +
           points(p, {{line.front().first, 0}}) + points(p, line) + points(p, {{line.back().first, 0}}) +
           "\"/><polyline class=\"line\" points=\"" + points(p, line) + "\"/>";
  if (line.size() < 40)  // a short run is a few points; a dot shows each (and a lone one at all)
    for (const auto& [x, y] : line) p.svg += print(R"(<circle r="3" cx="%.1f" cy="%.1f"/>)", p.x(x), p.y(y));
  p.svg += "</g>";
  return figure(id, heading, print("Each point is one %s s step.", format_number(step_s).c_str()).c_str(),
                std::string(y_label) + " over " + format_number(span) + " s: from " + format_number(*lo) +
                    " to " + format_number(*hi) + " " + unit + ".",
                p.svg);
}

// The summary's figures worth a glance, in cards of related rows.
struct figure_row {
  const char* card;
  const char* key;
  const char* sub;  // for nested objects such as latency_ms
  const char* label;
  const char* unit;
};
constexpr figure_row figure_rows[] = {
    {"Throughput", "deliveries_per_s", nullptr, "Deliveries", "/s"},
    {"Throughput", "acks_per_s", nullptr, "Publish acks", "/s"},
    {"Throughput", "offered_rate", nullptr, "Offered rate", "/s"},
    {"Latency", "latency_ms", "p50", "p50", "ms"},
    {"Latency", "latency_ms", "p90", "p90", "ms"},
    {"Latency", "latency_ms", "p99", "p99", "ms"},
    {"Latency", "latency_ms", "p99.9", "p99.9", "ms"},
    {"Latency", "latency_ms", "max", "max", "ms"},
    {"Publish ack latency", "ack_latency_ms", "p50", "p50", "ms"},
    {"Publish ack latency", "ack_latency_ms", "p99", "p99", "ms"},
    {"Publish ack latency", "ack_latency_ms", "max", "max", "ms"},
    {"Run", "sessions", nullptr, "Sessions", ""},
    {"Run", "streams", nullptr, "Streams", ""},
    {"Run", "events", nullptr, "Events", ""},
    {"Run", "batch", nullptr, "Events per request", ""},
    {"Run", "payload_bytes", nullptr, "Payload", "bytes"},
    {"Run", "publishers", nullptr, "Publishers", ""},
    {"Run", "open_s", nullptr, "Sessions opened in", "s"},
    {"Cluster", "cluster", "nodes", "Nodes", ""},
    {"Cluster", "cluster", "publish_node", "Publishes on node", ""},
    {"Cluster", "cluster", "owner_node", "Stream owned by node", ""},
    {"Cluster", "cluster", "relay_feeds", "Relay feeds", ""},
    {"CPU", "node_cpu_s", nullptr, "Node (a cluster: all its nodes)", "s"},
    {"CPU", "client_cpu_s", nullptr, "Client", "s"},
};

// Green only when every check is present-and-zero; absent checks are not shown.
std::string correctness(const json& summary) {
  std::string parts;
  bool any = false, ok = true;
  for (const auto& [key, label] : {std::pair{"lost", "lost"},
                                   {"duplicates", "duplicates"},
                                   {"out_of_order", "out of order"},
                                   {"cursor_mismatches", "cursor mismatches"}}) {
    const json* v = field(summary, key);
    if (!v) continue;
    ok = ok && v->is_number() && v->get<double>() == 0;
    parts += std::string(any ? " &middot; " : "") + "<b>" + format_value(*v) + "</b> " + label;
    any = true;
  }
  if (!any) return "";
  return std::string("<p class=\"status ") +
         (ok ? "ok\">&#10003; Every delivery arrived once and in order: "
             : "bad\">&#10007; Deliveries went wrong: ") +
         parts + "</p>\n";
}

std::string figures_html(const json& summary) {
  std::string out = "<section class=\"cards\">\n", rows;
  for (std::size_t i = 0; i < std::size(figure_rows); ++i) {
    const auto& r = figure_rows[i];
    if (const json* v = field(summary, r.key, r.sub))
      rows += std::string("<tr><td>") + r.label + "</td><td class=\"v\">" + format_value(*v) +
              "<span class=\"u\">" + r.unit + "</span></td></tr>";
    const bool card_ends =
        i + 1 == std::size(figure_rows) || std::strcmp(figure_rows[i + 1].card, r.card) != 0;
    if (card_ends && !rows.empty())  // a card with nothing present is left out
      out += std::string("<div class=\"card\"><h3>") + r.card + "</h3><table>" + rows + "</table></div>\n";
    if (card_ends) rows.clear();
  }
  return out + "</section>\n";
}

// A cluster run's figures per node, one row each; empty for one node.
std::string nodes_html(const json& summary) {
  const json* nodes = field(summary, "cluster_nodes");
  if (!nodes || !nodes->is_array() || nodes->empty()) return "";
  std::string rows;
  for (const auto& n : *nodes) {
    const json* rss = field(n, "rss_bytes");
    const json* cpu = field(n, "cpu_s");
    rows += "<tr><td>" + format_value(n.value("node", json())) + "</td><td>" +
            format_value(n.value("id", json())) + "</td><td class=\"v\">" +
            format_value(n.value("sessions", json())) + "</td><td class=\"v\">" +
            (rss ? format_number(rss->get<double>() / 1048576.0) : "n/a") + "</td><td class=\"v\">" +
            (cpu ? format_value(*cpu) : "n/a") + "</td></tr>";
  }
  return "<figure><h2>Nodes</h2><table><tr><td>node</td><td>id</td><td class=\"v\">sessions</td>"
         "<td class=\"v\">RSS (MiB)</td><td class=\"v\">CPU (s)</td></tr>" +
         rows + "</table></figure>\n";
}

constexpr const char* style = R"(
*{box-sizing:border-box}
body{margin:0;background:#f5f6f8;color:#1f2933;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:960px;margin:0 auto;padding:28px 16px 40px} h2{margin:0;font-size:17px;font-weight:600}
.kicker{margin:0;color:#52606d;font-size:12px;letter-spacing:.08em;text-transform:uppercase}
h1{margin:2px 0 18px;font-size:26px;font-weight:600;overflow-wrap:anywhere} h1 span{color:#52606d;font-weight:400}
.status{margin:0 0 16px;padding:10px 14px;border-radius:8px}
.ok{background:#e7f5ec;color:#17613a;border:1px solid #b9e0c6}
.bad{background:#fdeceb;color:#a3231a;border:1px solid #f4c1bc}
.cards{columns:220px;column-gap:12px;margin-bottom:4px} .card{break-inside:avoid;margin-bottom:12px}
.card,figure{background:#fff;border:1px solid #e1e5ea;border-radius:10px;padding:12px 16px}
.card h3{margin:0 0 4px;color:#52606d;font-size:12px;font-weight:600;letter-spacing:.06em;text-transform:uppercase}
table{width:100%;border-collapse:collapse} td{padding:3px 0;border-top:1px solid #eef0f3}
tr:first-child td{border-top:0} td.v{text-align:right;white-space:nowrap;padding-left:12px}
.u{display:inline-block;min-width:2.6em;margin-left:4px;color:#7b8794;font-size:12px;text-align:left}
figure{margin:0 0 16px} figcaption,.note{margin:2px 0 8px;color:#52606d;font-size:13px}
svg{display:block;width:100%;height:auto} footer{color:#7b8794;font-size:12px}
svg text{font-family:inherit;font-size:12px;fill:#52606d;stroke:none} svg .label{fill:#323f4b;font-size:13px}
td.v,svg text{font-variant-numeric:tabular-nums} .grid{stroke:#e6e9ed} .axis{stroke:#9aa5b1}
.bar{fill:#0072b2;fill-opacity:.7} .cdf,.line{fill:none;stroke-width:2;stroke-linejoin:round}
.cdf{stroke:#d55e00} .area{fill-opacity:.12;stroke:none} .mark{stroke:#323f4b;stroke-dasharray:4 3}
svg .mark-label{fill:#1f2933;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}
@media (max-width:560px){svg text,svg .mark-label{font-size:16px} svg .label{font-size:17px}}
)";

}  // namespace

void write_html_report(const std::string& path, const nlohmann::json& summary,
                       const latency_histogram& latency, const run_series& series) {
  const json* scenario = field(summary, "scenario");
  const json* target = field(summary, "target");
  const std::string name = scenario ? format_value(*scenario) : "run";
  const std::string against = target ? " against " + format_value(*target) : "";

  std::vector<double> rates;  // series_plot notes a step that is not positive
  if (series.step_s > 0)
    for (const auto n : series.deliveries) rates.push_back(static_cast<double>(n) / series.step_s);
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>tidings-load: " +
      name + against + "</title>\n<style>" + style + "</style></head>\n<body><main>\n" +
      "<header><p class=\"kicker\">tidings-load report</p><h1>" + name + "<span>" + against +
      "</span></h1></header>\n" + correctness(summary) + figures_html(summary) + nodes_html(summary) +
      latency_plot(latency);
  page += series.deliveries.empty() ? note("Deliveries per second", "No deliveries were recorded over time.")
                                    : series_plot("dps", "Deliveries per second", rates, series.step_s,
                                                  "deliveries per second", "/s", "#0072b2");
  page +=
      series.node_rss_mib.empty()
          ? note("Node memory", "Memory was not sampled: give --pid or --tidingsd to follow the node's RSS.")
          : series_plot("rss", field(summary, "cluster") ? "Memory of all the nodes" : "Node memory",
                        series.node_rss_mib, series.step_s, "node RSS (MiB)", "MiB", "#00805c");
  page +=
      "<footer>Latencies come from a log-linear histogram: each is within 1.6 % of the true value.</footer>\n"
      "</main></body></html>\n";

  // Written beside the target and renamed over it, so a reader never sees
  // half a report.
  const std::string tmp = path + ".tmp";
  const auto fail = [&](const std::string& why) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write report " + path + ": " + why);
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(std::strerror(errno));
  const bool written = std::fwrite(page.data(), 1, page.size(), f) == page.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !written) fail(std::strerror(written ? errno : write_errno));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ec.message());
}

}  // namespace tidings::load
