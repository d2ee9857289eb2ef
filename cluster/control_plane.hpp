#pragma once

// What the membership actor needs of the cluster's agreed record: leases,
// puts, a listing and a watch under a prefix. An interface so that the
// actor's test drives every step on CAF's test coordinator; the node runs
// it on etcd (etcd_control_plane.hpp, ADR 0022).
//
// Callbacks may run on any thread (the actor turns each into a message).
// Nothing is called back after stop().

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tidings::cluster {

struct plane_kv {
  std::string key;
  std::string value;
};

// One key as the store holds it now.
struct plane_record {
  bool found = false;
  std::string value;
  std::int64_t mod_revision = 0;  // the revision that last changed it (0: absent)
};

struct plane_change {
  bool deleted = false;
  std::string key;
  std::string value;  // "" for a delete
};

class control_plane {
 public:
  virtual ~control_plane() = default;

  // A lease of ttl_seconds; the TTL granted (the store may raise it).
  virtual void grant(std::int64_t ttl_seconds,
                     std::function<void(std::string error, std::int64_t lease, std::int64_t ttl)> done) = 0;
  // Renews a lease: its TTL from now, 0 when the lease is gone.
  virtual void keep_alive(std::int64_t lease,
                          std::function<void(std::string error, std::int64_t ttl)> done) = 0;
  virtual void revoke(std::int64_t lease, std::function<void(std::string error)> done) = 0;
  // A put bound to `lease` (deleted with it).
  virtual void put(std::string key, std::string value, std::int64_t lease,
                   std::function<void(std::string error)> done) = 0;
  // Every key under prefix, with the revision the read saw.
  virtual void list(
      std::string prefix,
      std::function<void(std::string error, std::vector<plane_kv> kvs, std::int64_t revision)> done) = 0;
  // One key and the revision that last changed it.
  virtual void get(std::string key, std::function<void(std::string error, plane_record)> done) = 0;
  // Writes value only if the key was last changed at expected_revision (0:
  // only if it is absent). Answers whether it did, and the key as it is
  // now: the new record, or the one that won meanwhile.
  virtual void swap(std::string key, std::int64_t expected_revision, std::string value,
                    std::function<void(std::string error, bool swapped, plane_record now)> done) = 0;
  // Changes under prefix after `after_revision`, in revision order, until
  // `ended` (at most once). A new watch replaces the one before; nothing of
  // the old one is called after that.
  virtual void watch(std::string prefix, std::int64_t after_revision,
                     std::function<void(std::vector<plane_change> changes, std::int64_t revision)> changed,
                     std::function<void(std::string error)> ended) = 0;
  // Ends every call and the watch.
  virtual void stop() = 0;
};

}  // namespace tidings::cluster
