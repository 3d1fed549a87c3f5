// Serving calls: what a Server's handler (forward calls) and a Channel's
// backward handler (RFC 8167 backward-direction calls) receive, and how
// they answer. The Upper Layer Binding contract is in types.h.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/types.h"

namespace rpcrdma {

namespace api_internal {
class ReplyTarget;
class ResponderAccess;
}  // namespace api_internal

// A call delivered to a handler.
struct IncomingCall {
  // The connection the call came on (rpcrdma/ids.h): on a Server, pass it
  // to Server::Call for backward calls; on a Channel (a backward call),
  // the Channel's current connection.
  ConnectionId connection;
  uint32_t xid = 0;
  Buffer message;  // the complete RPC call stream
  // Octets the requester offered per write chunk, and for a reply chunk
  // (0 if none) (RFC 8166 §3.4.7, §3.5.4).
  std::vector<uint64_t> write_chunk_capacities;
  uint64_t reply_chunk_capacity = 0;
};

class Responder;

// Serves calls: a Server's handler, and a Channel's backward handler.
using CallHandler = std::function<void(IncomingCall call, Responder responder)>;

// Answers one call, once, from any thread.
//
// A Responder destroyed before it sent (and not moved from), or assigned
// over, answers its call itself: an accepted reply whose accept_stat is
// SYSTEM_ERR (RFC 5531 §9), sent as Send sends it, so that the call's
// credit and its memory come back at once (held otherwise until the
// connection ends) and the requester learns without waiting for its
// deadline. It logs a warning naming the connection and the XID: a handler
// that forgets to answer is a bug to fix. Once the Server (Channel) or the
// call's connection is gone it sends and logs nothing.
class Responder {
 public:
  Responder(Responder&&) noexcept;
  Responder& operator=(Responder&&) noexcept;
  ~Responder();

  // Sends the reply: on the calling thread, without handing it to another
  // one (its transport header, any RDMA Writes into the call's write chunks
  // and the Send). FAILED_PRECONDITION when this responder already replied,
  // or the Server (Channel) is gone. A reply for a connection that has been
  // lost meanwhile is dropped. A reply the offered chunks cannot carry is
  // answered with RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.2).
  absl::Status Send(HandlerReply reply);

 private:
  friend class api_internal::ResponderAccess;
  Responder(std::shared_ptr<api_internal::ReplyTarget> target,
            uint64_t generation, uint64_t call, uint32_t xid,
            int64_t delivered_ns);
  // Sends the SYSTEM_ERR answer of a call dropped unanswered (above).
  void AnswerDropped() noexcept;
  std::shared_ptr<api_internal::ReplyTarget> target_;  // null once replied
  uint64_t generation_ = 0;   // of the connection the call came on
  uint64_t call_ = 0;         // the engine's id of the call, as a number
  int64_t delivered_ns_ = 0;  // steady clock, for the reply-time metric
  uint32_t xid_ = 0;          // of the call, for a dropped one's answer
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RESPONDER_H_
