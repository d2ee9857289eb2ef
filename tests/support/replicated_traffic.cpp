#include "tests/support/replicated_traffic.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "client/sse_client.hpp"
#include "tests/support/publishing.hpp"

namespace tidings::testing {

using nlohmann::json;

steady_publisher::steady_publisher(std::vector<client::endpoint> targets, std::string stream, int first,
                                   int count, int rate, int connections, std::chrono::milliseconds retry_for)
    : targets_(std::move(targets)),
      stream_(std::move(stream)),
      first_(first),
      count_(count),
      rate_(std::max(rate, 1)),
      connections_(std::max(connections, 1)),
      start_(std::chrono::steady_clock::now()),
      retry_for_(retry_for) {
  for (int lane = 0; lane < connections_; ++lane) threads_.emplace_back([this, lane] { run(lane); });
}

steady_publisher::~steady_publisher() {
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void steady_publisher::run(int lane) {
  using clock = std::chrono::steady_clock;
  std::size_t target = 0;
  std::optional<client::http_connection> conn;
  std::string failure;
  for (int n = lane; n < count_ && !stop_ && failure.empty(); n += connections_) {
    const int i = first_ + n;
    // Pacing, not waiting for a condition: the offered rate is the test's input.
    std::this_thread::sleep_until(start_ + std::chrono::microseconds(1'000'000LL * n / rate_));
    const auto body = event_json("/e", "ADDED", json{{"i", i}});
    const client::header_list headers{{"Content-Type", "application/json"},
                                      {"Idempotency-Key", stream_ + "-" + std::to_string(i)}};
    const auto began = clock::now();
    const auto give_up = began + retry_for_;
    for (bool first_try = true;; first_try = false) {
      if (!first_try) ++retries_;
      if (clock::now() > give_up) {
        failure = "event " + std::to_string(i) + " was not acknowledged within the retry time";
        break;
      }
      try {
        if (!conn) conn.emplace(targets_[target], std::chrono::seconds(10));
        auto r = conn->request("POST", events_target(stream_), body, headers);
        // 200: a retry whose first try was stored, answered with its cursor.
        if (r.status == 201 || r.status == 200) {
          std::lock_guard lock(mutex_);
          acked_[i] = parse_body(r).value("cursor", "");
          longest_ =
              std::max(longest_, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - began));
          changed_.notify_all();
          break;
        }
        if (r.status != 503) {
          failure = "event " + std::to_string(i) + ": status " + std::to_string(r.status) + " " + r.body;
          break;
        }
      } catch (const client::transport_error&) {
        // The node is gone (or the reply was lost): the same key elsewhere.
        conn.reset();
        target = (target + 1) % targets_.size();
      }
      // Bounded back-off before the retry (the cluster is re-placing the stream).
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::lock_guard lock(mutex_);
  if (failure_.empty()) failure_ = failure;
  ++lanes_done_;
  changed_.notify_all();
}

bool steady_publisher::await_acknowledged(int n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return static_cast<int>(acked_.size()) >= n || lanes_done_ == connections_;
  }) && static_cast<int>(acked_.size()) >= n;
}

bool steady_publisher::join(std::chrono::milliseconds timeout) {
  {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return lanes_done_ == connections_; })) return false;
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard lock(mutex_);
  return failure_.empty() && static_cast<int>(acked_.size()) == count_;
}

std::map<int, std::string> steady_publisher::acknowledged() const {
  std::lock_guard lock(mutex_);
  return acked_;
}

std::chrono::milliseconds steady_publisher::longest_wait() const {
  std::lock_guard lock(mutex_);
  return longest_;
}

std::string steady_publisher::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

stream_reader::stream_reader(std::vector<client::endpoint> targets, std::string stream, std::string since,
                             std::size_t expected, std::chrono::milliseconds deadline, bool follow_closing,
                             std::function<bool(const data_event&)> last)
    : targets_(std::move(targets)),
      stream_(std::move(stream)),
      since_(std::move(since)),
      expected_(expected),
      deadline_(std::chrono::steady_clock::now() + deadline),
      follow_closing_(follow_closing),
      last_(std::move(last)),
      thread_([this] { run(); }) {}

stream_reader::~stream_reader() {
  if (thread_.joinable()) thread_.join();
}

