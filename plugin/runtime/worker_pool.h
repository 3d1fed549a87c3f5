// A fixed pool of threads running jobs of one type in arrival order, for
// handlers that may block (TransportConfig.execution.handler_threads): a
// slow handler occupies a worker, never an event loop, so the other
// connections of the loop go on. Jobs wait in a ring buffer, so a pool in
// steady use allocates nothing per job.
#ifndef RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_
#define RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_

#include <pthread.h>

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
    }
  }
  // Runs every job already submitted, then joins the workers.
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  void Submit(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
      if (idle_ == 0) return;  // a busy worker takes it next
    }
    cv_.notify_one();
  }

  size_t threads() const { return workers_.size(); }
  // True on one of this pool's workers (whose destruction would then wait
  // for itself).
  bool InWorkerThread() const {
    for (const std::thread& t : workers_) {
      if (t.get_id() == std::this_thread::get_id()) return true;
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
};

}  // namespace rpcrdma::runtime

#endif  // RPCRDMA_PLUGIN_RUNTIME_WORKER_POOL_H_
