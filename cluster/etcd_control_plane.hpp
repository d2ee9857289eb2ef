#pragma once

// The control plane on etcd (ADR 0020, 0022): net::etcd_client on an
// io_context and thread of its own, so the node's HTTP threads and actors
// never wait for etcd. Every call is posted to that thread.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "cluster/control_plane.hpp"
#include "net/etcd_client.hpp"

namespace tidings::cluster {

class etcd_control_plane final : public control_plane {
 public:
  // endpoints: http[s]://host:port of etcd's members; tls their context
  // (null: the system store). watch_idle: a watch that hears nothing (not
  // even a progress notice) for this long ends, so one whose member went
  // silent is replaced.
  etcd_control_plane(std::vector<std::string> endpoints, std::chrono::milliseconds timeout,
                     std::chrono::milliseconds watch_idle, std::shared_ptr<net::tls_context> tls = nullptr);
  ~etcd_control_plane() override;

  void grant(std::int64_t ttl_seconds,
             std::function<void(std::string, std::int64_t, std::int64_t)> done) override;
  void keep_alive(std::int64_t lease, std::function<void(std::string, std::int64_t)> done) override;
  void revoke(std::int64_t lease, std::function<void(std::string)> done) override;
  void put(std::string key, std::string value, std::int64_t lease,
           std::function<void(std::string)> done) override;
  void list(std::string prefix,
            std::function<void(std::string, std::vector<plane_kv>, std::int64_t)> done) override;
  void get(std::string key, std::function<void(std::string, plane_record)> done) override;
  void swap(std::string key, std::int64_t expected_revision, std::string value,
            std::function<void(std::string, bool, plane_record)> done) override;
  void watch(std::string prefix, std::int64_t after_revision,
             std::function<void(std::vector<plane_change>, std::int64_t)> changed,
             std::function<void(std::string)> ended) override;
  void stop() override;

 private:
  template <class F>
  void on_io(F&& f);

  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::shared_ptr<net::etcd_client> client_;
  std::chrono::milliseconds watch_idle_;
  std::shared_ptr<net::http_call> watch_;  // io thread only
  std::uint64_t watch_generation_ = 0;     // io thread only
  std::thread thread_;
};

}  // namespace tidings::cluster
