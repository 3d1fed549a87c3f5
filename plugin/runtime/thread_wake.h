// A wake-up for one thread that sleeps in poll() on descriptors of its own
// choosing: another thread signals it through an eventfd that the sleeper
// polls beside them. A condition variable cannot reach a thread in poll().
//
// One per thread, made on first use, so that a process with many
// connections pays one descriptor per thread that waits this way, not one
// per connection.
#ifndef RPCRDMA_PLUGIN_RUNTIME_THREAD_WAKE_H_
#define RPCRDMA_PLUGIN_RUNTIME_THREAD_WAKE_H_

namespace rpcrdma::runtime {

class ThreadWake {
 public:
  // The calling thread's own.
  static ThreadWake& ForThisThread();

  ThreadWake(const ThreadWake&) = delete;
  ThreadWake& operator=(const ThreadWake&) = delete;
  ~ThreadWake();

  // Readable (POLLIN) from a Signal until the next Drain; -1 when no
  // eventfd could be made (the sleeper then relies on its poll timeout).
  int fd() const { return fd_; }
  // From any thread, while the owner thread is alive.
  void Signal() const;
  // By the owner: consumes every Signal so far.
  void Drain() const;

 private:
  ThreadWake();

  int fd_ = -1;
};

}  // namespace rpcrdma::runtime

#endif  // RPCRDMA_PLUGIN_RUNTIME_THREAD_WAKE_H_
