// The fabric interface: what RPC-over-RDMA needs from an RDMA provider, and
// nothing about RPC. Two implementations sit under it: `verbs` (rdma-core)
// and `soft` (a software model of an RC queue pair with the same semantics).
//
// Model (InfiniBand Architecture, as exposed by libibverbs / librdmacm):
// - An Endpoint is one reliable connected queue pair with its own completion
//   queue and its own protection domain.
// - Receives are pre-posted and consumed in order by incoming Sends. A Send
//   that finds no posted receive, or a receive too small for it, is fatal to
//   the connection (receiver overrun / local length error at the receiver).
// - Memory is registered for local access; a Window exposes part of a
//   registration to the peer with explicit remote rights and a handle
//   (rkey). A window can be invalidated locally, or remotely by a Send With
//   Invalidate that names its handle. After invalidation any remote access
//   through the handle fails with a remote access error, which is fatal to
//   the connection.
// - Every posted operation completes exactly once, successfully or with an
//   error. On disconnect every outstanding operation is flushed with
//   kFlushed.
// - Completions and connection events are consumed from the caller's own
//   event loop: event_fd() becomes readable when Poll* would return
//   something. No library thread is required.
#ifndef RPCRDMA_PLUGIN_FABRIC_FABRIC_H_
#define RPCRDMA_PLUGIN_FABRIC_FABRIC_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma::fabric {

// Remote access rights of a window (bit flags).
enum RemoteAccess : uint32_t {
  kRemoteNone = 0,
  kRemoteRead = 1,   // the peer may RDMA Read from it
  kRemoteWrite = 2,  // the peer may RDMA Write into it
};

// Locally registered memory. Destroying it deregisters the memory; every
// window on it must have been invalidated first.
class Registration {
 public:
  virtual ~Registration() = default;
  virtual absl::Span<uint8_t> memory() const = 0;
};

// One scatter/gather element: a byte range of a registration.
struct LocalBuffer {
  Registration* registration = nullptr;
  size_t offset = 0;
  size_t length = 0;
};

// What a peer needs to reach a window: handle (rkey), offset of the first
// byte as the peer must name it (an address on verbs), and length.
struct RemoteRegion {
  uint32_t handle = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  friend bool operator==(const RemoteRegion&, const RemoteRegion&) = default;
};

enum class WorkType {
  kReceive,
  kSend,
  kSendWithInvalidate,
  kRdmaRead,
  kRdmaWrite,
  kBindWindow,
  kLocalInvalidate,
};

enum class WorkStatus {
  kSuccess,
  kFlushed,               // the connection went away before it ran
  kLocalLengthError,      // receive buffer too small for the incoming Send
  kLocalProtectionError,  // a local SGE outside its registration
  kRemoteAccessError,     // bad handle, bounds, rights, or invalidated
  kRemoteInvalidRequest,  // e.g. Send With Invalidate of an unknown handle
  kReceiverNotReady,      // no receive posted at the peer (RNR retries
                          // exhausted)
  kTransportError,        // the connection broke, or any other failure
};

absl::string_view WorkTypeName(WorkType type);
absl::string_view WorkStatusName(WorkStatus status);

struct Completion {
  uint64_t wr_id = 0;
  WorkType type = WorkType::kReceive;
  WorkStatus status = WorkStatus::kSuccess;
  uint32_t byte_length = 0;  // receives: octets received
  // Receives completed by a Send With Invalidate carry the handle the peer
  // invalidated here.
  std::optional<uint32_t> invalidated_handle;
  // For a failure, the provider's own name of it when it says more than
  // `status` (verbs: ibv_wc_status_str, e.g. "local QP operation error");
  // static storage.
  absl::string_view provider_status;
};

struct Capabilities {
  std::string device_name;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
  uint32_t max_rdma_read_sge = 0;
  // Outstanding RDMA Reads this side may issue (ORD / initiator depth) and
  // accept (IRD / responder resources), as negotiated for the connection.
  uint32_t initiator_depth = 0;
  uint32_t responder_resources = 0;
  uint32_t max_send_queue = 0;
  uint32_t max_recv_queue = 0;
  uint32_t max_message_size = 0;  // largest Send
  // Largest RDMA Read or Write one work request moves (verbs: the port's
  // max_msg_sz, which bounds every operation).
  uint32_t max_rdma_size = 0;
  // Remotely invalidatable windows exist (memory windows type 2 on verbs).
  // When false, windows are still offered but a Send With Invalidate of
  // them fails, and the caller must not advertise remote invalidation.
  bool remote_invalidation = false;
};

struct EndpointOptions {
  // The owner drives the endpoint from an event loop that follows the
  // owner-driven protocol of Endpoint (OnEventFdReadable, the owner polls
  // after its own calls, event_fd_events) from the start. The soft fabric
  // then makes event_fd() the socket itself: one descriptor per
  // connection, which is what lets one process hold ten thousand.
  bool owner_driven = false;
  uint32_t send_queue_depth = 128;
  uint32_t recv_queue_depth = 128;
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 1;
  uint32_t initiator_depth = 16;      // clamped to the device's limit
  uint32_t responder_resources = 16;  // clamped to the device's limit
};

