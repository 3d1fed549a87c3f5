#include "examples/nfs3d/file_workers.h"

#include <algorithm>

namespace rpcrdma::nfs3d {

FileWorkers::FileWorkers(unsigned threads, size_t waiting)
    : waiting_limit_(std::max<size_t>(waiting, 1)) {
  // Started here, by the thread that makes the server, with its
  // credentials; each changes only its own afterwards.
  threads_.reserve(std::max(threads, 1u));
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) {
    threads_.emplace_back([this] { Work(); });
  }
}

FileWorkers::~FileWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  call_waits_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool FileWorkers::Run(const Identity& identity, void (*run)(void*),
                      void* context) {
  // A caller the thread already acts as (a root caller of a root server
  // under no_root_squash, say) runs here: no credential changes, so
  // nothing that makes the thread unfit for the transport, and none of the
  // two wake-ups a hand-off costs.
  if (AlreadyActsAs(identity)) {
    run(context);
    return true;
  }
  Call call;
  call.identity = &identity;
  call.run = run;
  call.context = context;
  std::unique_lock<std::mutex> lock(mu_);
  room_.wait(lock, [this] { return waiting_.size() < waiting_limit_; });
  waiting_.push_back(&call);
  call_waits_.notify_one();
  call.done.wait(lock, [&call] { return call.finished; });
  return call.ran;
}

void FileWorkers::Work() {
  for (;;) {
    Call* call = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      call_waits_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;
      call = waiting_.front();
      waiting_.pop_front();
    }
    room_.notify_one();
    bool ran;
    {
      // The worker is itself again before the dispatch thread goes on.
      const ActingAs caller(*call->identity);
      ran = caller.ok();
      if (ran) call->run(call->context);
    }
    std::lock_guard<std::mutex> lock(mu_);
    call->ran = ran;
    call->finished = true;
    call->done.notify_one();
  }
}

}  // namespace rpcrdma::nfs3d
