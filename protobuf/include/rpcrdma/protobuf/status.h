// rpcrdma::protobuf::Status: the outcome of a call, absl::Status with
// absl::StatusCode, whose numbering is gRPC's (OK 0 ... UNAUTHENTICATED 16),
// so a code travels on the wire as its number and means the same to a
// gRPC user.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STATUS_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STATUS_H_

#include "absl/status/status.h"

namespace rpcrdma::protobuf {

using Status = absl::Status;
using StatusCode = absl::StatusCode;

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_STATUS_H_