void stream_reader::run() {
  std::string last_id;
  std::size_t target = 0;
  bool first = true;
  while (std::chrono::steady_clock::now() < deadline_) {
    std::unique_ptr<client::sse_stream> s;
    try {
      client::header_list headers;
      if (!last_id.empty()) headers.emplace_back("Last-Event-ID", last_id);
      s = std::make_unique<client::sse_stream>(targets_[target],
                                               sse_target({stream_}, last_id.empty() ? since_ : ""), headers,
                                               std::chrono::seconds(5));
      await_hello(*s);
    } catch (const std::exception& e) {
      if (first) {
        std::lock_guard lock(mutex_);
        start_error_ = e.what();
        started_cv_.notify_all();
        return;
      }
      // That node is gone: the next one.
      target = (target + 1) % targets_.size();
      ++reconnects_;
      continue;
    }
    if (first) {
      std::lock_guard lock(mutex_);
      started_ = true;
      started_cv_.notify_all();
      first = false;
    }
    for (;;) {
      std::size_t have;
      {
        std::lock_guard lock(mutex_);
        have = events_.size();
      }
      if (have >= expected_) return;
      auto left = detail::left_until(deadline_);
      if (left.count() <= 0) return;
      // With `last`, one at a time: each one may end the reading.
      auto got = collect_data_events(*s, last_ ? 1 : expected_ - have, left);
      const bool closing = got.control && got.control->event == "closing" && follow_closing_;
      const bool was_last = last_ && std::any_of(got.events.begin(), got.events.end(), last_);
      {
        std::lock_guard lock(mutex_);
        for (auto& e : got.events) events_.push_back(std::move(e));
        if (got.control && !closing) controls_.push_back(got.control->event + " " + got.control->data);
      }
      if (!s->last_event_id().empty()) last_id = s->last_event_id();
      if (was_last) return;
      if (closing) {
        target = (target + 1) % targets_.size();
        ++reconnects_;
        break;
      }
      if (got.ended == collected::end::control) return;
      if (got.ended == collected::end::closed) {
        // The node went away under the session: resume elsewhere.
        target = (target + 1) % targets_.size();
        ++reconnects_;
        break;
      }
      if (got.ended != collected::end::count_reached) return;
    }
  }
}

void stream_reader::await_started(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  started_cv_.wait_for(lock, timeout, [&] { return started_ || !start_error_.empty(); });
  if (!started_) throw std::runtime_error("a reader of " + stream_ + " did not start: " + start_error_);
}

void stream_reader::join() {
  if (thread_.joinable()) thread_.join();
}

std::vector<data_event> stream_reader::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::string> stream_reader::controls() const {
  std::lock_guard lock(mutex_);
  return controls_;
}

void merge_acknowledged(std::map<int, std::string>& into, const std::map<int, std::string>& from) {
  for (const auto& [i, c] : from) into[i] = c;
}

void publish_steadily(std::map<int, std::string>& into, std::vector<client::endpoint> targets,
                      const std::string& stream, int first, int count, int rate,
                      std::chrono::milliseconds timeout) {
  steady_publisher p(std::move(targets), stream, first, count, rate);
  if (!p.join(timeout))
    throw std::runtime_error("publishing events " + std::to_string(first) + ".." +
                             std::to_string(first + count - 1) + " to " + stream + ": " + p.failure());
  merge_acknowledged(into, p.acknowledged());
}

std::string compare_with_acknowledged(const std::vector<data_event>& got,
                                      const std::map<int, std::string>& acked) {
  std::map<std::string, int> by_cursor;
  for (const auto& [i, cursor] : acked) by_cursor[cursor] = i;
  std::ostringstream out;
  std::size_t problems = 0;
  auto report = [&](const std::string& what) {
    if (++problems <= 10) out << what << "\n";
  };
  std::optional<core::cursor> previous;
  std::map<std::string, int> seen;
  for (const auto& e : got) {
    auto c = cursor_of(e.cursor);
    if (previous && (c.epoch != previous->epoch || c.seq != previous->seq + 1))
      report("not contiguous: " + core::format_cursor(*previous) + " then " + e.cursor);
    previous = c;
    if (++seen[e.cursor] > 1) report("twice: " + e.cursor);
    auto it = by_cursor.find(e.cursor);
    if (it == by_cursor.end()) {
      report("never acknowledged: " + e.cursor + " " + e.data.dump());
      continue;
    }
    if (e.data.value("i", -1) != it->second)
      report("at " + e.cursor + " the payload " + e.data.dump() +
             ", acknowledged i=" + std::to_string(it->second));
  }
  for (const auto& [cursor, i] : by_cursor)
    if (!seen.contains(cursor))
      report("acknowledged, never received: i=" + std::to_string(i) + " at " + cursor);
  if (problems > 10) out << "... " << problems - 10 << " more\n";
  return out.str();
}

}  // namespace tidings::testing
