// The soft fabric: a software model of an RDMA reliable connected queue
// pair over stream sockets (Unix-domain or TCP), for machines without RDMA
// hardware. See soft_wire.h for the protocol between two soft endpoints
// and soft_socket.h for the address syntax.
//
// Semantics follow fabric.h. Choices that fabric.h leaves open:
// - A LocalBuffer outside its registration, or naming a registration of
//   another endpoint, makes the post call return InvalidArgument; nothing
//   is posted and no completion follows.
// - RDMA Read and Write move the sum of the scatter/gather lengths, which
//   must equal the RemoteRegion's length (InvalidArgument otherwise).
// - Send-queue work (Send, RDMA Read/Write) posted before the connection is
//   established fails with FailedPrecondition; receives, windows and
//   invalidations may be posted at any time. After the connection has gone
//   away every post succeeds and completes with kFlushed (an invalidation
//   still kills the window), except BindWindow, which fails with
//   FailedPrecondition.
// - Send With Invalidate of a handle the receiver does not know: the
//   sender's Send completes with kRemoteInvalidRequest, the receive it
//   consumed with kLocalProtectionError, and the connection breaks.
// - A Send that finds no posted receive completes with kReceiverNotReady; a
//   Send larger than the receive buffer completes with
//   kRemoteInvalidRequest and the receive with kLocalLengthError; both
//   break the connection.
// - A remote access violation completes the initiator's operation with
//   kRemoteAccessError and breaks the connection on both sides.
// - The passive side's kEstablished event carries no private data (the
//   initiator's is in the ConnectRequest); the active side's carries the
//   accept private data exactly as sent.
// - Capabilities.max_message_size bounds Sends; RDMA transfers may be up to
//   4 GiB - 1 and travel in 64 KiB pieces (on the socket path).
// - The initiator depth (ORD) is negotiated at connect time as the smaller
//   of this side's request and the peer's responder resources (IRD), and is
//   enforced: an RDMA Read beyond it waits, and everything posted after it
//   waits behind it, as in a send queue. A peer that exceeds this side's
//   responder resources gets kRemoteInvalidRequest and the connection
//   breaks.
// - Disconnect() while still connecting abandons the attempt and reports
//   kDisconnected.
// - Over a Unix-domain socket, RDMA Read and Write data can move by
//   cross-memory attach (process_vm_readv/process_vm_writev) with one copy
//   instead of through the socket; see SoftFabricOptions and soft_wire.h.
//   The initiator chooses the path per operation; completions and ordering
//   are the same on both.
//   The responder still checks every access against its own window table,
//   so violations fail exactly as on the socket path.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_FABRIC_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_FABRIC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

struct SoftFabricOptions {
  // Device limits reported in Capabilities and enforced on posts.
  uint32_t max_send_sge = 16;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 256;
  uint32_t max_rdma_read_sge = 16;
  uint32_t max_rd_atomic = 16;  // the most ORD/IRD may be negotiated to
  uint32_t max_queue_depth = 4096;
  uint32_t max_message_size = 1024 * 1024;  // at most 1 MiB

  // Offer cross-memory attach on Unix-domain connections: RDMA Read/Write
  // data is copied once, directly between the two processes' memory,
  // instead of travelling through the socket. Used in a direction only
  // when both sides offer it and the responder's probe of the initiator's
  // memory works (Yama ptrace_scope, differing credentials, seccomp or pid
  // namespaces can refuse it); otherwise the socket path is used.
  bool cross_memory_attach = true;
  // RDMA Reads and Writes shorter than this still go through the socket
  // even when cross-memory attach is in use: below about 8 KiB the
  // process_vm_* call costs more than the socket copies (see
  // bench/fabric_bench.cc).
  uint32_t cross_memory_min_length = 8 * 1024;
  // Testing: this fabric's endpoints treat every probe of a peer as
  // failed, so a peer's offer is declined.
  bool fail_cross_memory_probe = false;

  // Fault injection, applied to every endpoint this fabric creates.
  // When nonzero, the Nth Send/RDMA Read/RDMA Write posted on an endpoint
  // breaks its connection abruptly (as a cut link would): that operation
  // completes with kTransportError, everything else outstanding with
  // kFlushed, and both sides see kDisconnected.
  uint64_t break_at_operation = 0;
  // Each completion is held back for this many PollCompletions calls after
  // the one that would have returned it (event_fd stays readable).
  uint32_t completion_delay_polls = 0;
  // When set, listeners reject every connect request themselves with this
  // private data; PollConnectRequest never returns one.
  std::optional<std::vector<uint8_t>> reject_all;

  // Listeners close an accepted socket whose CONNECT frame has not arrived
  // within this many milliseconds (0: never), and PollConnectRequest then
  // reports DEADLINE_EXCEEDED once for it.
  uint32_t handshake_timeout_ms = 0;
  // Active side: once the socket has connected, the listener's ACCEPT or
  // REJECT must arrive within this many milliseconds (0: no bound), or the
  // endpoint reports kUnreachable saying no handshake came. A peer that
  // closes the socket, or sends what is not a handshake frame, before
  // either is reported as kUnreachable at once, naming what it did: such a
  // peer is not a soft-fabric listener (say a Thrift server on the port).
  uint32_t handshake_answer_timeout_ms = 0;
};

// Listener behaviour at a descriptor or memory limit: when accept() fails
// with EMFILE, ENFILE, ENOBUFS or ENOMEM the listener stops watching its
// socket (the pending connections wait in the kernel's backlog) and tries
// again after a pause that starts at kAcceptBackoffInitialMs and doubles up
// to kAcceptBackoffMaxMs while the failures go on, so its event_fd does not
// stay readable and an event loop does not spin. PollConnectRequest reports
// the failure as RESOURCE_EXHAUSTED naming the errno, once per failed
// attempt. Chosen over keeping a spare descriptor to accept-and-close:
// clients in the backlog are served once descriptors free up instead of
// being turned away.
inline constexpr uint32_t kAcceptBackoffInitialMs = 5;
inline constexpr uint32_t kAcceptBackoffMaxMs = 1000;

std::unique_ptr<Fabric> MakeSoftFabric(SoftFabricOptions options = {});

// True when `endpoint` is a soft endpoint whose own RDMA Reads and Writes
// now move by cross-memory attach (the peer accepted its offer); false for
// the socket path, before the answer has arrived, or for other providers.
bool SoftUsesCrossMemory(const Endpoint& endpoint);
// How many of `endpoint`'s RDMA Reads and Writes were sent as cross-memory
// requests (0 for other providers).
uint64_t SoftCrossMemoryOperations(const Endpoint& endpoint);

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_FABRIC_H_
