// rpcrdma::Channel: the client side of RPC-over-RDMA version one (RFC 8166)
// on one connection. The Upper Layer Binding contract is in types.h.
//
// Threads: a Channel is driven by one event loop of its Runtime
// (rpcrdma/runtime.h; Runtime::Default() unless ChannelOptions names
// another), shared with other Channels and Servers. Call(), Cancel() and
// counters() may be used from any thread; Call() sends the call on the
// calling thread, without waking the loop. Callbacks run on the loop's
// thread (or, for a call refused at once, on the calling thread before
// Call() returns): they must not block for long and must not destroy the
// Channel; they may start new calls. The backward handler runs on the loop
// thread too, or on a pool of TransportConfig.execution.handler_threads.
//
// Reconnect: when the connection is lost the loop thread fails every
// pending call that does not allow a retry (CallRequest::retry_on_reconnect)
// with UNAVAILABLE, waits until the lost connection has revoked every handle
// it exposed and has flushed (its registrations die with its endpoint),
// and connects again to the same URI: the first attempt at once, then after
// timeouts.reconnect_backoff_initial_ms, doubling up to
// timeouts.reconnect_backoff_max_ms, without end while the Channel lives.
// On success it sends the waiting calls again, in the order they were
// made, with their XIDs unchanged, through a fresh protocol engine: one
// credit until the first reply (RFC 8166 §3.3.1) and inline thresholds
// negotiated anew from the new connection's private data (RFC 8797 §4.2).
// While there is no connection, a new call that allows a retry, or asks
// to wait for the connection (CallRequest::wait_for_ready), waits for the
// reconnect; any other fails at once with UNAVAILABLE, whose message says
// why the connection was lost and when the next attempt is.
// Deadlines and Cancel() apply to waiting calls as to any other.
//
// Abandoned calls (timeouts.abandoned_call_ms): a call ended by its
// deadline or Cancel() after it was sent keeps its credit until a reply
// comes (RFC 8166 §3.3.1), which from a broken or hostile peer may be
// never. When such calls hold every credit of the current grant (with the
// grant of one until the first reply, a single unanswered call) while
// another call waits for a credit, or have been held for
// abandoned_call_ms, the Channel disconnects, which returns
// every credit, and reconnects as above: calls that allow a retry are sent
// again, counters().abandoned_call_disconnects and reconnects count it.
// The kernel client does the same when an RPC times out (xprt_rdma_timer
// calls xprt_force_disconnect).
//
// Idle (timeouts.idle_ms, 0 = never): with no call outstanding and nothing
// received for idle_ms the Channel disconnects, as the kernel client closes
// an idle transport (xprt->idle_timeout, 5 minutes); connected() is then
// false, nothing reconnects until the next call, and that call (with or
// without retry_on_reconnect) waits for the new connection.
//
// A connect the Server rejects (for example beyond its
// limits.max_connections) is UNAVAILABLE, naming the reason the Server
// gave in its reject private data.
//
// Status codes of a call:
// - UNAVAILABLE: the connection was lost before the reply arrived and the
//   call does not allow a retry, or the Channel was destroyed.
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

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/metrics.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/types.h"
#include "rpcrdma/version_two.h"

namespace rpcrdma {

namespace api_internal {
class ChannelCore;
}  // namespace api_internal

struct ChannelOptions {
  // The runtime whose loops drive the Channel; Runtime::Default() when
  // null.
  std::shared_ptr<Runtime> runtime;
  // When set, serves backward-direction calls the Server makes on this
  // connection (RFC 8167), like a Server's handler; the Responder may
  // answer later from any thread. The Channel then posts
  // backchannel.credits receives beyond its forward credits for them and
  // grants that many in every backward reply (RFC 8167 §3). Needs
  // backchannel.enabled (the default); without a handler, backward calls
  // are dropped, as the Linux client drops them without a backchannel
  // service.
  CallHandler backward_handler;
  // Version two: experimental properties and optional message handlers
  // (rpcrdma/version_two.h); INVALID_ARGUMENT from Create naming what is
  // wrong with them.
  VersionTwoOptions version_two = {};
};

class Channel {
 public:
  // rpcrdma/ids.h; kept here for code that names Channel::CallId.
  using CallId = ::rpcrdma::CallId;
  using Callback = std::function<void(absl::StatusOr<Reply>)>;

