#include "cluster/ask.hpp"

namespace tidings::cluster {
namespace {

// Spawned with arguments on purpose: CAF 0.17 binds no arguments as a null
// tuple pointer that it dereferences (UBSan reports it).
void asker(caf::event_based_actor* self, const caf::actor& target, std::chrono::milliseconds timeout,
           caf::message message, const std::function<void(std::optional<std::string>)>& done) {
  self->request(target, timeout, std::move(message))
      .then([done](const std::string& reply) { done(reply); }, [done](caf::error&) { done(std::nullopt); });
}

}  // namespace

void ask(caf::actor_system& system, caf::actor target, std::chrono::milliseconds timeout,
         caf::message message, std::function<void(std::optional<std::string>)> done) {
  if (!target) return done(std::nullopt);
  system.spawn(asker, std::move(target), timeout, std::move(message), std::move(done));
}

}  // namespace tidings::cluster
