#pragma once

// A watch manager for the deterministic tests of the cluster's watch
// actors: it keeps every request, and the test answers them (each request
// carries its reply callback).

#include <memory>
#include <vector>

#include "actors/watch_actors.hpp"

namespace tidings::testing {

struct manager_log {
  std::vector<actors::watch_start_request_ptr> starts;
  std::vector<actors::watch_list_request_ptr> lists;
  std::vector<actors::watch_stop_request_ptr> stops;
  std::vector<actors::watch_specs_request_ptr> specs;
  std::vector<actors::watch_release_request_ptr> releases;
  std::vector<actors::watch_restore_plan_ptr> restores;
};

inline actors::watch_manager_actor::behavior_type fake_manager(actors::watch_manager_actor::pointer,
                                                               const std::shared_ptr<manager_log>& log) {
  return {
      [log](actors::start_atom, const actors::watch_start_request_ptr& r) { log->starts.push_back(r); },
      [log](actors::list_atom, const actors::watch_list_request_ptr& r) { log->lists.push_back(r); },
      [log](actors::stop_atom, const actors::watch_stop_request_ptr& r) { log->stops.push_back(r); },
      [log](actors::restore_atom, const actors::watch_restore_plan_ptr& p) { log->restores.push_back(p); },
      [log](actors::specs_atom, const actors::watch_specs_request_ptr& r) { log->specs.push_back(r); },
      [log](actors::release_atom, const actors::watch_release_request_ptr& r) { log->releases.push_back(r); },
      [](actors::task_atom, const actors::actor_task&) {},
      [](actors::shutdown_atom) {},
  };
}

}  // namespace tidings::testing
