#include "broker/live_files.hpp"

#include "web/assets.hpp"

namespace tidings::broker {

namespace {

// The page loads only its own files and talks only to this node; nothing
// inline runs, so an injected string cannot become script (ADR 0013).
constexpr const char* content_security_policy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// An ETag list ("a", "b") or "*" names the file.
bool matches(std::string_view if_none_match, std::string_view etag) {
  return if_none_match == "*" || if_none_match.find(etag) != std::string_view::npos;
}

http_response file_response(unsigned status, const web::asset& a) {
  // Revalidated on every load (a 304 costs one round trip), so a node
  // upgrade reaches every browser at its next page load.
  return http_response{status,
                       status == 200 ? std::string(a.body) : std::string(),
                       std::string(a.content_type),
                       {{"ETag", std::string(a.etag)},
                        {"Cache-Control", "no-cache"},
                        {"X-Content-Type-Options", "nosniff"},
                        {"Referrer-Policy", "no-referrer"},
                        {"Content-Security-Policy", content_security_policy}},
                       {},
                       {}};
}

}  // namespace

std::optional<http_response> serve_live_file(const http_request& req) {
  const std::string_view path = req.path;
  if (path != "/live" && !path.starts_with("/live/")) return std::nullopt;
  if (req.method != "GET" && req.method != "HEAD") {
    auto r = error_response(405, "the live view's files are read with GET");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  if (path == "/live") {
    // Relative URLs in the page resolve against /live/, not /.
    auto r = json_response(308, nlohmann::json{{"location", "/live/"}});
    r.headers.emplace_back("Location", "/live/");
    return r;
  }
  const auto* a = web::find_asset(path);
  if (!a) return error_response(404, "no such file in the live view: " + std::string(path.substr(0, 200)));
  if (const auto* inm = req.header("if-none-match"); inm && matches(*inm, a->etag))
    return file_response(304, *a);
  return file_response(200, *a);
}

}  // namespace tidings::broker
