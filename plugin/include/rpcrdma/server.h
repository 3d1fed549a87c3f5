// rpcrdma::Server: the responder side of RPC-over-RDMA version one
// (RFC 8166). Listens on one URI (see channel.h for the schemes) and accepts
// any number of connections. The Upper Layer Binding contract is in types.h.
//
// Threads: the Server's listener and each connection it accepts are placed
// on the event loops of its Runtime (rpcrdma/runtime.h;
// Runtime::Default() unless ServerOptions names another), round robin, so
// the connections of one Server are served by every loop at once. The
// handler runs on the loop thread of its connection, or, with
// TransportConfig.execution.handler_threads, on a pool of that many
// threads owned by the Server, so that a handler that blocks never stalls
// other connections. It may answer at once or keep the Responder and
// answer later from any thread; Responder::Send sends on the calling
// thread.
//
// Limits against a peer that would exhaust or wedge it:
// - Reassembly memory (RFC 5666 §11): a connection holds at most
//   limits.max_reassembly_bytes of incoming calls, from reassembly until
//   the reply has been sent, and all connections together at most
//   limits.max_server_reassembly_bytes; a call that does not fit waits.
// - limits.max_connections: a connect request beyond it is rejected with
//   this side's RFC 8797 private data and a reason the client reports.
// - timeouts.idle_ms: a connection with no call in progress (none being
//   reassembled, awaiting its reply or being sent, no backward call
//   outstanding) that receives nothing for idle_ms is closed.
// - timeouts.handshake_ms (soft fabric): a socket whose connect request
//   does not arrive in time is closed.
// - Out of descriptors (EMFILE): accepting pauses and resumes by itself
//   (soft_fabric.h), counted in counters().accept_errors and reported once
//   per episode; no busy loop.
// - Backward calls abandoned by their deadline or Cancel keep their
//   credit; when they hold every backward credit while another backward
//   call waits, or have been held for timeouts.abandoned_call_ms, the
//   connection is closed (as channel.h).
// - A peer that breaks a rule leaving no way on (more calls than its
//   credit grant, RFC 8166 §3.3.1) is disconnected; counted in
//   counters().protocol_closes.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
class ServerCore;
}  // namespace api_internal

// A connection of a Server began or ended (ServerOptions::on_connection).
struct ServerConnectionEvent {
  enum class Type {
    // Established: reported before any call of the connection reaches the
    // handler.
    kAccepted,
    // Gone: reported once, after the last call of the connection reached
    // the handler; replies to its calls are dropped from now on.
    kClosed,
  };
  Type type = Type::kAccepted;
  ConnectionId connection;  // as in IncomingCall::connection
  // Where the client connects from, as a URI of the Server's scheme
  // (soft+tcp://127.0.0.1:40522, rdma://192.0.2.1:37214); for a Unix-domain
  // client, which has no name, the Server's own URI.
  std::string peer;
  // kClosed: OK when the client disconnected or the Server is going away;
  // otherwise UNAVAILABLE naming what ended the connection (a failed
  // operation, a protocol violation, the idle timeout...).
  absl::Status status;
};

struct ServerOptions {
  // The runtime whose loops drive the Server; Runtime::Default() when null.
  std::shared_ptr<Runtime> runtime;
  // When set, runs on a loop thread at each ServerConnectionEvent; it must
  // not block, and may call Server::Call for the connection.
  std::function<void(const ServerConnectionEvent&)> on_connection;
  // Version two: experimental properties and optional message handlers
  // (rpcrdma/version_two.h), for every connection in version two.
  VersionTwoOptions version_two = {};
};

class Server {
 public:
  using Handler = CallHandler;
  using Callback = std::function<void(absl::StatusOr<Reply>)>;

