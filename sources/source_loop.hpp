#pragma once

// The sources thread: one io_context on which every connector and upstream
// runs (sources/upstream.hpp). One thread is plenty: connectors wait on
// sockets, pipes and inotify descriptors and do little work per wake-up.

#include <functional>
#include <memory>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "sources/catalog.hpp"

namespace tidings::sources {

class source_loop {
 public:
  using connector_factory = std::function<std::vector<std::unique_ptr<connector>>(boost::asio::io_context&)>;
  // The connectors are made for (and run on) this loop's io_context.
  explicit source_loop(const connector_factory& make);
  ~source_loop();  // stop()
  source_loop(const source_loop&) = delete;
  source_loop& operator=(const source_loop&) = delete;

  boost::asio::io_context& context() { return ioc_; }
  // Used on the sources thread only.
  catalog& upstreams() { return catalog_; }

  void start();
  // Stops every connector on the sources thread, then ends the thread once
  // what they closed has finished (bounded), and joins it. Idempotent.
  void stop();

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  catalog catalog_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace tidings::sources
