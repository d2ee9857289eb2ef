#include "sources/source_loop.hpp"

#include <boost/asio/post.hpp>
#include <future>

#include "logging/log.hpp"

namespace tidings::sources {

source_loop::source_loop(const connector_factory& make)
    : work_(boost::asio::make_work_guard(ioc_)), catalog_(ioc_, make(ioc_)) {}

source_loop::~source_loop() {
  stop();
}

void source_loop::start() {
  thread_ = std::thread([this] {
    // A connector bug that throws must neither end the thread (every later
    // subscribe would wait forever) nor go unnoticed.
    for (;;) {
      try {
        ioc_.run();
        return;
      } catch (const std::exception& e) {
        logging::error("source.loop_exception", {{"error", e.what()}});
      }
    }
  });
}

void source_loop::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!thread_.joinable()) {
    catalog_.stop();
    return;
  }
  std::promise<void> stopped;
  auto done = stopped.get_future();
  boost::asio::post(ioc_, [this, &stopped] {
    catalog_.stop();
    stopped.set_value();
  });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    logging::warn("source.stop_timeout", {{"waited_ms", std::int64_t{10000}}});
  work_.reset();
  // Closing handlers may still run (a child reaped, a socket closed); the
  // context then runs out of work. Past a short wait it is stopped outright.
  auto finish = std::async(std::launch::async, [this] { thread_.join(); });
  if (finish.wait_for(std::chrono::seconds(3)) != std::future_status::ready) {
    ioc_.stop();
    finish.wait();
  }
}

}  // namespace tidings::sources
