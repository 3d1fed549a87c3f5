// Calls delivered by the transport, waiting to be dispatched: read through
// an eventfd by libtirpc's poll loop (svc_run), or handed to the threads
// of svc_rdma_run_threads.
#ifndef RPCRDMA_ONCRPC_ADAPTER_CALL_QUEUE_H_
#define RPCRDMA_ONCRPC_ADAPTER_CALL_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "rpcrdma/address.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::oncrpc {

struct Job {
  IncomingCall call;
  Responder responder;
  // Where its client connected from, as known when the call arrived: its
  // connection may be gone by the time it is dispatched (unset when the
  // Server did not say, and for a backchannel).
  std::optional<SocketAddress> peer;
};

// A FIFO of jobs in slots it keeps: once it has grown to the deepest
// queue seen, a push allocates nothing (a std::deque allocates a node per
// job as large as a Job, and frees it when the job leaves).
class JobFifo {
 public:
  bool empty() const { return size_ == 0; }
  void Push(Job job);
  Job Pop();  // not empty()

 private:
  std::vector<std::optional<Job>> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

class CallQueue {
 public:
  CallQueue();  // ok() is false when no eventfd could be made
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  bool ok() const { return event_fd_ >= 0; }
  // Readable while calls wait (until they go to threads).
  int event_fd() const { return event_fd_; }

  // `wake`: signal the descriptor (false when the thread that pushes pops
  // the call itself right after, see RdmaTransport).
  void Push(Job job, bool wake = true);
  // For the poll loop: a waiting call, if any. `clear_signal`: reset the
  // descriptor too (false leaves a signal pending for the SVCXPRT that
  // polls it).
  std::optional<Job> TryPop(bool clear_signal = true);
  bool empty() const;
  // From now on calls go to threads waiting in WaitPop.
  void HandToThreads();
  // Blocks until a call comes (nullopt once Stop was called).
  std::optional<Job> WaitPop();
  // Wakes every WaitPop for good. The calls still waiting, and those
  // pushed later, are never dispatched; they are kept unanswered until the
  // queue goes, after the Server (RdmaTransport::Stop): a Responder dropped
  // before would answer SYSTEM_ERR (rpcrdma/responder.h), where a call the
  // server never ran should see its connection close, and may be sent
  // again.
  void Stop();

 private:
  const int event_fd_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  JobFifo jobs_;
  std::deque<Job> unanswered_;  // since Stop()
  bool to_threads_ = false;
  bool stopped_ = false;
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_CALL_QUEUE_H_
