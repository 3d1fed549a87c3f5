#include "protobuf/runtime/stream_threads.h"

#include <atomic>
#include <iterator>
#include <system_error>
#include <utility>

namespace rpcrdma::protobuf::runtime {

bool StreamThreads::Start(std::function<void()> body) {
  std::list<Running> finished;
  bool started = true;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = running_.begin(); it != running_.end();) {
      auto next = std::next(it);
      if (it->finished->load()) {
        finished.splice(finished.end(), running_, it);
      }
      it = next;
    }
    auto flag = std::make_shared<std::atomic<bool>>(false);
    std::thread thread;
    try {
      thread = std::thread([body = std::move(body), flag] {
        body();
        flag->store(true);
      });
    } catch (const std::system_error&) {
      // Out of threads (EAGAIN): the caller refuses the stream rather
      // than the server ending.
      started = false;
    }
    if (started) running_.push_back({std::move(thread), flag});
  }
  for (Running& r : finished) r.thread.join();
  return started;
}

void StreamThreads::JoinAll() {
  std::list<Running> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(running_);
  }
  for (Running& r : all) r.thread.join();
}

}  // namespace rpcrdma::protobuf::runtime
