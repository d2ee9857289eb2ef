#pragma once

// A request from outside an actor that blocks no thread: a short-lived
// actor sends it and hands the reply on.

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace tidings::cluster {

// Sends `message` to `target`; `done` gets the reply (a string, as every
// cluster reply is) or nullopt on an error or after `timeout`, on an actor
// thread.
void ask(caf::actor_system& system, caf::actor target, std::chrono::milliseconds timeout,
         caf::message message, std::function<void(std::optional<std::string>)> done);

}  // namespace tidings::cluster
