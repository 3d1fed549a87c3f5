#include "oncrpc/rpc_peek.h"

#include "rpcrdma/xdr.h"

namespace rpcrdma::oncrpc {

std::optional<RpcPeek> PeekRpcMessage(absl::Span<const uint8_t> message) {
  if (message.size() < kRpcPeekMinLength) return std::nullopt;
  const uint8_t* p = message.data();
  RpcPeek peek;
  peek.xid = LoadBigEndian32(p);
  uint32_t mtype = LoadBigEndian32(p + 4);
  if (mtype > static_cast<uint32_t>(RpcMsgType::kReply)) return std::nullopt;
  peek.type = static_cast<RpcMsgType>(mtype);
  if (peek.type == RpcMsgType::kCall && message.size() >= kRpcPeekCallLength) {
    peek.call = RpcCallPeek{LoadBigEndian32(p + 8), LoadBigEndian32(p + 12),
                            LoadBigEndian32(p + 16), LoadBigEndian32(p + 20)};
  }
  return peek;
}

}  // namespace rpcrdma::oncrpc
