#include "rpcrdma/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "plugin/api/runtime_loops.h"
#include "plugin/log/logging.h"

namespace rpcrdma {

namespace {

constexpr uint32_t kMaxLoopThreads = 1024;

uint32_t Cores() {
  return std::max<uint32_t>(1, std::thread::hardware_concurrency());
}

}  // namespace

absl::StatusOr<std::shared_ptr<Runtime>> Runtime::Create(
    RuntimeOptions options) {
  const uint32_t threads = options.loop_threads.value_or(Cores());
  if (threads > kMaxLoopThreads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime: loop_threads: ", threads, " exceeds ", kMaxLoopThreads));
  }
  std::vector<std::unique_ptr<runtime::EventLoop>> loops;
  for (uint32_t i = 0; i < std::max<uint32_t>(threads, 1); ++i) {
    absl::StatusOr<std::unique_ptr<runtime::EventLoop>> loop =
        runtime::EventLoop::Create(threads > 0,
                                   absl::StrCat("rpcrdma-loop-", i));
    if (!loop.ok()) return loop.status();
    loops.push_back(*std::move(loop));
  }
  return std::shared_ptr<Runtime>(
      new Runtime(std::make_unique<api_internal::RuntimeLoops>(std::move(loops),
                                                               threads > 0)));
}

namespace {

std::mutex default_mu;
std::shared_ptr<Runtime>* default_runtime = nullptr;

// fork() copies only the calling thread: in the child the default
// runtime's loop threads are gone. The child gets a fresh one at its next
// use (the old one is left as it is; Channels and Servers made before the
// fork belong to the parent).
void LockDefault() { default_mu.lock(); }
void UnlockDefault() { default_mu.unlock(); }
void ForgetDefaultInChild() {
  default_runtime = nullptr;
  default_mu.unlock();
}

}  // namespace

std::shared_ptr<Runtime> Runtime::Default() {
  // Made on first use and never destroyed: Channels and Servers in static
  // storage may outlive any order of destruction at exit. A failure (no
  // descriptors left, say) is retried at the next use.
  static const int registered =
      pthread_atfork(LockDefault, UnlockDefault, ForgetDefaultInChild);
  (void)registered;
  std::lock_guard<std::mutex> lock(default_mu);
  std::shared_ptr<Runtime>*& runtime = default_runtime;
  if (runtime != nullptr) return *runtime;
  RuntimeOptions options;
  if (const char* env = std::getenv("RPCRDMA_LOOP_THREADS")) {
    uint32_t n = 0;
    if (absl::SimpleAtoi(env, &n) && n >= 1 && n <= kMaxLoopThreads) {
      options.loop_threads = n;
    } else {
      RPCRDMA_LOG(kWarning, 0, "RPCRDMA_LOOP_THREADS=", env, " is not 1..",
                  kMaxLoopThreads, "; using one loop thread per core");
    }
  }
  absl::StatusOr<std::shared_ptr<Runtime>> made = Create(options);
  if (!made.ok()) {
    RPCRDMA_LOG(kError, 0,
                "cannot start the default runtime: ", made.status().message());
    return nullptr;
  }
  runtime = new std::shared_ptr<Runtime>(*std::move(made));
  return *runtime;
}

Runtime::Runtime(std::unique_ptr<api_internal::RuntimeLoops> loops)
    : loops_(std::move(loops)) {}

Runtime::~Runtime() = default;

uint32_t Runtime::loop_threads() const {
  return loops_->threads() ? static_cast<uint32_t>(loops_->loops().size()) : 0;
}

int Runtime::event_fd() const {
  return loops_->threads() ? -1 : loops_->loops().front()->event_fd();
}

void Runtime::RunReady(std::chrono::milliseconds timeout) {
  if (loops_->threads()) return;
  loops_->loops().front()->RunOnce(timeout);
}

size_t Runtime::sources() const {
  size_t n = 0;
  for (const auto& loop : loops_->loops()) n += loop->sources();
  return n;
}

}  // namespace rpcrdma
