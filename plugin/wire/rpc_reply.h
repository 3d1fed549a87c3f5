// The one RPC reply (RFC 5531 §9) the transport writes itself: the answer
// to a call its handler let go of without replying (rpcrdma/responder.h).
// Every other RPC message is the Upper Layer's own.
#ifndef RPCRDMA_PLUGIN_WIRE_RPC_REPLY_H_
#define RPCRDMA_PLUGIN_WIRE_RPC_REPLY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rpcrdma::wire {

// xid, msg_type, reply_stat, verifier flavor and length, accept_stat.
inline constexpr size_t kSystemErrReplySize = 24;

// The accepted reply to call `xid` whose accept_stat is SYSTEM_ERR (RFC
// 5531 §9: msg_type REPLY, reply_stat MSG_ACCEPTED, an AUTH_NONE verifier
// of no octets, accept_stat SYSTEM_ERR = 5): the server could not carry the
// call out, which tells a requester at once rather than at its deadline.
std::vector<uint8_t> EncodeSystemErrReply(uint32_t xid);

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_RPC_REPLY_H_
