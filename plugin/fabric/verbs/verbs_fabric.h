// The verbs fabric: fabric.h on rdma-core (librdmacm for connections,
// libibverbs for the data path), for InfiniBand, RoCE (including
// Soft-RoCE) and iWARP devices.
//
// Addresses are "IPV4:PORT" or "[IPV6]:PORT"; listening on port 0 picks a
// port, which Listener::address() reports.
//
// Semantics follow fabric.h. Choices that fabric.h leaves open:
// - Connect() resolves the address and route before it returns (bounded by
//   the resolution timeouts below), so that the endpoint has its device,
//   protection domain and queue pair at once: memory can be registered and
//   receives posted while the connection is still being set up. A failed
//   resolution still returns an endpoint, which reports kUnreachable and
//   has no device (Register and every post fail with FailedPrecondition).
// - rdma-cm limits private data on InfiniBand and RoCE: 56 octets on
//   connect, 196 on accept, 148 on reject (InvalidArgument beyond that).
//   Received private data is padded to those sizes by the CM.
// - A CM reject that is not the peer consumer's (no listener on the port,
//   for instance) is reported as kUnreachable, not kRejected.
// - Sends, RDMA Reads and Writes, window binds and invalidations posted
//   on the active side before kEstablished fail with FailedPrecondition;
//   the passive side may post them as soon as Accept() has returned (its
//   queue pair is ready to send then). Receives may be posted at any
//   time. After the connection has gone away posts go to
//   the queue pair (in the error state) and complete with kFlushed.
// - A LocalBuffer outside its registration, or of another endpoint's
//   registration, makes the post fail with InvalidArgument. RDMA Read and
//   Write move the sum of the scatter/gather lengths, which must equal the
//   RemoteRegion's length. Zero-length elements are left out.
// - Any completion in error while connected (including a flush, which means
//   the queue pair has entered the error state) starts a disconnect, so both
//   sides see kDisconnected.
// - Windows: type 2 memory windows when the device has them
//   (remote_invalidation is then true); otherwise, or when
//   WindowMode::kRegistrations is asked for, a memory region per window,
//   registered with the remote rights and deregistered on invalidation,
//   with the same completions (produced by the endpoint itself).
//   InvalidateWindow of a handle that is not bound (or was invalidated by
//   the peer) fails with NotFound.
// - RNR retries are limited (kRnrRetryCount), so a Send that finds no
//   posted receive completes with kReceiverNotReady instead of retrying for
//   ever.
// - An endpoint, its registrations and a listener are used from one thread.
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_FABRIC_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_FABRIC_H_

#include <cstdint>
#include <memory>

#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

enum class WindowMode {
  kAuto,           // memory windows if the device has type 2 windows
  kMemoryWindows,  // type 2 memory windows, or every bind fails
  kRegistrations,  // a memory region per window
};

struct VerbsFabricOptions {
  WindowMode windows = WindowMode::kAuto;
  // Inline data asked of each queue pair (Capabilities reports what the
  // device granted; 0 if it granted none).
  uint32_t max_inline_data = 128;
  // Address and route resolution timeouts of Connect().
  int resolve_timeout_ms = 2000;
  // Transport retries (IB retry_count) and RNR retries of the queue pair.
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 1;
};

std::unique_ptr<Fabric> MakeVerbsFabric(VerbsFabricOptions options = {});

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_FABRIC_H_
