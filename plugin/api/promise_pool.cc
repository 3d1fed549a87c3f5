#include "plugin/api/promise_pool.h"

#include <new>

namespace rpcrdma::api_internal {

BlockPool::~BlockPool() {
  while (free_ != nullptr) {
    FreeBlock* next = free_->next;
    ::operator delete(free_);
    free_ = next;
  }
}

void* BlockPool::Allocate(size_t size) {
  if (size <= kBlockSize) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_ != nullptr) {
      FreeBlock* block = free_;
      free_ = block->next;
      --free_count_;
      return block;
    }
  }
  return ::operator new(size <= kBlockSize ? kBlockSize : size);
}

void BlockPool::Deallocate(void* block, size_t size) {
  if (size <= kBlockSize) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_count_ < kMostFreeBlocks) {
      free_ = new (block) FreeBlock{free_};
      ++free_count_;
      return;
    }
  }
  ::operator delete(block);
}

std::future<PromisePool::Result> PromisePool::Start(Callback& done) {
  using Promise = std::promise<Result>;
  static_assert(sizeof(Promise) <= BlockPool::kBlockSize);
  Promise* promise = new (blocks_->Allocate(sizeof(Promise)))
      Promise(std::allocator_arg, PoolAllocator<Result>(blocks_));
  std::future<Result> future = promise->get_future();
  // Two pointers: std::function keeps them without allocating. The promise
  // keeps the pool alive (its shared state's allocator) until it goes; the
  // pool must outlive it by the block it stands in.
  BlockPool* const blocks = blocks_.get();
  done = [promise, blocks](Result result) {
    const std::shared_ptr<BlockPool> keep = blocks->shared_from_this();
    promise->set_value(std::move(result));
    promise->~Promise();
    keep->Deallocate(promise, sizeof(Promise));
  };
  return future;
}

}  // namespace rpcrdma::api_internal
