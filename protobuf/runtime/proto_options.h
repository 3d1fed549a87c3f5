// What <rpcrdma/protobuf/options.proto> says of a field or a method, read
// from the descriptors at run time, so that generated code needs nothing
// of its own for the options (protobuf/README.md, "Bulk fields").
#ifndef RPCRDMA_PROTOBUF_RUNTIME_PROTO_OPTIONS_H_
#define RPCRDMA_PROTOBUF_RUNTIME_PROTO_OPTIONS_H_

#include "google/protobuf/descriptor.h"
#include "rpcrdma/protobuf/options.pb.h"

namespace rpcrdma::protobuf::runtime {

// The field's (rpcrdma.protobuf.ddp); DDP_DEFAULT for a field that is not
// `bytes`, where the option means nothing.
Ddp DdpOf(const google::protobuf::FieldDescriptor& field);

// The method's (rpcrdma.protobuf.reply_chunks); empty when not given.
const ReplyChunks& ReplyChunksOf(
    const google::protobuf::MethodDescriptor& method);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_PROTO_OPTIONS_H_