  // Connects to `uri` and returns once the connection is established:
  //   soft+unix:///path, soft+unix://@abstract   the soft fabric, Unix socket
  //   soft+tcp://host:port                       the soft fabric over TCP
  //   rdma://host:port                           verbs (rdma-core)
  // where host is a name (resolved with getaddrinfo, the first address),
  // an IPv4 literal or a bracketed IPv6 literal (rdma://[fe80::1]:20049);
  // a malformed host or port, or a name that does not resolve, is
  // INVALID_ARGUMENT naming it.
  // `config` is validated (INVALID_ARGUMENT naming the field); its fabric,
  // when set, must agree with the scheme. UNAVAILABLE when the peer cannot
  // be reached or rejects, DEADLINE_EXCEEDED after timeouts.connect_ms,
  // FAILED_PRECONDITION under version_policy V2 when the peer does not
  // speak version two, whose message names the peer's range. Under V2 and
  // V2_WITH_FALLBACK the first message on every connection is an
  // RDMA2_CONNPROP with rdma_vers 2 (draft-cel-nfsv4-rpcrdma-version-two-04
  // §7); a peer that answers with its own RDMA2_CONNPROP is spoken to in
  // version two (calls and replies as RDMA2_MSG / RDMA2_NOMSG, its receive
  // buffer size bounding what goes inline), and a peer that answers
  // ERR_VERS leaves V2_WITH_FALLBACK on version one; see connection_info().
  // Before `config` applies, the environment may stand in for what the
  // program left unset: RPCRDMA_CONFIG (a configuration file, when
  // `config` has no field set), RPCRDMA_CAPTURE (a capture, when it sets
  // no capture_path) and RPCRDMA_LOG (rpcrdma/log.h); docs/debugging.md,
  // "Without touching code". A bad RPCRDMA_CONFIG or RPCRDMA_CAPTURE fails
  // Create with a status naming the variable.
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      absl::string_view uri, const config::TransportConfig& config);

