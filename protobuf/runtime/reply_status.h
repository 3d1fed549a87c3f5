// What a client makes of a reply's RFC 5531 header and status word.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_REPLY_STATUS_H_
#define RPCRDMA_PROTOBUF_RUNTIME_REPLY_STATUS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rpcrdma/rpc_msg.h"

namespace rpcrdma::protobuf::runtime {

// OK for an accepted, successful reply; otherwise the status a gRPC user
// expects for what the server answered: UNIMPLEMENTED for an unknown
// program, version or procedure, INVALID_ARGUMENT for GARBAGE_ARGS,
// INTERNAL for SYSTEM_ERR, UNAUTHENTICATED for a denied call.
absl::Status FromRpcReply(const ReplyHeader& header);

// A status code from the wire: a code absl does not know becomes UNKNOWN
// (as gRPC treats codes it does not know).
absl::StatusCode CodeFromWire(uint32_t code);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_REPLY_STATUS_H_
