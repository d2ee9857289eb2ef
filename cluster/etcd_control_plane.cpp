#include "cluster/etcd_control_plane.hpp"

#include <boost/asio/post.hpp>

namespace tidings::cluster {

etcd_control_plane::etcd_control_plane(std::vector<std::string> endpoints, std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds watch_idle,
                                       std::shared_ptr<net::tls_context> tls)
    : work_(boost::asio::make_work_guard(ioc_)),
      client_(net::etcd_client::make(ioc_, std::move(endpoints), timeout, std::move(tls))),
      watch_idle_(watch_idle),
      thread_([this] { ioc_.run(); }) {}

etcd_control_plane::~etcd_control_plane() {
  stop();
}

template <class F>
void etcd_control_plane::on_io(F&& f) {
  boost::asio::post(ioc_, std::forward<F>(f));
}

void etcd_control_plane::grant(std::int64_t ttl_seconds,
                               std::function<void(std::string, std::int64_t, std::int64_t)> done) {
  on_io([this, ttl_seconds, done = std::move(done)]() mutable {
    client_->grant_lease(ttl_seconds, [done = std::move(done)](std::string error, net::etcd_lease lease) {
      done(std::move(error), lease.id, lease.ttl_seconds);
    });
  });
}

void etcd_control_plane::keep_alive(std::int64_t lease, std::function<void(std::string, std::int64_t)> done) {
  on_io([this, lease, done = std::move(done)]() mutable {
    client_->keep_alive(lease, [done = std::move(done)](std::string error, net::etcd_lease l) {
      done(std::move(error), l.ttl_seconds);
    });
  });
}

void etcd_control_plane::revoke(std::int64_t lease, std::function<void(std::string)> done) {
  on_io([this, lease, done = std::move(done)]() mutable {
    client_->revoke_lease(lease,
                          [done = std::move(done)](std::string error, bool) { done(std::move(error)); });
  });
}

void etcd_control_plane::put(std::string key, std::string value, std::int64_t lease,
                             std::function<void(std::string)> done) {
  on_io([this, key = std::move(key), value = std::move(value), lease, done = std::move(done)]() mutable {
    client_->put(std::move(key), std::move(value), lease,
                 [done = std::move(done)](std::string error, std::int64_t) { done(std::move(error)); });
  });
}

void etcd_control_plane::list(std::string prefix,
                              std::function<void(std::string, std::vector<plane_kv>, std::int64_t)> done) {
  on_io([this, prefix = std::move(prefix), done = std::move(done)]() mutable {
    auto end = net::etcd_prefix_end(prefix);
    client_->range(std::move(prefix), std::move(end),
                   [done = std::move(done)](std::string error, net::etcd_range_result r) {
                     std::vector<plane_kv> kvs;
                     for (auto& kv : r.kvs) kvs.push_back({std::move(kv.key), std::move(kv.value)});
                     done(std::move(error), std::move(kvs), r.revision);
                   });
  });
}

void etcd_control_plane::get(std::string key, std::function<void(std::string, plane_record)> done) {
  on_io([this, key = std::move(key), done = std::move(done)]() mutable {
    client_->range(std::move(key), "", [done = std::move(done)](std::string error, net::etcd_range_result r) {
      plane_record out;
      if (error.empty() && !r.kvs.empty())
        out = {true, std::move(r.kvs.front().value), r.kvs.front().mod_revision};
      done(std::move(error), std::move(out));
    });
  });
}

void etcd_control_plane::swap(std::string key, std::int64_t expected_revision, std::string value,
                              std::function<void(std::string, bool, plane_record)> done) {
  on_io([this, key = std::move(key), expected_revision, value = std::move(value),
         done = std::move(done)]() mutable {
    // An absent key has mod revision 0, so one compare covers "create".
    net::etcd_compare unchanged{key, net::etcd_compare::target::mod_revision, expected_revision, {}};
    net::etcd_op write{net::etcd_op::kind::put, key, value, 0, {}};
    net::etcd_op read{net::etcd_op::kind::range, key, {}, 0, {}};
    client_->txn({unchanged}, {write}, {read},
                 [done = std::move(done), value](std::string error, net::etcd_txn_result r) mutable {
                   plane_record now;
                   if (!error.empty()) return done(std::move(error), false, now);
                   if (r.succeeded) {
                     now = {true, std::move(value), r.revision};
                   } else if (!r.ranges.empty() && !r.ranges.front().empty()) {
                     auto& kv = r.ranges.front().front();
                     now = {true, std::move(kv.value), kv.mod_revision};
                   }
                   done({}, r.succeeded, std::move(now));
                 });
  });
}

void etcd_control_plane::watch(std::string prefix, std::int64_t after_revision,
                               std::function<void(std::vector<plane_change>, std::int64_t)> changed,
                               std::function<void(std::string)> ended) {
  on_io([this, prefix = std::move(prefix), after_revision, changed = std::move(changed),
         ended = std::move(ended)]() mutable {
    if (watch_) watch_->cancel();
    auto generation = ++watch_generation_;
    net::etcd_watch_handlers h;
    h.events = [changed](const std::vector<net::etcd_event>& events, std::int64_t revision) {
      std::vector<plane_change> out;
      out.reserve(events.size());
      for (const auto& e : events)
        out.push_back({e.deleted, e.kv.key, e.deleted ? std::string{} : e.kv.value});
      changed(std::move(out), revision);
    };
    h.end = [this, generation, ended](std::string error) {
      if (generation == watch_generation_) watch_.reset();
      ended(std::move(error));
    };
    auto end = net::etcd_prefix_end(prefix);
    watch_ = client_->watch(std::move(prefix), std::move(end), after_revision + 1, std::move(h), watch_idle_);
  });
}

void etcd_control_plane::stop() {
  if (!thread_.joinable()) return;
  on_io([this] {
    ++watch_generation_;
    if (watch_) watch_->cancel();
    watch_.reset();
    client_->cancel_all();
    work_.reset();
    // Pending retry pauses need not run: nobody waits for their answers.
    ioc_.stop();
  });
  thread_.join();
}

}  // namespace tidings::cluster
