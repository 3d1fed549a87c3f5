#include "plugin/fabric/verbs/verbs_resources.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::verbs {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

absl::Status VerbError(absl::string_view verb, int err) {
  const std::string text = absl::StrCat(verb, ": ", std::strerror(err));
  switch (err) {
    case EINVAL:
    case EMSGSIZE:
    case E2BIG:
      return absl::InvalidArgumentError(text);
    case ENOMEM:
    case ENOSPC:
    case EAGAIN:
      return absl::ResourceExhaustedError(text);
    case ENODEV:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EADDRNOTAVAIL:
    case ECONNREFUSED:
      return absl::UnavailableError(text);
    case EADDRINUSE:
      return absl::AlreadyExistsError(text);
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(text);
    case EOPNOTSUPP:
      return absl::UnimplementedError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status ErrnoError(absl::string_view verb) {
  const int err = errno;
  return VerbError(verb, err != 0 ? err : EIO);
}

absl::Status EventChannelError() {
  const int err = errno;
  if (err != ENODEV && err != ENOENT)
    return ErrnoError("rdma_create_event_channel");
  return absl::NotFoundError(absl::StrCat(
      "no RDMA device on this host (rdma_create_event_channel: ",
      std::strerror(err),
      "); `ibv_devices` or `rdma link` lists devices, and a Soft-RoCE one "
      "can be added with `rdma link add rxe0 type rxe netdev <interface>`; "
      "soft+tcp:// and soft+unix:// need no device"));
}

absl::Status SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoError("fcntl(O_NONBLOCK)");
  }
  return absl::OkStatus();
}

}  // namespace rpcrdma::fabric::verbs
