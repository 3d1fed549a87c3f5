// The stream control procedures (protobuf/README.md, "Streams"), served
// for every program of a ServiceSet: NEXT (a server message asked for),
// CANCEL, SEND (a client message) and HALF_CLOSE (the client's count).
#ifndef RPCRDMA_PROTOBUF_RUNTIME_STREAM_PROCEDURES_H_
#define RPCRDMA_PROTOBUF_RUNTIME_STREAM_PROCEDURES_H_

#include <cstdint>

#include "protobuf/runtime/stream_table.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf::runtime {

// True when `procedure` is one of them: the call, whose arguments `in`
// holds, was served (answered now or held by its stream).
bool ServeStreamProcedure(StreamTable& streams, ConnectionId connection,
                          uint32_t procedure, uint32_t xid, XdrReader& in,
                          Responder& responder);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_STREAM_PROCEDURES_H_
