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
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/include/rpcrdma/types.h"
#include "plugin/proto/config.pb.h"

namespace rpcrdma {

namespace api_internal {
class ServerLoop;
}  // namespace api_internal

// A call delivered to the handler.
struct IncomingCall {
  uint64_t connection = 0;  // identifies the connection within the Server
  uint32_t xid = 0;
  std::vector<uint8_t> message;  // the complete RPC call stream
  // Octets the requester offered per write chunk, and for a reply chunk
  // (0 if none) (RFC 8166 §3.4.7, §3.5.4).
  std::vector<uint32_t> write_chunk_capacities;
  uint32_t reply_chunk_capacity = 0;
};

// Answers one call, once, from any thread. Dropping it unanswered leaves
// the requester waiting until its deadline.
class Responder {
 public:
  Responder(Responder&&) noexcept;
  Responder& operator=(Responder&&) noexcept;
  ~Responder();

  // Queues the reply for the loop thread. FAILED_PRECONDITION when this
  // responder already replied, or the Server is gone. A reply for a
  // connection that has been lost meanwhile is dropped. A reply the offered
  // chunks cannot carry is answered with RDMA_ERROR ERR_CHUNK (RFC 8166
  // §4.5.2).
  absl::Status Send(ServerReply reply);

 private:
  friend class api_internal::ServerLoop;
  struct State;
  explicit Responder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Server {
 public:
  using Handler = std::function<void(IncomingCall call, Responder responder)>;

  // Listens on `uri` (a port of 0 picks one; see address()).
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      absl::string_view uri, const config::TransportConfig& config,
      Handler handler);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Disconnects every connection and joins the loop thread.
  ~Server();

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
