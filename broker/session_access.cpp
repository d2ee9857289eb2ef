#include "broker/session_access.hpp"

#include <array>
#include <unordered_map>

namespace tidings::broker {
namespace {

using json = nlohmann::json;

// Sessions of one I/O thread see the same frames one after another, so the
// parsed event is kept per thread for the last few frames. The address and
// seq only find a candidate: a freed frame's address can be reused by
// another tenant's frame of the same seq, so a hit also needs the same bytes
// (which carry stream, cursor and content).
const json& parsed_event(const core::sse_frame& f) {
  struct entry {
    const core::sse_frame* frame = nullptr;
    std::uint64_t seq = 0;
    std::string bytes;
    json value;
  };
  thread_local std::array<entry, 64> cache;
  thread_local std::size_t next = 0;
  for (auto& e : cache)
    if (e.frame == &f && e.seq == f.seq && e.bytes == f.bytes) return e.value;
  auto& e = cache[next++ % cache.size()];
  e.frame = &f;
  e.seq = f.seq;
  e.bytes = f.bytes;
  // "data: {...}\n\n": event JSON is compact, so it is one data line.
  auto body = f.body();
  if (body.starts_with("data: ")) body.remove_prefix(6);
  while (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  e.value = json::parse(body, nullptr, false);
  return e.value;
}

// One compiled expression per thread and text: Lua states are not shared
// between threads, and sessions of a thread take turns.
filters::scope_expression* expression_for(const std::string& text) {
  thread_local std::unordered_map<std::string, std::unique_ptr<filters::scope_expression>> compiled;
  auto it = compiled.find(text);
  if (it == compiled.end()) {
    std::string error;
    it = compiled.emplace(text, filters::scope_expression::compile(text, filters::scope_limits{}, &error))
             .first;
  }
  return it->second.get();
}

bool subject_matches(const json& field, const std::string& subject) {
  if (field.is_string()) return field.get_ref<const std::string&>() == subject;
  if (field.is_array())
    for (const auto& v : field)
      if (v.is_string() && v.get_ref<const std::string&>() == subject) return true;
  return false;
}

}  // namespace

std::optional<std::string> compile_scopes(const std::vector<tenant_spec>& tenants) {
  for (std::size_t t = 0; t < tenants.size(); ++t)
    for (std::size_t i = 0; i < tenants[t].scopes.size(); ++i) {
      const auto& s = tenants[t].scopes[i];
      if (s.kind != scope_kind::expression) continue;
      std::string error;
      if (!filters::scope_expression::compile(s.expression, filters::scope_limits{}, &error))
        return "tenants[" + std::to_string(t) + "].notification_scopes[" + std::to_string(i) +
               "].expression: " + error;
    }
  return std::nullopt;
}

const notification_scope* scope_for(const tenant_spec& tenant, std::string_view stream) {
  for (const auto& s : tenant.scopes) {
    core::grant as_glob;
    as_glob.stream = s.stream;
    if (core::grant_matches_stream(as_glob, stream)) return &s;
  }
  return nullptr;
}

session_access::session_access(session_auth_ptr auth, const auth_service& service,
                               const std::vector<std::string>& streams)
    : auth_(std::move(auth)), service_(service) {
  auto tenants = service_.tenants();
  const tenant_spec* tenant = auth_->anonymous ? nullptr : tenants->find(auth_->who.tenant);
  for (const auto& name : streams) {
    per_stream s;
    s.read = auth_->who.read.for_stream(name);
    s.whole = s.read.whole_stream();
    if (tenant)
      if (auto* scope = scope_for(*tenant, name)) s.scope = *scope;
    streams_.push_back(std::move(s));
  }
  subject_.principal_id = auth_->who.subject;
  subject_.roles = auth_->who.roles;
  subject_.groups = auth_->who.groups;
  subject_.scopes = auth_->who.scopes;
  subject_.attributes = auth_->who.attributes;
}

bool session_access::admits(std::size_t index, std::string_view stream, const core::sse_frame& f) {
  if (index >= streams_.size()) return false;
  const auto& s = streams_[index];
  if (!s.whole && !s.read.covers_path(f.path)) return false;
  if (!s.scope) return true;
  const auto& event = parsed_event(f);
  if (!event.is_object()) return false;
  if (s.scope->kind == scope_kind::subject) {
    auto ptr = json::json_pointer(s.scope->field);
    return event.contains(ptr) && subject_matches(event.at(ptr), auth_->who.subject);
  }
  auto* expr = expression_for(s.scope->expression);
  if (!expr) return false;
  auto type = event.value("type", std::string());
  return expr->admits(subject_, filters::scope_event{stream, f.path, type});
}

// A whole-stream grant with no notification scope: the common case, decided
// once (streams_ never changes; a revoked or expired credential ends the
// session through recheck(), not through admits()).
bool session_access::admits_all(std::size_t index) const {
  return index < streams_.size() && streams_[index].whole && !streams_[index].scope;
}

std::chrono::system_clock::time_point session_access::expires_at() const {
  using tp = std::chrono::system_clock::time_point;
  // exp as far as 9999-12-31 is common for "never"; past what a time_point
  // holds (year 2262) it is never.
  const auto last = std::chrono::duration_cast<std::chrono::seconds>(tp::max().time_since_epoch()).count();
  if (auth_->anonymous || auth_->who.expires_at >= last) return tp::max();
  return tp(std::chrono::seconds(auth_->who.expires_at));
}

std::optional<relay::auth_lapse> session_access::recheck() {
  return service_.recheck(*auth_);
}

}  // namespace tidings::broker
