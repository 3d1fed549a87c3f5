#include "plugin/fabric/soft/soft_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/fabric/address.h"

namespace rpcrdma::fabric::soft {
namespace {

absl::Status ErrnoStatus(absl::string_view what, int err) {
  return absl::UnavailableError(
      absl::StrCat(what, ": ", absl::string_view(strerror(err))));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address,
                                           bool passive) {
  SocketAddress out;
  if (absl::ConsumePrefix(&address, "unix:")) {
    auto* un = reinterpret_cast<sockaddr_un*>(&out.storage);
    un->sun_family = AF_UNIX;
    const bool abstract = absl::ConsumePrefix(&address, "@");
    // Abstract names start with a NUL octet; paths end with one.
    if (address.empty() || address.size() + 1 > sizeof(un->sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "soft fabric: bad unix address length ", address.size()));
    }
    if (address.find('\0') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          "soft fabric: NUL inside a unix address");
    }
    const size_t start = abstract ? 1 : 0;
    std::memcpy(un->sun_path + start, address.data(), address.size());
    out.length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + start +
                               address.size() + (abstract ? 0 : 1));
    out.family = AF_UNIX;
    if (!abstract) out.unix_path = std::string(address);
    return out;
  }
  if (absl::ConsumePrefix(&address, "tcp:")) {
    absl::StatusOr<HostPort> host_port = ParseHostPort(address);
    if (!host_port.ok()) return host_port.status();
    absl::StatusOr<ResolvedAddress> resolved =
        ResolveHostPort(*host_port, passive);
    if (!resolved.ok()) return resolved.status();
    std::memcpy(&out.storage, &resolved->storage, resolved->length);
    out.length = resolved->length;
    out.family = resolved->family;
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "soft fabric: address must start with unix: or tcp: (", address, ")"));
}

namespace {

// `ss` in the syntax ParseAddress accepts.
absl::StatusOr<std::string> FormatAddress(const sockaddr_storage& ss,
                                          socklen_t len) {
  char host[INET6_ADDRSTRLEN] = {};
  switch (ss.ss_family) {
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
      const size_t n = len - offsetof(sockaddr_un, sun_path);
      if (n > 0 && un->sun_path[0] == '\0') {
        return absl::StrCat("unix:@",
                            absl::string_view(un->sun_path + 1, n - 1));
      }
      return absl::StrCat("unix:", absl::string_view(un->sun_path));
    }
    case AF_INET: {
      const auto* in4 = reinterpret_cast<const sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
      return absl::StrCat("tcp:", host, ":", ntohs(in4->sin_port));
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
      return absl::StrCat("tcp:[", host, "]:", ntohs(in6->sin6_port));
    }
    default:
      return absl::InternalError("soft fabric: unknown socket family");
  }
}

}  // namespace

absl::StatusOr<std::string> LocalAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return ErrnoStatus("getsockname", errno);
  }
  return FormatAddress(ss, len);
}

absl::StatusOr<std::string> PeerAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return ErrnoStatus("getpeername", errno);
  }
  return FormatAddress(ss, len);
}

absl::Status MakeNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl", errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> ListenOn(const SocketAddress& address) {
  UniqueFd fd(
      socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket", errno);
  if (address.family != AF_UNIX) {
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage),
           address.length) != 0) {
    return ErrnoStatus("bind", errno);
  }
  // As deep a queue as the system allows: a Unix-domain client finding it
  // full is refused at once (EAGAIN) instead of retried as TCP retries a
  // SYN, and a Server is meant to take thousands of clients at once.
  if (listen(fd.get(), SOMAXCONN) != 0) return ErrnoStatus("listen", errno);
  return fd;
}

absl::StatusOr<UniqueFd> StartConnect(const SocketAddress& address,
                                      bool& in_progress) {
  in_progress = false;
  UniqueFd fd(
      socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket", errno);
  if (address.family != AF_UNIX) {
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage),
                 address.length);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    // A Unix-domain socket whose backlog is full reports EAGAIN; treat it
    // as unreachable like any other refusal.
    if (errno != EINPROGRESS) return ErrnoStatus("connect", errno);
    in_progress = true;
  }
  return fd;
}

