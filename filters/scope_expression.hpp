#pragma once

// A stream's `scope: expression`: a Lua 5.4 expression over the subscriber's
// claims and the event that decides whether the event is delivered to that
// subscriber's session. It runs for every event and every session of the
// stream on the broker's I/O threads, so each evaluation is bounded tightly
// (instructions, wall time, memory) and anything but a clean `true` denies.
//
// What the expression sees (read-only in spirit; see "Isolation"):
//   subscriber.principal_id   string, the token's sub
//   subscriber.roles          array of strings (1-based), likewise
//   subscriber.groups           .groups and .scopes
//   subscriber.scopes
//   subscriber.attributes     the claim object as Lua tables (JSON arrays are
//                             1-based arrays, null is nil); {} when null
//   event.stream, event.path, event.type   strings
// plus these helpers (a nil list counts as empty; another non-table is an
// error):
//   has(list, value)           true if some list[i] == value
//   has_any(list, v1, v2, ...) true if the list holds at least one of them
//   has_all(list, v1, v2, ...) true if the list holds every one of them
//   starts_with(s, prefix)     plain prefix test (no patterns); false if s is nil
// and Lua's base functions (no load/require/print/rawset/collectgarbage/_G)
// and the string, table, math and utf8 libraries, as in the filter sandbox
// (filters/sandbox.hpp), pattern functions included but capped lower.
//
// Examples:
//   has(subscriber.groups, "finance") and event.type ~= "DELETED"
//   starts_with(event.path, "/tenants/" .. subscriber.attributes.tenant .. "/")
//   has_any(subscriber.roles, "admin", "auditor") or subscriber.principal_id == "ops-bot"
//
// Compile checks: the text is Lua source (no bytecode) forming `return
// <expression>`; every global name it reads is one of the above (a typo such
// as `subscribr` or a name outside the sandbox such as `os` fails compile,
// not each event); it does not use `_ENV` itself.
//
// Isolation: each evaluation gets a clean global scope. A global the
// expression assigns (inside a function literal) lives for that evaluation
// only; the library tables are read-only; `subscriber` and `event` are
// built afresh for each evaluation, so changing them affects nothing after.
// subscriber's lists and attributes are built on first use, so an expression
// pays only for the fields it reads (pairs(subscriber) lists only those
// read so far; its metatable is protected).
//
// Not thread-safe: the broker keeps one instance per I/O thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidings::filters {

class sandbox;

struct scope_subject {
  std::string principal_id;  // the token's sub
  std::vector<std::string> roles, groups, scopes;
  nlohmann::json attributes = nlohmann::json::object();  // arbitrary claim object
};

struct scope_event {
  std::string_view stream, path, type;
};

struct scope_limits {
  std::uint64_t max_instructions = 100000;  // per evaluation
  // Wall time per evaluation: a backstop only. The instruction count is the
  // real bound; at 5 ms a preempted I/O thread denied events under load.
  std::chrono::milliseconds budget{50};
  std::size_t max_memory_bytes = 4 << 20;  // the whole Lua state
};

class scope_expression {
 public:
  // The expression is the body of `return <expression>`; nullptr and a clear
  // message (with Lua's own error text) when it does not compile, uses a
  // global outside the sandbox, or is bytecode. Messages start `scope:`
  // (`scope:1: unexpected symbol near '='`).
  static std::unique_ptr<scope_expression> compile(const std::string& expression, const scope_limits& limits,
                                                   std::string* error);
  ~scope_expression();
  scope_expression(const scope_expression&) = delete;
  scope_expression& operator=(const scope_expression&) = delete;

  // true: deliver. Any runtime error or exceeded budget counts as false
  // (deny) and is kept in last_error(). A non-boolean result is an error too
  // (say so), not truthiness. After a budget or memory error the Lua state is
  // rebuilt at the next call.
  bool admits(const scope_subject& subscriber, const scope_event& event);

  // Why the last admits() denied by error; empty when it evaluated cleanly.
  const std::string& last_error() const;

  // Bytes the Lua state holds now (0 between an abort and the rebuild).
  std::size_t memory_used() const;

 private:
  scope_expression(std::string source, const scope_limits& limits);
  // A fresh sandbox with the expression compiled and checked and the scope's
  // globals in place; nullptr with *error set.
  std::unique_ptr<sandbox> build(std::string* error) const;

  std::string source_;  // the chunk: the expression behind a fixed prefix
  scope_limits limits_;
  std::unique_ptr<sandbox> box_;  // null after an abort until the next admits()
  std::string last_error_;
};

}  // namespace tidings::filters
