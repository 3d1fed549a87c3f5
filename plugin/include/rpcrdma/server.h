// rpcrdma::Server: the responder side of RPC-over-RDMA version one
// (RFC 8166). Listens on one URI (see channel.h for the schemes) and accepts
// any number of connections. The Upper Layer Binding contract is in types.h.
//
// Threads: one event-loop thread per Server drives every connection. The
// handler runs on that thread; it may answer at once or keep the Responder
// and answer later from any thread.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/include/rpcrdma/responder.h"
#include "plugin/include/rpcrdma/types.h"
#include "plugin/proto/config.pb.h"

namespace rpcrdma {

namespace api_internal {
class ServerLoop;
}  // namespace api_internal

class Server {
 public:
  using Handler = std::function<void(IncomingCall call, Responder responder)>;
  using Callback = std::function<void(absl::StatusOr<Reply>)>;

  // Listens on `uri` (a port of 0 picks one; see address()).
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      Handler handler);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Disconnects every connection and joins the loop thread.
  ~Server();

  // Backward-direction call (RFC 8167) to the client on `connection` (an
  // IncomingCall::connection): the XID and program are the caller's, as in
  // a forward call (channel.h describes the request and status codes). The
  // client must have been configured with a backchannel (both sides use
  // backchannel.credits: RPC-over-RDMA version one has no transport-level
  // negotiation of it, the upper layer settles it). At most that many
  // backward calls are outstanding, one until the client's first backward
  // reply; the rest wait. `done` runs exactly once, on the loop thread:
  // FAILED_PRECONDITION when this Server's backchannel is disabled,
  // NOT_FOUND for an unknown or lost connection, UNAVAILABLE when the
  // connection is lost before the reply. retry_on_reconnect is ignored: a
  // client's new connection is a new connection.
  void Call(uint64_t connection, CallRequest request, Callback done);
  // The same, completing a future instead.
  std::future<absl::StatusOr<Reply>> Call(uint64_t connection,
                                          CallRequest request);

  // The URI clients connect to.
  std::string uri() const;
  // Counters summed over every connection, past and present.
  Counters counters() const;
  size_t connections() const;

 private:
  explicit Server(std::unique_ptr<api_internal::ServerLoop> loop);
  std::unique_ptr<api_internal::ServerLoop> loop_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_SERVER_H_