  using BackwardHandler = CallHandler;
  // The same with a backward handler (see ChannelOptions).
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      BackwardHandler backward_handler);
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      ChannelOptions options);

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  // Shutdown(DeadlineIn(kShutdownDrain)) unless Shutdown already ran.
  ~Channel();
  // How long the destructor lets the connection drain.
  static constexpr std::chrono::seconds kShutdownDrain{10};

  // Stops reconnecting, fails every pending call (waiting for a reconnect
  // or not) with UNAVAILABLE (their callbacks and futures complete before
  // it returns), disconnects and waits until the connection has drained:
  // every operation the provider had posted has completed, so that no
  // handle the connection exposed can reach this process's memory any
  // more. OK once drained; DEADLINE_EXCEEDED, saying how long it waited,
  // when `deadline` passed first (a provider that never flushes): the
  // connection's resources are then released without waiting further,
  // which destroying the queue pair makes safe. Calls made afterwards fail
  // with UNAVAILABLE; a second Shutdown returns OK at once. From a
  // callback or backward handler of this Channel, where it would wait for
  // itself, it is FAILED_PRECONDITION.
  absl::Status Shutdown(Deadline deadline = DeadlineIn(kShutdownDrain));

  // Four ways to call. Every call ends by its deadline (CallRequest::
  // deadline); the last three also give the call's id, for Cancel():
  // - BlockingCall: a synchronous call; the cheapest (one wake-up per
  //   call, the calling thread's own), the one to use by default.
  // - StartCall + Await: synchronous calls sent now and read later, or
  //   several in flight from one thread, or a synchronous call another
  //   thread may cancel; as cheap as BlockingCall.
  // - Call with a callback: asynchronous code, an event loop, many calls
  //   in flight from few threads; the callback runs on the loop thread, so
  //   each reply costs a hand-off from the loop to wherever its result is
  //   wanted.
  // - Call returning a CallFuture: code that composes std::futures; a
  //   callback's hand-off plus the future's, the most expensive.
  //
  // Starts a call; `done` runs exactly once, on the loop thread (see
  // Threads above).
  CallId Call(CallRequest request, Callback done);
  // The same, completing the future of the CallFuture returned.
  CallFuture Call(CallRequest request);
  // The same, blocking the calling thread until the call completes; the
  // cheapest way to make a synchronous call. While it waits, the calling
  // thread reads the connection itself (the loop stops watching it
  // meanwhile), so the reply wakes this thread directly instead of a loop
  // thread that would then wake it, the way a synchronous Thrift or
  // libtirpc client reads its own socket. Other calls' callbacks and
  // backward calls it comes across still run on the loop; when several
  // threads wait at once, one reads and the others wait for it. Must not
  // be called from a callback of this Channel.
  absl::StatusOr<Reply> BlockingCall(CallRequest request);
  // BlockingCall in two steps, for a synchronous client that sends a call
  // now and reads its reply later, or keeps several calls in flight and
  // reads their replies in turn (Thrift's send_X / recv_X, its concurrent
  // client): StartCall sends the call as Call() does and returns at once;
  // Await(call) blocks until that call completes, reading the connection
  // on the calling thread as BlockingCall does, and returns its outcome.
  // An outcome is kept until it is awaited or the Channel is destroyed.
  // The replies of started calls are read by threads in Await or
  // BlockingCall (with a backward handler, also by the loop): await every
  // call you start. Await is NOT_FOUND for an id StartCall did not return,
  // one already awaited or being awaited by another thread, and
  // FAILED_PRECONDITION from a callback of this Channel. Cancel() applies
  // to started calls as to any other.
  CallId StartCall(CallRequest request);
  absl::StatusOr<Reply> Await(CallId call);
  // Ends the call with CANCELLED if it has not completed yet.
  void Cancel(CallId call);

  Counters counters() const;
  // counters() plus the current connection's latency histograms (none
  // while the Channel reconnects); see metrics.h.
  Metrics metrics() const;
  // False from the loss of the connection until a reconnect succeeds.
  bool connected() const;
  // What the current (or last) connection settled: RFC 8797 private data
  // and thresholds, remote invalidation, protocol version.
  ConnectionInfo connection_info() const;

  // Version two (draft-cel-nfsv4-rpcrdma-version-two-04 §5.3): asks the
  // Server to change its receive buffer size on the live connection to
  // `octets` (RDMA2_REQPROP), so that larger calls go inline. OK when it
  // granted it: connection_info().send_threshold is then `octets`.
  // FAILED_PRECONDITION when the Server declines (it grants up to its
  // inline_threshold.receive_grantable) or the connection is not in
  // version two; UNAVAILABLE without a connection or when it is lost
  // before the answer; DEADLINE_EXCEEDED once `deadline` has passed
  // without an answer (by default 10 s from the call). Calls go on
  // meanwhile. The answer is read by the Channel's runtime: with a
  // user-driven one, drive it from another thread while this waits.
  absl::Status RequestPeerReceiveSize(
      uint32_t octets,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));

  // More of version two (rpcrdma/version_two.h), on the live connection;
  // each returns once the Server has answered, with the errors of
  // RequestPeerReceiveSize (FAILED_PRECONDITION outside version two,
  // UNAVAILABLE, DEADLINE_EXCEEDED) and those below. Must not be called
  // from a callback or handler of this Channel.
  // Raises this side's receive buffer size to `octets` and tells the
  // Server (RDMA2_UPDPROP, §5.3.4), so that larger replies come inline:
  // connection_info().receive_threshold (and the Server's
  // peer_receive_buffer_size) is then `octets`. Only upward
  // (FAILED_PRECONDITION: §5.2.1 lowers it only at the peer's request) and
  // only as far as inline_threshold.receive_grantable, the size the
  // receives are posted at from the start, so that none of a smaller size
  // is posted when it rises (FAILED_PRECONDITION beyond).
  absl::Status UpdateReceiveSize(
      uint32_t octets,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  // Changes experimental properties of this side stated at connect and
  // tells the Server (RDMA2_UPDPROP); FAILED_PRECONDITION for one not
  // stated, INVALID_ARGUMENT for an id that is not experimental.
  absl::Status UpdateProperties(
      std::vector<TransportProperty> properties,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  // Asks the Server to change its properties (RDMA2_REQPROP): experimental
  // ones it stated at connect, decided by its PropertyDecider, or its
  // receive buffer size (id 1). FAILED_PRECONDITION for one its
  // RDMA2_CONNPROP did not let change (§5.3.1).
  absl::StatusOr<PropertyAnswer> RequestPeerProperties(
      std::vector<TransportProperty> properties,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  // Sends an optional message (RDMA2_OPTIONAL) and returns the Server's
  // answer from its OptionalHandler. UNIMPLEMENTED when it serves no such
  // type (RDMA2_ERR_INVALID_OPTION), INTERNAL when its handler failed
  // (RDMA2_ERR_SYSTEM), RESOURCE_EXHAUSTED when the message does not fit
  // the Server's receive buffer size, INVALID_ARGUMENT for types 1 to 4.
  absl::StatusOr<OptionalMessage> SendOptional(
      OptionalMessage message,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));

 private:
  explicit Channel(std::shared_ptr<api_internal::ChannelCore> core);
  std::shared_ptr<api_internal::ChannelCore> core_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CHANNEL_H_
