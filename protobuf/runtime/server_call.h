// One call being served: its context, request and response (kept until
// the handler answers) and the Responder that answers it.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_SERVER_CALL_H_
#define RPCRDMA_PROTOBUF_RUNTIME_SERVER_CALL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rpcrdma/protobuf/server_context.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/rpc_msg.h"

namespace rpcrdma::protobuf {

class ServerCallState {
 public:
  ServerCallState(const google::protobuf::MethodDescriptor& method,
                  uint32_t xid, Responder responder, size_t bulk_threshold);

  ServerContext& context() { return context_; }
  google::protobuf::Message& request() { return *request_; }
  google::protobuf::Message& response() { return *response_; }
  // Fills the context from the call's body header.
  void SetCallInfo(ConnectionId connection, std::string peer,
                   uint32_t timeout_ms, Metadata metadata);

  // The octets of each write chunk the call offered
  // (IncomingCall::write_chunk_capacities): the reply's first bulk values
  // go there (protobuf/README.md, "Replies").
  void SetWriteChunks(std::vector<uint64_t> capacities) {
    write_chunks_ = std::move(capacities);
  }

  // Sends the reply: the response's bulk fields are lent to the transport
  // (moved out of the response, which the reply keeps alive until sent).
  void Answer(absl::Status status);
  const google::protobuf::MethodDescriptor& method() const { return method_; }

  // A stream's call: the flag ServerContext::IsCancelled reads, and the
  // open's answer, an OK status and the stream's id (protobuf/README.md,
  // "Streams"); an open that fails is answered by Answer.
  void SetCancelFlag(std::shared_ptr<const std::atomic<bool>> cancelled);
  void AnswerStreamOpened(uint64_t stream_id);

 private:
  const google::protobuf::MethodDescriptor& method_;
  uint32_t xid_;
  Responder responder_;
  size_t bulk_threshold_;
  std::vector<uint64_t> write_chunks_;
  ServerContext context_;
  std::unique_ptr<google::protobuf::Message> request_;
  std::unique_ptr<google::protobuf::Message> response_;
};

// An accepted RFC 5531 reply header of `stat` (PROG_MISMATCH gives 1..1).
std::vector<uint8_t> AcceptedHeader(uint32_t xid, AcceptStat stat);
// A reply body's head: the status word, its message (cut to what the wire
// carries) and the trailing metadata (pairs beyond metadata.h's limits are
// left out: the client would refuse the whole reply).
void AppendStatus(const absl::Status& status, const Metadata& trailing,
                  std::vector<uint8_t>& out);

// Sends an RFC 5531 reply with no results (e.g. PROC_UNAVAIL), or one whose
// body is `status` alone, to a call that reached no handler.
void SendRpcError(Responder& responder, uint32_t xid, AcceptStat stat);
void SendStatusOnly(Responder& responder, uint32_t xid,
                    const absl::Status& status);

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_RUNTIME_SERVER_CALL_H_
