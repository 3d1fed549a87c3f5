#include "oncrpc/adapter/call_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace rpcrdma::oncrpc {

void JobFifo::Push(Job job) {
  if (size_ == slots_.size()) {
    // Grows in order, the oldest first.
    std::vector<std::optional<Job>> grown(slots_.empty() ? 4
                                                         : 2 * slots_.size());
    for (size_t i = 0; i < size_; ++i) {
      grown[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    }
    slots_ = std::move(grown);
    head_ = 0;
  }
  slots_[(head_ + size_) % slots_.size()].emplace(std::move(job));
  ++size_;
}

Job JobFifo::Pop() {
  std::optional<Job>& slot = slots_[head_];
  Job job = *std::move(slot);
  slot.reset();
  head_ = (head_ + 1) % slots_.size();
  --size_;
  return job;
}

CallQueue::CallQueue() : event_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

CallQueue::~CallQueue() {
  if (event_fd_ >= 0) close(event_fd_);
}

void CallQueue::Push(Job job, bool wake) {
  bool signal = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      unanswered_.push_back(std::move(job));  // see Stop()
      return;
    }
    // The poll loop drains the queue before it sleeps again (SVC_STAT
    // reports XPRT_MOREREQS), so only the first call needs a wake-up.
    signal = wake && !to_threads_ && jobs_.empty();
    jobs_.Push(std::move(job));
  }
  if (signal) {
    const uint64_t one = 1;
    (void)!write(event_fd_, &one, sizeof one);
  } else {
    ready_.notify_one();
  }
}

std::optional<Job> CallQueue::TryPop(bool clear_signal) {
  // Cleared before taking a call: one pushed meanwhile signals again.
  if (clear_signal) {
    uint64_t count;
    (void)!read(event_fd_, &count, sizeof count);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.empty() || to_threads_) return std::nullopt;
  return jobs_.Pop();
}

bool CallQueue::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.empty() || to_threads_;
}

void CallQueue::HandToThreads() {
  std::lock_guard<std::mutex> lock(mu_);
  to_threads_ = true;
}

std::optional<Job> CallQueue::WaitPop() {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
  if (stopped_) return std::nullopt;
  return jobs_.Pop();
}

void CallQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    while (!jobs_.empty()) unanswered_.push_back(jobs_.Pop());
  }
  ready_.notify_all();
}

}  // namespace rpcrdma::oncrpc
