#include "protobuf/runtime/proto_options.h"

namespace rpcrdma::protobuf::runtime {

using google::protobuf::FieldDescriptor;

Ddp DdpOf(const FieldDescriptor& field) {
  if (field.type() != FieldDescriptor::TYPE_BYTES) return DDP_DEFAULT;
  // An option value this version does not know reads as its number; the
  // size decides for it, as for DDP_DEFAULT.
  const int value = field.options().GetExtension(ddp);
  return Ddp_IsValid(value) ? static_cast<Ddp>(value) : DDP_DEFAULT;
}

const ReplyChunks& ReplyChunksOf(
    const google::protobuf::MethodDescriptor& method) {
  return method.options().GetExtension(reply_chunks);
}

}  // namespace rpcrdma::protobuf::runtime
