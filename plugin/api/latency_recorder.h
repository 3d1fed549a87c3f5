// The recording side of rpcrdma::LatencyHistogram: one writer (a loop
// thread) adds samples with relaxed atomics, any thread takes a snapshot.
// A snapshot taken during a Record may see the bucket without the count or
// sum of that one sample; never a torn value.
#ifndef RPCRDMA_PLUGIN_API_LATENCY_RECORDER_H_
#define RPCRDMA_PLUGIN_API_LATENCY_RECORDER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "rpcrdma/metrics.h"

namespace rpcrdma::api_internal {

class LatencyRecorder {
 public:
  void Record(std::chrono::nanoseconds latency) {
    const size_t bucket = LatencyHistogram::BucketOf(latency);
    buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(latency.count() > 0 ? latency.count() : 0,
                      std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }

  LatencyHistogram Snapshot() const {
    std::array<uint64_t, LatencyHistogram::kBuckets> buckets;
    for (size_t i = 0; i < buckets.size(); ++i) {
      buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    }
    LatencyHistogram h;
    h.Set(buckets, count_.load(std::memory_order_relaxed),
          std::chrono::nanoseconds(sum_ns_.load(std::memory_order_relaxed)));
    return h;
  }

 private:
  std::array<std::atomic<uint64_t>, LatencyHistogram::kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_ns_{0};
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_LATENCY_RECORDER_H_
