// A file descriptor that closes itself.
#ifndef RPCRDMA_EXAMPLES_NFS3D_UNIQUE_FD_H_
#define RPCRDMA_EXAMPLES_NFS3D_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace rpcrdma::nfs3d {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  // The descriptor, no longer closed by this.
  int release() { return std::exchange(fd_, -1); }
  bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_UNIQUE_FD_H_
