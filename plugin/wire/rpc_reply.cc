#include "plugin/wire/rpc_reply.h"

#include "rpcrdma/rpc_msg.h"

namespace rpcrdma::wire {

std::vector<uint8_t> EncodeSystemErrReply(uint32_t xid) {
  ReplyHeader header;
  header.xid = xid;
  header.reply_stat = ReplyStat::kAccepted;
  header.verifier = AuthNone();
  header.accept_stat = AcceptStat::kSystemErr;
  std::vector<uint8_t> out;
  out.reserve(kSystemErrReplySize);
  // Only an authenticator over its bound fails, and AUTH_NONE's is empty.
  (void)EncodeReplyHeader(header, out);
  return out;
}

}  // namespace rpcrdma::wire