int SocketError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

FrameStream::IoResult FrameStream::Read(size_t limit) {
  if (!fd_.valid()) return IoResult::kError;
  // Input lands directly in the stream's buffer, which is not zero-filled
  // (growing a vector by the most a read may bring would zero-fill that
  // much on every read, more than the I/O costs). It starts small and
  // doubles while reads fill it; a large buffer is given back once it has
  // been consumed, so idle connections hold little receive memory.
  constexpr size_t kInitial = 16 * 1024;
  constexpr size_t kLargest = 2 * 1024 * 1024;
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
  } else if (in_begin_ > 0 && in_begin_ >= in_capacity_ / 2) {
    std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  size_t total = 0;
  while (total < limit) {
    if (in_capacity_ - in_end_ < std::min<size_t>(limit - total, kInitial)) {
      const size_t capacity =
          std::min(std::max(in_capacity_ * 2, kInitial),
                   std::max(kLargest, in_end_ - in_begin_ + kInitial));
      std::unique_ptr<uint8_t[]> grown(new uint8_t[capacity]);
      if (in_end_ > in_begin_) {
        std::memcpy(grown.get(), in_.get() + in_begin_, in_end_ - in_begin_);
      }
      in_end_ -= in_begin_;
      in_begin_ = 0;
      in_ = std::move(grown);
      in_capacity_ = capacity;
    }
    const size_t want = std::min(limit - total, in_capacity_ - in_end_);
    const ssize_t n = recv(fd_.get(), in_.get() + in_end_, want, 0);
    if (n > 0) {
      in_end_ += static_cast<size_t>(n);
      total += static_cast<size_t>(n);
      // A short read took everything the socket held: asking again would
      // only return EAGAIN (one system call per wake-up saved).
      if (static_cast<size_t>(n) < want) {
        draining_ = false;
        return IoResult::kWouldBlock;
      }
      continue;
    }
    draining_ = false;
    if (n == 0) return IoResult::kEnd;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kWouldBlock;
    last_errno_ = errno;
    return IoResult::kError;
  }
  draining_ = true;  // the budget ran out before the socket did
  return IoResult::kOk;
}

FrameStream::IoResult FrameStream::Flush() {
  if (!fd_.valid()) return IoResult::kError;
  while (output_pos_ < output_.size()) {
    const ssize_t n = send(fd_.get(), output_.data() + output_pos_,
                           output_.size() - output_pos_, MSG_NOSIGNAL);
    if (n > 0) {
      output_pos_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (output_pos_ > 0 && output_pos_ >= output_.size() / 2) {
        output_.erase(output_.begin(),
                      output_.begin() + static_cast<ptrdiff_t>(output_pos_));
        output_pos_ = 0;
      }
      return IoResult::kWouldBlock;
    }
    last_errno_ = n < 0 ? errno : EPIPE;
    return IoResult::kError;
  }
  output_.clear();
  output_pos_ = 0;
  return IoResult::kOk;
}

void FrameStream::Consume(size_t n) {
  in_begin_ += std::min(n, in_end_ - in_begin_);
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    if (in_capacity_ > 64 * 1024 && !draining_) {
      in_.reset();
      in_capacity_ = 0;
    }
  }
}

void FrameStream::PrependInput(absl::Span<const uint8_t> data) {
  const size_t held = in_end_ - in_begin_;
  std::unique_ptr<uint8_t[]> joined(new uint8_t[data.size() + held + 1]);
  if (!data.empty()) std::memcpy(joined.get(), data.data(), data.size());
  if (held > 0) {
    std::memcpy(joined.get() + data.size(), in_.get() + in_begin_, held);
  }
  in_ = std::move(joined);
  in_capacity_ = data.size() + held + 1;
  in_begin_ = 0;
  in_end_ = data.size() + held;
}

}  // namespace rpcrdma::fabric::soft
