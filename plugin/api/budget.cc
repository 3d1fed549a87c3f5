#include "plugin/api/budget.h"

#include <cassert>

namespace rpcrdma::api_internal {

bool SharedReassemblyBudget::TryReserve(uint64_t bytes) {
  uint64_t used = in_use_.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_ || used > capacity_ - bytes) return false;
  } while (!in_use_.compare_exchange_weak(used, used + bytes,
                                          std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
  return true;
}

void SharedReassemblyBudget::Release(uint64_t bytes) {
  [[maybe_unused]] const uint64_t before =
      in_use_.fetch_sub(bytes, std::memory_order_acq_rel);
  assert(before >= bytes);
  releases_.fetch_add(1, std::memory_order_release);
}

}  // namespace rpcrdma::api_internal
