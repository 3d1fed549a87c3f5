// A bounded look at the start of an ONC RPC message (RFC 5531 §9): the XID,
// the message direction and, for a call, the program it addresses. This is
// not an RPC codec; it only reports what the first octets say, for tools that
// label RPC-over-RDMA traffic.
#ifndef RPCRDMA_ONCRPC_RPC_PEEK_H_
#define RPCRDMA_ONCRPC_RPC_PEEK_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "rpcrdma/rpc_msg.h"

namespace rpcrdma::oncrpc {

// RFC 5531 §9 msg_type, defined with the header codec.
using ::rpcrdma::RpcMsgType;

// The fixed part of a call_body (RFC 5531 §9) up to and including proc.
struct RpcCallPeek {
  uint32_t rpcvers = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;

  friend bool operator==(const RpcCallPeek&, const RpcCallPeek&) = default;
};

struct RpcPeek {
  uint32_t xid = 0;
  RpcMsgType type = RpcMsgType::kCall;
  // Present for a CALL of at least 24 octets (xid, mtype, rpcvers, prog,
  // vers, proc); absent for a REPLY or a shorter CALL.
  std::optional<RpcCallPeek> call;

  friend bool operator==(const RpcPeek&, const RpcPeek&) = default;
};

// Octets needed to report xid and msg_type, and to report a call's program.
constexpr size_t kRpcPeekMinLength = 8;
constexpr size_t kRpcPeekCallLength = 24;

// Reads only within `message`. Returns nullopt when fewer than 8 octets are
// given or when msg_type is neither CALL nor REPLY.
std::optional<RpcPeek> PeekRpcMessage(absl::Span<const uint8_t> message);

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_RPC_PEEK_H_
