// A FIFO queue in one growable ring buffer. Unlike std::deque, a queue in
// steady use (as many pushes as pops) allocates nothing once it has grown
// to its working size: the runtime's per-call paths stay allocation-free.
#ifndef RPCRDMA_PLUGIN_MEMORY_RING_QUEUE_H_
#define RPCRDMA_PLUGIN_MEMORY_RING_QUEUE_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace rpcrdma::memory {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void push_back(T value) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) % slots_.size()] = std::move(value);
    ++size_;
  }
  T& front() { return slots_[head_]; }
  // Removes the front element (moved-from state is left in its slot until
  // it is overwritten).
  T pop_front() {
    T value = std::move(slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return value;
  }
  void clear() {
    while (!empty()) pop_front();
  }
  // Calls `f` on every element, front to back.
  template <typename F>
  void ForEach(F f) {
    for (size_t i = 0; i < size_; ++i) f(slots_[(head_ + i) % slots_.size()]);
  }
  // Removes the elements `pred` accepts, keeping the others' order.
  template <typename Pred>
  void EraseIf(Pred pred) {
    const size_t n = size_;
    for (size_t i = 0; i < n; ++i) {
      T value = pop_front();
      if (!pred(value)) push_back(std::move(value));
    }
  }

 private:
  void Grow() {
    std::vector<T> bigger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    }
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace rpcrdma::memory

#endif  // RPCRDMA_PLUGIN_MEMORY_RING_QUEUE_H_
