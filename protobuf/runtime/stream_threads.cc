#include "protobuf/runtime/stream_threads.h"

#include <atomic>
#include <iterator>
#include <utility>

namespace rpcrdma::protobuf::runtime {

void StreamThreads::Start(std::function<void()> body) {
  std::list<Running> finished;
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
    running_.push_back({std::thread([body = std::move(body), flag] {
                          body();
                          flag->store(true);
                        }),
                        flag});
  }
  for (Running& r : finished) r.thread.join();
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
