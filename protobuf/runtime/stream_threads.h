// The threads server-streaming handlers run on, one per open stream. A
// handler may block in Write until its client asks for more, so it must
// not hold one of the Server's handler threads (or its loop thread): the
// NEXT calls that would unblock it are served there, and a few blocked
// writers would wedge the server. Streams are bounded per connection
// (ServiceSetOptions::max_streams_per_connection), and so are these.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_STREAM_THREADS_H_
#define RPCRDMA_PROTOBUF_RUNTIME_STREAM_THREADS_H_

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rpcrdma::protobuf::runtime {

class StreamThreads {
 public:
  StreamThreads() = default;
  StreamThreads(const StreamThreads&) = delete;
  StreamThreads& operator=(const StreamThreads&) = delete;
  ~StreamThreads() { JoinAll(); }

  // Runs `body` on a thread of its own. Threads that have finished are
  // joined first, so that finished ones do not pile up. False when the
  // system has no thread to give (body has not run and will not).
  bool Start(std::function<void()> body);
  // Waits for every thread; their bodies must return (a handler returns
  // once Write fails).
  void JoinAll();

 private:
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  absl::Mutex mu_;
  std::list<Running> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_STREAM_THREADS_H_
