// A fixed pool of threads running jobs of one type in arrival order, for
// handlers that may block (TransportConfig.execution.handler_threads): a
// slow handler occupies a worker, never an event loop, so the other
// connections of the loop go on. Jobs wait in a ring buffer, so a pool in
// steady use allocates nothing per job.
#ifndef RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_
#define RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "plugin/memory/ring_queue.h"

namespace rpcrdma::runtime {

template <typename Job>
class WorkerPool {
 public:
  using Run = std::function<void(Job&)>;

  WorkerPool(size_t threads, std::string name, Run run) : run_(std::move(run)) {
    for (size_t i = 0; i < threads; ++i) {
      workers_.emplace_back([this, name] {
        pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
        Work();
      });
      worker_ids_.push_back(workers_.back().get_id());
    }
  }
  ~WorkerPool() { Stop(); }

  // Runs every job already submitted, then joins the workers; a job
  // submitted afterwards runs on the submitting thread. Once only: a later
  // call, or one racing it, waits for nothing. The pool itself stays, so
  // that InWorkerThread may be asked from any thread while it stops (an
  // owner that freed the pool to stop it would race with that question).
  void Stop() {
    std::call_once(stopped_, [this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
      }
      cv_.notify_all();
      for (std::thread& t : workers_) t.join();
      joined_.store(true, std::memory_order_release);
    });
  }

  void Submit(Job job) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) {
        lock.unlock();
        run_(job);  // stopped: no worker may be left to take it
        return;
      }
      jobs_.push_back(std::move(job));
      if (idle_ == 0) return;  // a busy worker takes it next
    }
    cv_.notify_one();
  }

  size_t threads() const { return worker_ids_.size(); }
  // True on one of this pool's workers (whose Stop would then wait for
  // itself). The ids are fixed at construction, so this reads nothing a
  // stopping pool writes; once the workers are joined their ids may be
  // reused by other threads, and the answer is false.
  bool InWorkerThread() const {
    if (joined_.load(std::memory_order_acquire)) return false;
    for (const std::thread::id id : worker_ids_) {
      if (id == std::this_thread::get_id()) return true;
    }
    return false;
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (jobs_.empty()) {
        if (stopping_) return;
        ++idle_;
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        --idle_;
        continue;
      }
      {
        Job job = jobs_.pop_front();
        lock.unlock();
        run_(job);
      }  // the job is gone before the lock is taken again
      lock.lock();
    }
  }

  Run run_;
  std::mutex mu_;
  std::condition_variable cv_;
  memory::RingQueue<Job> jobs_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::vector<std::thread::id> worker_ids_;
  std::once_flag stopped_;
  std::atomic<bool> joined_{false};
};

}  // namespace rpcrdma::runtime

#endif  // RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_
