// Channel::Call's futures without a heap allocation per call: the promise,
// its shared state and its result live in blocks the Channel keeps for the
// next call (std::promise's allocator_arg constructor), and the callback
// that fulfils the promise holds two plain pointers, which std::function
// keeps inline.
#ifndef RPCRDMA_PLUGIN_API_PROMISE_POOL_H_
#define RPCRDMA_PLUGIN_API_PROMISE_POOL_H_

#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/status/statusor.h"
#include "rpcrdma/types.h"

namespace rpcrdma::api_internal {

// Blocks of one size on a free list, shared by the Channel and by every
// future it handed out (through their allocators): the last of them frees
// the blocks. Any thread; a request larger than a block goes to the heap.
class BlockPool : public std::enable_shared_from_this<BlockPool> {
 public:
  static constexpr size_t kBlockSize = 256;
  // Free blocks kept at most: a burst of futures leaves little behind.
  static constexpr size_t kMostFreeBlocks = 256;

  BlockPool() = default;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool();

  void* Allocate(size_t size);
  void Deallocate(void* block, size_t size);

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  std::mutex mu_;
  FreeBlock* free_ = nullptr;  // guarded by mu_
  size_t free_count_ = 0;      // guarded by mu_
};

// The standard allocator interface over a BlockPool.
template <typename T>
class PoolAllocator {
 public:
  using value_type = T;

  explicit PoolAllocator(std::shared_ptr<BlockPool> pool)
      : pool_(std::move(pool)) {}
  template <typename U>
  PoolAllocator(const PoolAllocator<U>& other)  // NOLINT: rebinding
      : pool_(other.pool()) {}

  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                  "blocks have operator new's alignment");
    return static_cast<T*>(pool_->Allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { pool_->Deallocate(p, n * sizeof(T)); }

  const std::shared_ptr<BlockPool>& pool() const { return pool_; }
  template <typename U>
  bool operator==(const PoolAllocator<U>& other) const {
    return pool_ == other.pool();
  }

 private:
  std::shared_ptr<BlockPool> pool_;
};

class PromisePool {
 public:
  using Result = absl::StatusOr<Reply>;
  using Callback = std::function<void(Result)>;

  PromisePool() : blocks_(std::make_shared<BlockPool>()) {}

  // A promise from the pool: returns its future and sets `done` to the
  // callback that fulfils it, which must run exactly once (as a Channel's
  // call callback does).
  std::future<Result> Start(Callback& done);

 private:
  std::shared_ptr<BlockPool> blocks_;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_PROMISE_POOL_H_
