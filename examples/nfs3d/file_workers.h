// The threads that do each call's file system work as its caller.
//
// Why not the thread that dispatches the call: acting as a caller changes
// the thread's credentials (credentials.h), and Linux refuses the verbs
// and RDMA connection manager commands of a thread whose credentials are
// not the ones that opened the device file (ib_safe_file_access compares
// the two credential objects, so changing the ids back does not help):
// from then on the thread could issue no verbs or connection manager
// command (register memory, accept or close a connection, and, on
// Soft-RoCE, post a Send, which rxe's provider signals with such a
// command). The dispatch threads call into the transport (svc_sendreply
// pushes the write chunks and sends the reply), so they never change
// their credentials. They hand the procedure to one of these
// workers and wait for it; a worker acts as the caller for the procedure
// alone, and never calls into the transport: it gets the decoded
// arguments and fills the result, nothing else of the call. A call whose
// identity is the one the dispatch thread already has (AlreadyActsAs)
// changes no credentials: it runs on the dispatch thread, without the
// hand-off.
//
// Bounded: a fixed number of workers, started with the server, and at
// most a fixed number of calls waiting for one (a dispatch thread waits
// for room beyond that). A hand-off costs each call two thread wake-ups
// (the worker's, then the dispatch thread's) on top of its own system
// calls and round trip.
#ifndef RPCRDMA_EXAMPLES_NFS3D_FILE_WORKERS_H_
#define RPCRDMA_EXAMPLES_NFS3D_FILE_WORKERS_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "examples/nfs3d/credentials.h"

namespace rpcrdma::nfs3d {

class FileWorkers {
 public:
  // `threads` workers (at least 1) and room for `waiting` calls (at least
  // 1) beyond those being worked on.
  FileWorkers(unsigned threads, size_t waiting);
  // Waits for the calls being worked on, then ends the workers. No call
  // may be handed over any more by then.
  ~FileWorkers();
  FileWorkers(const FileWorkers&) = delete;
  FileWorkers& operator=(const FileWorkers&) = delete;

  // Runs `work` acting as `identity`, and returns once it ran: on the
  // calling thread when it already acts as `identity`, else on a worker;
  // true, or false without running it when the worker could not take the
  // identity.
  template <typename Work>
  bool Run(const Identity& identity, Work& work) {
    return Run(
        identity, [](void* w) { (*static_cast<Work*>(w))(); }, &work);
  }

 private:
  struct Call {
    const Identity* identity = nullptr;
    void (*run)(void*) = nullptr;
    void* context = nullptr;
    bool ran = false;
    // Under mu_: the dispatch thread may go on (and end the Call) once it
    // sees `finished`, so the worker notifies while it holds the mutex.
    bool finished = false;
    std::condition_variable done;
  };

  bool Run(const Identity& identity, void (*run)(void*), void* context);
  void Work();

  const size_t waiting_limit_;
  std::mutex mu_;
  std::condition_variable call_waits_;  // for a worker
  std::condition_variable room_;        // for a dispatch thread
  std::deque<Call*> waiting_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_FILE_WORKERS_H_
