#pragma once

// An etcd v3 client over etcd's JSON gateway (POST /v3/..., ADR 0020), on the
// HTTP client of this folder: leases (the cluster's failure detector), puts,
// ranges, transactions (compare-and-swap, the only way the cluster changes
// its agreed record) and watches.
//
// Asynchronous on one io_context; callbacks run on its thread. Errors are
// values: a call's error is "" on success. A transport failure moves on to
// the next endpoint for the following calls. Reads, keep-alives and revokes
// are tried again (next member, short pause) within the call's timeout;
// writes (put, txn, grant) are not, because a write whose answer was lost
// may have been applied (its error says so) and only the caller knows
// whether retrying is safe: a compare-and-swap retried blindly could apply
// twice or fail on its own first success.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "net/http_client.hpp"

namespace tidings::net {

struct etcd_kv {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

// A compare of a transaction, always "equal". A key that does not exist has
// create and mod revision 0 and version 0: compare create_revision with 0 to
// create a key only if it is absent.
struct etcd_compare {
  enum class target { mod_revision, create_revision, version, value };
  std::string key;
  target what = target::mod_revision;
  std::int64_t number = 0;  // for the revisions and the version
  std::string value;        // for value
};

struct etcd_op {
  enum class kind { put, remove, range };
  kind what = kind::put;
  std::string key;
  std::string value;       // put
  std::int64_t lease = 0;  // put: 0 for none
  std::string range_end;   // remove and range: "" for the key alone
};

struct etcd_range_result {
  std::int64_t revision = 0;  // the store's revision the read saw
  std::vector<etcd_kv> kvs;
};

struct etcd_txn_result {
  bool succeeded = false;     // every compare held: the success ops ran
  std::int64_t revision = 0;  // after the transaction
  // One per op that ran (success or failure list), in order: the keys a
  // range op read, empty for puts and removes.
  std::vector<std::vector<etcd_kv>> ranges;
};

struct etcd_lease {
  std::int64_t id = 0;
  std::int64_t ttl_seconds = 0;  // 0 from a keep-alive: the lease is gone
};

struct etcd_event {
  bool deleted = false;
  etcd_kv kv;  // a delete carries the key and its mod_revision only
};

struct etcd_watch_handlers {
  // Each batch of changes with the revision it brings the watcher to.
  std::function<void(const std::vector<etcd_event>& events, std::int64_t revision)> events;
  // The watch ended (error never ""): the connection failed or closed, or
  // etcd cancelled it (compacted past the start revision: restart from a
  // fresh read). Called once; nothing is called after.
  std::function<void(std::string error)> end;
};

// The end of the key range holding every key that starts with prefix.
std::string etcd_prefix_end(std::string_view prefix);

class etcd_client : public std::enable_shared_from_this<etcd_client> {
 public:
  template <class T>
  using done = std::function<void(std::string error, T result)>;

  // endpoints: http://host:port or https://host:port of etcd members (at
  // least one). tls: the context for https:// members (null: the system store).
  static std::shared_ptr<etcd_client> make(boost::asio::io_context& ioc, std::vector<std::string> endpoints,
                                           std::chrono::milliseconds timeout,
                                           std::shared_ptr<tls_context> tls = nullptr);

  void grant_lease(std::int64_t ttl_seconds, done<etcd_lease> cb);
  void keep_alive(std::int64_t lease, done<etcd_lease> cb);
  void revoke_lease(std::int64_t lease, done<bool> cb);
  void put(std::string key, std::string value, std::int64_t lease, done<std::int64_t> cb);  // the revision
  void range(std::string key, std::string range_end, done<etcd_range_result> cb);
  void txn(std::vector<etcd_compare> compares, std::vector<etcd_op> success, std::vector<etcd_op> failure,
           done<etcd_txn_result> cb);
  // Changes to [key, range_end) from start_revision (0: from now). Dropping
  // the handle does not stop it; cancel() does, and nothing runs after.
  // The watch asks etcd for progress notices, so idle_timeout (0: none)
  // longer than etcd's progress interval ends a watch whose member went
  // silent (a partition) instead of leaving it waiting forever.
  std::shared_ptr<http_call> watch(std::string key, std::string range_end, std::int64_t start_revision,
                                   etcd_watch_handlers handlers,
                                   std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(0));

  // Ends every call in flight; none of their callbacks runs after this.
  void cancel_all();

  const std::string& current_endpoint() const { return endpoints_[current_]; }

 private:
  etcd_client(boost::asio::io_context& ioc, std::vector<std::string> endpoints,
              std::chrono::milliseconds timeout, std::shared_ptr<tls_context> tls);
  // POSTs body to path on the current endpoint; the reply's JSON text, or an
  // error naming the endpoint. An idempotent call is tried again on the
  // next member after a transport failure or a transient etcd refusal,
  // within the client's timeout.
  void call(std::string path, std::string body, bool idempotent,
            std::function<void(std::string error, std::string json)> cb);
  void attempt(std::string path, std::string body, bool idempotent,
               std::chrono::steady_clock::time_point deadline,
               std::function<void(std::string error, std::string json)> cb);
  void forget_finished();

  boost::asio::io_context& ioc_;
  std::vector<std::string> endpoints_;
  std::size_t current_ = 0;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<tls_context> tls_;
  std::vector<std::weak_ptr<http_call>> calls_;
  std::uint64_t generation_ = 0;  // cancel_all() counts up
};

}  // namespace tidings::net
