// rpcrdma::Channel: the client side of RPC-over-RDMA version one (RFC 8166)
// on one connection. The Upper Layer Binding contract is in types.h.
//
// Threads: every Channel owns one event-loop thread that drives the
// protocol engine and the fabric. Call(), Cancel() and counters() may be
// used from any thread. Callbacks run on the loop thread (or, for a call
// made after the connection was lost, at once on the calling thread): they
// must not block for long and must not destroy the Channel; they may start
// new calls.
//
// Status codes of a call:
// - UNAVAILABLE: the connection was lost (or the Channel was destroyed)
//   before the reply arrived; there is no reconnect in this version.
// - DEADLINE_EXCEEDED: the deadline passed first (enforced by the loop).
// - CANCELLED: Cancel() was called first.
// - RESOURCE_EXHAUSTED: the call's transport header alone exceeds the
//   inline threshold.
// - INVALID_ARGUMENT: a malformed call (see the engine's checks) or, from
//   the peer, RDMA_ERROR ERR_CHUNK; FAILED_PRECONDITION for ERR_VERS;
//   DATA_LOSS for a reply that breaks RFC 8166; ALREADY_EXISTS for an XID
//   already in flight.
// Whatever the outcome, the call's memory is no longer exposed to the peer
// when its completion is delivered.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CHANNEL_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <future>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/include/rpcrdma/types.h"
#include "plugin/proto/config.pb.h"

namespace rpcrdma {

namespace api_internal {
class ChannelLoop;
}  // namespace api_internal

class Channel {
 public:
  using CallId = uint64_t;
  using Callback = std::function<void(absl::StatusOr<Reply>)>;

  // Connects to `uri` and returns once the connection is established:
  //   soft+unix:///path, soft+unix://@abstract   the soft fabric, Unix socket
  //   soft+tcp://host:port                       the soft fabric over TCP
  //   rdma://host:port                           verbs (rdma-core)
  // `config` is validated (INVALID_ARGUMENT naming the field); its fabric,
  // when set, must agree with the scheme. UNAVAILABLE when the peer cannot
  // be reached or rejects, DEADLINE_EXCEEDED after timeouts.connect_ms,
  // UNIMPLEMENTED for a version policy other than V1.
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      absl::string_view uri, const config::TransportConfig& config);

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  // Fails every pending call with UNAVAILABLE (callbacks run before the
  // destructor returns), disconnects and joins the loop thread.
  ~Channel();

  // Starts a call; `done` runs exactly once, on the loop thread.
  CallId Call(CallRequest request, Callback done);
  // The same, completing a future instead.
  std::future<absl::StatusOr<Reply>> Call(CallRequest request);
  // Ends the call with CANCELLED if it has not completed yet.
  void Cancel(CallId call);

  Counters counters() const;
  // False once the connection has been lost.
  bool connected() const;

 private:
  explicit Channel(std::unique_ptr<api_internal::ChannelLoop> loop);
  std::unique_ptr<api_internal::ChannelLoop> loop_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CHANNEL_H_
