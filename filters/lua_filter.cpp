#include "filters/lua_filter.hpp"

#include <array>
#include <string_view>
#include <utility>

#include "filters/sandbox.hpp"

namespace tidings::filters {

namespace {

// The dry-run rule. A failure on the sample is forgiven only when it says the
// sample lacked a key, i.e. Lua's runtime error for using nil where the nil
// came from a field, a local, an upvalue, a constant or an unnamed
// expression:
//   attempt to index / concatenate / perform arithmetic on / perform bitwise
//     operation on / get length of  a nil value  [(field|local|upvalue|constant 'x')]
//   attempt to compare nil with number / number with nil / two nil values
//   bad argument #1 to 'for iterator' (table expected, got nil)  -- pairs(nil)
// with or without the `on_event:<line>: ` prefix (ipairs(nil) fails inside
// the library, where there is no line).
// Never forgiven: anything naming a global (`(global 'fmt')`, an undefined
// name, Python's NameError), calling a nil value (a misspelt function or
// method), errors the filter raises itself (`error("boom")`), other runtime
// errors, and sandbox, budget and memory errors (the abort reason or their
// own wording rules those out first).
bool is_missing_key_error(std::string_view text) {
  if (text.find("(global '") != std::string_view::npos) return false;
  // The runtime's position prefix, `on_event:<line>: `; errors raised inside a
  // library function (ipairs indexing nil) come without one.
  std::string_view message = text;
  constexpr std::string_view prefix = "on_event:";
  if (text.substr(0, prefix.size()) == prefix) {
    std::size_t i = prefix.size();
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == prefix.size() || text.substr(i, 2) != ": ") return false;
    message = text.substr(i + 2);
  }
  const auto starts = [&](std::string_view s) { return message.substr(0, s.size()) == s; };
  const auto ends = [&](std::string_view s) {
    return message.size() >= s.size() && message.substr(message.size() - s.size()) == s;
  };

  constexpr std::array<std::string_view, 5> operations = {
      "attempt to index a nil value", "attempt to concatenate a nil value",
      "attempt to perform arithmetic on a nil value", "attempt to perform bitwise operation on a nil value",
      "attempt to get length of a nil value"};
  constexpr std::array<std::string_view, 4> kinds = {" (field '", " (local '", " (upvalue '", " (constant '"};
  for (const std::string_view operation : operations) {
    if (!starts(operation)) continue;
    const std::string_view rest = message.substr(operation.size());
    if (rest.empty()) return true;  // an unnamed expression
    for (const std::string_view kind : kinds) {
      if (rest.substr(0, kind.size()) == kind && ends("')")) return true;
    }
    return false;
  }
  if (message == "attempt to compare two nil values") return true;
  if (starts("attempt to compare nil with ")) return true;
  if (starts("attempt to compare ") && ends(" with nil")) return true;
  return starts("bad argument #") && ends(" expected, got nil)");
}

}  // namespace

struct lua_filter::impl {
  std::string source;
  filter_limits limits;
  resource_reader* reader = nullptr;
  std::unique_ptr<sandbox> box;  // null after an abort until the next run rebuilds it
};

std::unique_ptr<lua_filter> lua_filter::compile(std::string_view source, filter_limits limits,
                                                resource_reader* reader, std::string* error) {
  auto box = sandbox::create(source, limits, reader, error);
  if (!box) return nullptr;
  std::unique_ptr<lua_filter> filter(new lua_filter());
  filter->impl_ = std::make_unique<impl>();
  filter->impl_->source = std::string(source);
  filter->impl_->limits = limits;
  filter->impl_->reader = reader;
  filter->impl_->box = std::move(box);
  return filter;
}

lua_filter::~lua_filter() = default;

filter_result lua_filter::run(const nlohmann::json& event) {
  if (!impl_->box) {
    std::string error;
    impl_->box = sandbox::create(impl_->source, impl_->limits, impl_->reader, &error);
    if (!impl_->box) return {filter_result::outcome::error, std::move(error)};
  }
  sandbox::outcome out = impl_->box->run(event);
  // A runaway run may have left the state half-updated or at its memory cap.
  if (out.abort != abort_reason::none) impl_->box.reset();
  return std::move(out.result);
}

std::optional<std::string> lua_filter::dry_run(const nlohmann::json& sample) {
  std::string error;
  auto box = sandbox::create(impl_->source, impl_->limits, impl_->reader, &error);
  if (!box) return error;
  sandbox::outcome out = box->run(sample);
  if (out.result.what != filter_result::outcome::error) return std::nullopt;
  if (out.abort == abort_reason::none && is_missing_key_error(out.result.text)) return std::nullopt;
  return std::move(out.result.text);
}

}  // namespace tidings::filters
