#include "plugin/wire/rpc_reply.h"

#include <iterator>

#include "plugin/wire/xdr.h"

namespace rpcrdma::wire {

namespace {

// RFC 5531 §9 discriminants.
constexpr uint32_t kMsgTypeReply = 1;
constexpr uint32_t kReplyStatMsgAccepted = 0;
constexpr uint32_t kAuthFlavorNone = 0;
constexpr uint32_t kAcceptStatSystemErr = 5;

}  // namespace

std::vector<uint8_t> EncodeSystemErrReply(uint32_t xid) {
  const uint32_t words[] = {xid,
                            kMsgTypeReply,
                            kReplyStatMsgAccepted,
                            kAuthFlavorNone,
                            /*verifier body length=*/0,
                            kAcceptStatSystemErr};
  static_assert(sizeof(words) == kSystemErrReplySize);
  std::vector<uint8_t> out(kSystemErrReplySize);
  for (size_t i = 0; i < std::size(words); ++i) {
    StoreBigEndian32(out.data() + 4 * i, words[i]);
  }
  return out;
}

}  // namespace rpcrdma::wire
