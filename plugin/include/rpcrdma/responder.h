// Serving calls: what a Server's handler (forward calls) and a Channel's
// backward handler (RFC 8167 backward-direction calls) receive, and how
// they answer. The Upper Layer Binding contract is in types.h.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/types.h"

namespace rpcrdma {

namespace api_internal {
class ResponderAccess;
}  // namespace api_internal

// A call delivered to a handler.
struct IncomingCall {
  // Identifies the connection within the Server (a Server handler; pass it
  // to Server::Call for backward calls); 0 for a Channel's backward calls.
  uint64_t connection = 0;
  uint32_t xid = 0;
  Buffer message;  // the complete RPC call stream
  // Octets the requester offered per write chunk, and for a reply chunk
  // (0 if none) (RFC 8166 §3.4.7, §3.5.4).
  std::vector<uint64_t> write_chunk_capacities;
  uint64_t reply_chunk_capacity = 0;
};

// Answers one call, once, from any thread. Dropping it unanswered leaves
// the requester waiting until its deadline.
class Responder {
 public:
  Responder(Responder&&) noexcept;
  Responder& operator=(Responder&&) noexcept;
  ~Responder();

  // Queues the reply for the loop thread. FAILED_PRECONDITION when this
  // responder already replied, or the Server (Channel) is gone. A reply for a
  // connection that has been lost meanwhile is dropped. A reply the offered
  // chunks cannot carry is answered with RDMA_ERROR ERR_CHUNK (RFC 8166
  // §4.5.2).
  absl::Status Send(ServerReply reply);

 private:
  friend class api_internal::ResponderAccess;
  struct State;
  explicit Responder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_
