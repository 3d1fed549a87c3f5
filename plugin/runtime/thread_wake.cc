#include "plugin/runtime/thread_wake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace rpcrdma::runtime {

ThreadWake& ThreadWake::ForThisThread() {
  thread_local ThreadWake wake;
  return wake;
}

ThreadWake::ThreadWake() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ThreadWake::~ThreadWake() {
  if (fd_ >= 0) close(fd_);
}

void ThreadWake::Signal() const {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  // Only EAGAIN can fail here (the counter at its maximum), and then the
  // descriptor is readable already.
  [[maybe_unused]] const ssize_t n = write(fd_, &one, sizeof one);
}

void ThreadWake::Drain() const {
  if (fd_ < 0) return;
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = read(fd_, &count, sizeof count);
}

}  // namespace rpcrdma::runtime
