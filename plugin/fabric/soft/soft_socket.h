// Sockets under the soft fabric: address parsing and a non-blocking framed
// byte stream.
//
// Addresses:
//   unix:/path/to/socket   a Unix-domain stream socket in the file system
//   unix:@name             a Linux abstract Unix-domain socket
//   tcp:HOST:PORT          TCP; HOST:PORT as plugin/fabric/address.h parses
//                          it (a name, IPv4, or bracketed IPv6 such as
//                          [::1]); PORT 0 when listening lets the system
//                          choose.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_SOCKET_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_SOCKET_H_

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma::fabric::soft {

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  // The file-system path of a non-abstract Unix-domain address.
  std::string unix_path;
};

// `passive`: the address is to listen on (getaddrinfo AI_PASSIVE).
absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address,
                                           bool passive = false);
// The address a socket is bound to, in the syntax ParseAddress accepts.
absl::StatusOr<std::string> LocalAddressOf(int fd);
// The address of a connected socket's peer, in the same syntax ("unix:"
// for an unnamed Unix-domain peer).
absl::StatusOr<std::string> PeerAddressOf(int fd);

// A listening, non-blocking socket.
absl::StatusOr<UniqueFd> ListenOn(const SocketAddress& address);
// Starts a non-blocking connect. `in_progress` is set when the outcome is
// pending (wait for writability, then check SocketError).
absl::StatusOr<UniqueFd> StartConnect(const SocketAddress& address,
                                      bool& in_progress);
// The pending error of a socket (SO_ERROR), 0 when none.
int SocketError(int fd);
absl::Status MakeNonBlocking(int fd);

// A non-blocking stream socket carrying frames: an input buffer filled by
// Read() and an output buffer drained by Flush().
class FrameStream {
 public:
  enum class IoResult { kOk, kWouldBlock, kEnd, kError };

  FrameStream() = default;
  explicit FrameStream(UniqueFd fd) : fd_(std::move(fd)) {}

  int fd() const { return fd_.get(); }
  bool open() const { return fd_.valid(); }
  void Close() { fd_.reset(); }
  // Closed as a stream, with its descriptor handed to the caller.
  UniqueFd ReleaseFd() { return UniqueFd(fd_.release()); }
  // Reads at most `limit` octets into the input buffer.
  IoResult Read(size_t limit);
  // Writes as much pending output as the socket takes.
  IoResult Flush();

  // Unconsumed input.
  absl::Span<const uint8_t> input() const {
    return {in_.get() + in_begin_, in_end_ - in_begin_};
  }
  void Consume(size_t n);
  // Input that arrived with this stream from elsewhere (a listener that
  // read past the CONNECT frame).
  void PrependInput(absl::Span<const uint8_t> data);

  // Output buffer; frame encoders append to it.
  std::vector<uint8_t>& output() { return output_; }
  size_t pending_output() const { return output_.size() - output_pos_; }
  void DiscardOutput() {
    output_.clear();
    output_pos_ = 0;
  }
  int last_errno() const { return last_errno_; }

 private:
  UniqueFd fd_;
  std::unique_ptr<uint8_t[]> in_;  // input, not zero-filled
  size_t in_capacity_ = 0;
  size_t in_begin_ = 0;    // first unconsumed octet
  size_t in_end_ = 0;      // one past the last octet read
  bool draining_ = false;  // the last Read stopped at its limit, not EAGAIN
  std::vector<uint8_t> output_;
  size_t output_pos_ = 0;
  int last_errno_ = 0;
};

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_SOCKET_H_
