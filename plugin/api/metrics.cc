#include "rpcrdma/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rpcrdma {

std::chrono::nanoseconds LatencyHistogram::UpperBound(size_t i) {
  if (i >= kFiniteBuckets) return std::chrono::nanoseconds::max();
  return std::chrono::microseconds(int64_t{1} << i);
}

size_t LatencyHistogram::BucketOf(std::chrono::nanoseconds latency) {
  // The smallest i with latency <= 2^i µs: from the bit length of the
  // latency in whole microseconds, rounded up.
  const int64_t ns = latency.count();
  if (ns <= 1000) return 0;
  const uint64_t micros = static_cast<uint64_t>((ns + 999) / 1000);
  const size_t bits = static_cast<size_t>(64 - __builtin_clzll(micros - 1));
  return std::min(bits, kFiniteBuckets);
}

void LatencyHistogram::Record(std::chrono::nanoseconds latency) {
  ++buckets_[BucketOf(latency)];
  ++count_;
  sum_ += std::max(latency, std::chrono::nanoseconds(0));
}

std::chrono::nanoseconds LatencyHistogram::Percentile(double quantile) const {
  if (count_ == 0) return std::chrono::nanoseconds(0);
  quantile = std::clamp(quantile, 0.0, 1.0);
  // The rank of the quantile's sample, 1-based.
  const uint64_t rank = std::max<uint64_t>(
      1,
      static_cast<uint64_t>(std::ceil(quantile * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return UpperBound(std::min(i, kFiniteBuckets - 1));
  }
  return UpperBound(kFiniteBuckets - 1);
}

LatencyHistogram& LatencyHistogram::operator+=(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  return *this;
}

void LatencyHistogram::Set(const std::array<uint64_t, kBuckets>& buckets,
                           uint64_t count, std::chrono::nanoseconds sum) {
  buckets_ = buckets;
  count_ = count;
  sum_ = sum;
}

}  // namespace rpcrdma
