// Metrics of a Channel or Server beyond its Counters: round-trip latency
// histograms per connection, read with Channel::metrics() and
// Server::metrics() from any thread. Recording costs the loop thread a
// clock read and three relaxed atomic additions per call: no lock and no
// allocation. An optional Prometheus exporter is in rpcrdma/prometheus.h.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_METRICS_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_METRICS_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rpcrdma/ids.h"
#include "rpcrdma/types.h"

namespace rpcrdma {

// Latencies in fixed exponential buckets: bucket i counts samples of at
// most 2^i microseconds (1 µs, 2 µs, 4 µs ... 2^26 µs ≈ 67 s); the last
// bucket counts everything longer.
class LatencyHistogram {
 public:
  static constexpr size_t kFiniteBuckets = 27;
  static constexpr size_t kBuckets = kFiniteBuckets + 1;

  // The upper bound of bucket `i` (inclusive); nanoseconds::max() for the
  // last.
  static std::chrono::nanoseconds UpperBound(size_t i);
  // The bucket a latency falls into.
  static size_t BucketOf(std::chrono::nanoseconds latency);

  void Record(std::chrono::nanoseconds latency);

  uint64_t count() const { return count_; }
  std::chrono::nanoseconds sum() const { return sum_; }
  // Samples per bucket (not cumulative).
  const std::array<uint64_t, kBuckets>& buckets() const { return buckets_; }
  // An upper estimate of the `quantile` (0 < quantile <= 1, e.g. 0.99):
  // the upper bound of the bucket the quantile's sample falls in, or, for
  // the overflow bucket, the largest finite bound. 0 when empty.
  std::chrono::nanoseconds Percentile(double quantile) const;

  LatencyHistogram& operator+=(const LatencyHistogram& other);
  friend bool operator==(const LatencyHistogram&,
                         const LatencyHistogram&) = default;

  // For readers that assemble a histogram from separate parts (the
  // library's own lock-free recorder).
  void Set(const std::array<uint64_t, kBuckets>& buckets, uint64_t count,
           std::chrono::nanoseconds sum);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  std::chrono::nanoseconds sum_{0};
};

// One connection's metrics.
struct ConnectionMetrics {
  // The connection within its Server or Channel (rpcrdma/ids.h), as in
  // IncomingCall::connection and log records.
  ConnectionId connection;
  // This connection's counters alone (types.h).
  Counters counters;
  // Calls this side made on the connection, from handing the call to the
  // transport to its successful reply: a Channel's forward calls, a
  // Server's backward calls (RFC 8167). Failed calls are not counted.
  LatencyHistogram call_rtt;
  // Calls this side served: from delivering the call to the handler until
  // the transport has sent the reply (its Send completed): a Server's
  // forward calls, a Channel's backward calls.
  LatencyHistogram reply_time;
};

struct Metrics {
  // The same as counters() of the Channel or Server.
  Counters counters;
  // A Channel: its current connection (none while it reconnects). A
  // Server: every connection it has now, in id order.
  std::vector<ConnectionMetrics> connections;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_METRICS_H_