  // Listens on `uri` (a port of 0 picks one; see address()).
  // Before `config` applies, the environment may stand in for what the
  // program left unset: RPCRDMA_CONFIG (a configuration file, when
  // `config` has no field set), RPCRDMA_CAPTURE (a capture, when it sets
  // no capture_path) and RPCRDMA_LOG (rpcrdma/log.h); docs/debugging.md,
  // "Without touching code". A bad RPCRDMA_CONFIG or RPCRDMA_CAPTURE fails
  // Create with a status naming the variable.
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      Handler handler);
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      Handler handler, ServerOptions options);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Shutdown(DeadlineIn(kShutdownDrain)) unless Shutdown already ran.
  ~Server();
  // How long the destructor lets the connections drain.
  static constexpr std::chrono::seconds kShutdownDrain{10};

  // Stops listening, disconnects every connection and waits until each
  // has drained (every operation the provider had posted on it has
  // completed, so that no handle it exposed reaches this process's memory
  // any more); replies sent later are refused and backward calls fail with
  // UNAVAILABLE. Every kClosed has been reported and every handler thread
  // joined when it returns. OK once all have drained; DEADLINE_EXCEEDED,
  // naming how many had not and how long it waited, when `deadline`
  // passed first (a provider that never flushes): those are then released
  // without waiting further, which destroying their queue pairs makes
  // safe. A second Shutdown returns OK at once. From a handler or callback
  // of this Server, where it would wait for itself, it is
  // FAILED_PRECONDITION (also while another thread's Shutdown runs).
  absl::Status Shutdown(Deadline deadline = DeadlineIn(kShutdownDrain));

  // Backward-direction call (RFC 8167) to the client on `connection` (an
  // IncomingCall::connection): the XID and program are the caller's, as in
  // a forward call (channel.h describes the request and status codes). The
  // client must have been configured with a backchannel (both sides use
  // backchannel.credits: RPC-over-RDMA version one has no transport-level
  // negotiation of it, the upper layer settles it). At most that many
  // backward calls are outstanding, one until the client's first backward
  // reply; the rest wait. `done` runs exactly once, on a loop thread:
  // FAILED_PRECONDITION when this Server's backchannel is disabled,
  // NOT_FOUND for an unknown or lost connection, UNAVAILABLE when the
  // connection is lost before the reply, DEADLINE_EXCEEDED past its
  // deadline, CANCELLED after Cancel. retry_on_reconnect is ignored: a
  // client's new connection is a new connection. Returns the call's id
  // (unique within its connection), for Cancel; CallId() when the call was
  // refused at once (`done` has then run, on the calling thread).
  CallId Call(ConnectionId connection, CallRequest request, Callback done);
  // The same, completing the future of the CallFuture returned.
  CallFuture Call(ConnectionId connection, CallRequest request);
  // Ends the backward call `call` on `connection` with CANCELLED if it has
  // not completed yet; as a Channel's Cancel, a call that was sent keeps
  // its credit until the client's reply comes (RFC 8166 §3.3.1; server.h's
  // abandoned-call rule, above, then applies). Nothing for an unknown
  // call.
  void Cancel(ConnectionId connection, CallId call);

  // Closes the connection `connection` (an IncomingCall::connection), as a
  // socket server closes a client it will not serve any more (a framework
  // that met garbage in a call, or stopped serving the connection): replies
  // to its calls are dropped, its backward calls fail with UNAVAILABLE, and
  // its client sees the connection lost (a Channel then connects again, as
  // a new connection). kClosed follows with UNAVAILABLE "connection
  // closed: closed by the server: <reason>". NOT_FOUND for an unknown
  // connection or one already closing.
  absl::Status Disconnect(ConnectionId connection, absl::string_view reason);

  // The URI clients connect to.
  std::string uri() const;
  // Counters summed over every connection, past and present.
  Counters counters() const;
  // counters() plus every current connection's counters and latency
  // histograms; see metrics.h.
  Metrics metrics() const;
  size_t connections() const;
  // What `connection` (an IncomingCall::connection) settled when it was
  // set up, as Channel::connection_info() reports it on the client's side
  // (seen from this side: its thresholds, the client's private data).
  // NOT_FOUND for an unknown connection or one that is gone.
  absl::StatusOr<ConnectionInfo> connection_info(ConnectionId connection) const;

  // Version two on `connection` (rpcrdma/version_two.h), as the Channel
  // methods of the same names describe them with the roles swapped;
  // NOT_FOUND for an unknown connection or one that is gone. Must not be
  // called from a handler or callback of this Server.
  absl::Status UpdateReceiveSize(
      ConnectionId connection, uint32_t octets,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  absl::Status UpdateProperties(
      ConnectionId connection, std::vector<TransportProperty> properties,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  absl::StatusOr<PropertyAnswer> RequestPeerProperties(
      ConnectionId connection, std::vector<TransportProperty> properties,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));
  absl::StatusOr<OptionalMessage> SendOptional(
      ConnectionId connection, OptionalMessage message,
      Deadline deadline = DeadlineIn(std::chrono::seconds(10)));

 private:
  explicit Server(std::shared_ptr<api_internal::ServerCore> core);
  std::shared_ptr<api_internal::ServerCore> core_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_
