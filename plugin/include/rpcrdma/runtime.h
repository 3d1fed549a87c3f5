// rpcrdma::Runtime: the event-loop threads that drive Channels and Servers.
//
// Loops are shared. A Runtime's loop threads (by default one per core)
// drive any number of Channels and Servers: each Channel, each Server's
// listener and each connection a Server accepts is placed on one of them,
// round robin, and a loop does work only for what is ready (epoll), so
// idle connections cost no work per call and no thread each. A Channel or
// Server created without a Runtime uses Runtime::Default().
//
// Handlers run on the loop thread of their connection unless the
// configuration gives them a pool (TransportConfig.execution.
// handler_threads): a handler that may block must not run on a loop, where
// it would stall every connection of that loop.
//
// A Runtime created with no loop threads is driven by its user: add
// event_fd() to your own poll/epoll/libevent loop and call RunReady() when
// it is readable. Every callback of its Channels and Servers then runs
// inside RunReady(), on your thread, and nothing of theirs runs anywhere
// else (except handlers given a pool). That is how a Channel embeds in an
// existing single-threaded service:
//
//   auto runtime = rpcrdma::Runtime::Create({.loop_threads = 0}).value();
//   rpcrdma::ChannelOptions options;
//   options.runtime = runtime;
//   auto channel = rpcrdma::Channel::Create(uri, config, options).value();
//   // in your loop: watch runtime->event_fd(); when readable:
//   runtime->RunReady();
//
// Channel::Create blocks while it connects and a Channel's destructor
// while its connection drains, on whatever thread calls them; neither needs
// the runtime driven meanwhile, so both may be called from a callback.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RUNTIME_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RUNTIME_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"

namespace rpcrdma {

namespace api_internal {
class RuntimeAccess;
class RuntimeLoops;
}  // namespace api_internal

struct RuntimeOptions {
  // Event-loop threads, 0..1024. 0: none, the user drives the runtime
  // (event_fd(), RunReady()). Default: one per core
  // (std::thread::hardware_concurrency()).
  std::optional<uint32_t> loop_threads;
};

class Runtime {
 public:
  // INVALID_ARGUMENT for more than 1024 loop threads; RESOURCE_EXHAUSTED
  // when the descriptors or threads cannot be made.
  static absl::StatusOr<std::shared_ptr<Runtime>> Create(
      RuntimeOptions options = {});
  // The process-wide runtime, made on first use with one loop thread per
  // core, or as many as the environment variable RPCRDMA_LOOP_THREADS says
  // (1..1024). It lives until the process exits.
  static std::shared_ptr<Runtime> Default();

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  // Stops the loop threads. Channels and Servers hold their Runtime, so
  // this runs after the last of them is gone.
  ~Runtime();

  uint32_t loop_threads() const;

  // A runtime without loop threads: readable when RunReady() has work (a
  // connection is ready, a deadline has come, a reply was handed over from
  // another thread); it may also be readable once with nothing to do (a
  // deadline that moved later), and RunReady() then returns at once. -1 for
  // a runtime with loop threads.
  int event_fd() const;
  // Does the work that is ready, waiting up to `timeout` for some when
  // there is none, and returns. Callbacks of this runtime's Channels and
  // Servers run here. Does nothing on a runtime with loop threads, and
  // when called from inside itself.
  void RunReady(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // What the loops watch now: one per Channel, per Server listener and per
  // connection (for tests and monitoring).
  size_t sources() const;

 private:
  friend class api_internal::RuntimeAccess;
  explicit Runtime(std::unique_ptr<api_internal::RuntimeLoops> loops);
  std::unique_ptr<api_internal::RuntimeLoops> loops_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RUNTIME_H_
