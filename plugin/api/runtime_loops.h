// The loops behind a public rpcrdma::Runtime, and how Channels and Servers
// reach them.
#ifndef RPCRDMA_PLUGIN_API_RUNTIME_LOOPS_H_
#define RPCRDMA_PLUGIN_API_RUNTIME_LOOPS_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/runtime/event_loop.h"
#include "rpcrdma/runtime.h"

namespace rpcrdma::api_internal {

class RuntimeLoops {
 public:
  explicit RuntimeLoops(std::vector<std::unique_ptr<runtime::EventLoop>> loops,
                        bool threads)
      : loops_(std::move(loops)), threads_(threads) {}

  // The loop for the next Channel, listener or connection (round robin).
  runtime::EventLoop* Next() {
    return loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()]
        .get();
  }
  const std::vector<std::unique_ptr<runtime::EventLoop>>& loops() const {
    return loops_;
  }
  // False for a runtime its user drives (one loop, no thread).
  bool threads() const { return threads_; }

 private:
  std::vector<std::unique_ptr<runtime::EventLoop>> loops_;
  const bool threads_;
  std::atomic<size_t> next_{0};
};

class RuntimeAccess {
 public:
  static RuntimeLoops& Loops(Runtime& runtime) { return *runtime.loops_; }
  // `runtime`, or the default one when it is null; RESOURCE_EXHAUSTED when
  // the default one cannot be started.
  static absl::StatusOr<std::shared_ptr<Runtime>> OrDefault(
      std::shared_ptr<Runtime> runtime) {
    if (runtime != nullptr) return runtime;
    std::shared_ptr<Runtime> made = Runtime::Default();
    if (made == nullptr) {
      return absl::ResourceExhaustedError(
          "the default runtime cannot be started (see the log)");
    }
    return made;
  }
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_RUNTIME_LOOPS_H_
