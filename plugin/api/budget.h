// The reassembly memory one Server's connections share (RFC 5666 §11: a
// responder protects itself from requesters that name large chunks).
// Each connection's engine reserves a call's size here, on top of its own
// per-connection bound, before it allocates anything for the call.
#ifndef RPCRDMA_PLUGIN_API_BUDGET_H_
#define RPCRDMA_PLUGIN_API_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "plugin/engine/engine.h"

namespace rpcrdma::api_internal {

class SharedReassemblyBudget : public engine::ReassemblyBudget {
 public:
  explicit SharedReassemblyBudget(uint64_t capacity) : capacity_(capacity) {}

  // Thread-safe: a lock-free compare-and-swap on the octets in use.
  bool TryReserve(uint64_t bytes) override;
  void Release(uint64_t bytes) override;
  uint64_t capacity() const override { return capacity_; }

  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // Grows with every Release: a loop that saw the same value before and
  // after a round of work knows no memory came free in between.
  uint64_t releases() const {
    return releases_.load(std::memory_order_acquire);
  }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> releases_{0};
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_BUDGET_H_