// Private data every provider carries: the limits of the InfiniBand CM as
// rdma-cm uses it on InfiniBand and RoCE (RDMA_PS_TCP), the smallest in
// use. Providers refuse more with INVALID_ARGUMENT, so code that works on
// one provider works on all. RFC 8797 private data (8 octets) fits in each.
inline constexpr size_t kMaxConnectPrivateData = 56;
inline constexpr size_t kMaxAcceptPrivateData = 196;
inline constexpr size_t kMaxRejectPrivateData = 148;

enum class ConnectionEventType {
  kEstablished,
  kRejected,     // private_data holds the peer's reject payload, if any
  kUnreachable,  // address/route resolution or connect failed
  kDisconnected,
  kDeviceRemoved,
};
absl::string_view ConnectionEventTypeName(ConnectionEventType type);

struct ConnectionEvent {
  ConnectionEventType type = ConnectionEventType::kDisconnected;
  // The peer's private data (accept or reject). Providers pad it; search it
  // rather than trusting its length.
  std::vector<uint8_t> private_data;
  std::string detail;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  virtual const Capabilities& capabilities() const = 0;

  virtual absl::StatusOr<std::unique_ptr<Registration>> Register(
      absl::Span<uint8_t> memory) = 0;

  // Exposes `buffer` to the peer with `access` rights; the window is usable
  // by the peer once its kBindWindow completion has arrived (a caller may
  // advertise it in the same Send, which is ordered after the bind).
  virtual absl::StatusOr<RemoteRegion> BindWindow(uint64_t wr_id,
                                                  const LocalBuffer& buffer,
                                                  uint32_t access) = 0;
  virtual absl::Status InvalidateWindow(uint64_t wr_id, uint32_t handle) = 0;

  virtual absl::Status PostReceive(uint64_t wr_id,
                                   const LocalBuffer& buffer) = 0;
  // Send, or Send With Invalidate when `invalidate` names a handle of the
  // peer's.
  virtual absl::Status PostSend(uint64_t wr_id,
                                absl::Span<const LocalBuffer> gather,
                                std::optional<uint32_t> invalidate = {}) = 0;
  virtual absl::Status PostRdmaRead(uint64_t wr_id,
                                    absl::Span<const LocalBuffer> scatter,
                                    const RemoteRegion& source) = 0;
  virtual absl::Status PostRdmaWrite(uint64_t wr_id,
                                     absl::Span<const LocalBuffer> gather,
                                     const RemoteRegion& target) = 0;

  // Readable when PollCompletions or PollConnectionEvent has something.
  virtual int event_fd() const = 0;
  virtual size_t PollCompletions(absl::Span<Completion> out) = 0;
  virtual std::optional<ConnectionEvent> PollConnectionEvent() = 0;

  // Event-loop owners that want Poll* without system calls when nothing
  // arrived (an owner that never calls OnEventFdReadable keeps the
  // behaviour above):
  // - OnEventFdReadable(): event_fd() was reported readable. From the first
  //   call on, Poll* take in input from outside (the socket, the completion
  //   channel, the CM) only after such a report, and event_fd() becomes
  //   readable for such input only: completions that the owner's own calls
  //   produced (a bind, a local invalidation, a flush after Disconnect) are
  //   found by polling. So the owner polls until both Poll* return nothing
  //   after every call into the endpoint, before it waits on event_fd().
  // - poll_deadline(): when set, the owner polls again by then even if
  //   event_fd() stays quiet: the endpoint holds delayed work (the soft
  //   fabric's coalesced acknowledgements).
  virtual void OnEventFdReadable() {}
  // The readiness to wait for on event_fd() (epoll events): EPOLLIN, plus
  // EPOLLOUT while an owner-driven soft endpoint has output the socket has
  // not taken (or a connect in progress). The owner looks again after
  // every call into the endpoint.
  virtual uint32_t event_fd_events() const { return 0x001; /* EPOLLIN */ }
  // Busy polling: the next Poll* look for completions as cheaply as the
  // provider can, without waiting (verbs: the completion queue, read in
  // user space, not its channel).
  virtual void OnSpin() { OnEventFdReadable(); }
  virtual std::optional<std::chrono::steady_clock::time_point> poll_deadline()
      const {
    return std::nullopt;
  }

  // Starts an orderly disconnect; outstanding work flushes and a
  // kDisconnected event follows.
  virtual void Disconnect() = 0;
};

// A connect request waiting at a listener.
class ConnectRequest {
 public:
  virtual ~ConnectRequest() = default;
  virtual absl::Span<const uint8_t> private_data() const = 0;
  // Where the request comes from, in the fabric's address syntax ("HOST:PORT"
  // with brackets around an IPv6 host; the soft fabric prefixes "tcp:" or
  // "unix:"); empty when unknown.
  virtual std::string peer_address() const = 0;
  virtual absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) = 0;
  virtual absl::Status Reject(absl::Span<const uint8_t> private_data) = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  // The address peers connect to (with the port chosen when 0 was asked).
  virtual std::string address() const = 0;
  virtual int event_fd() const = 0;
  // nullptr when no request is waiting.
  virtual absl::StatusOr<std::unique_ptr<ConnectRequest>>
  PollConnectRequest() = 0;
};

class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual absl::string_view name() const = 0;
  // Starts an active connect; the outcome arrives as a connection event
  // (kEstablished with the peer's private data, kRejected, kUnreachable).
  virtual absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) = 0;
  virtual absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address) = 0;
};

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_FABRIC_H_
