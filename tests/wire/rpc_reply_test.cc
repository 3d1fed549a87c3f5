// The transport's own SYSTEM_ERR reply, checked octet by octet against the
// RFC 5531 §9 rpc_msg of an accepted reply, written by hand:
//
//   xid | msg_type REPLY (1) | reply_stat MSG_ACCEPTED (0)
//   | verf: flavor AUTH_NONE (0), body length 0 | accept_stat SYSTEM_ERR (5)
#include "plugin/wire/rpc_reply.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace rpcrdma::wire {
namespace {

TEST(SystemErrReply, RFC5531Section9_AcceptedReplyWithSystemErr) {
  const std::vector<uint8_t> expected = {
      0x89, 0xAB, 0xCD, 0xEF,  // xid
      0x00, 0x00, 0x00, 0x01,  // REPLY
      0x00, 0x00, 0x00, 0x00,  // MSG_ACCEPTED
      0x00, 0x00, 0x00, 0x00,  // AUTH_NONE
      0x00, 0x00, 0x00, 0x00,  // verifier body: no octets
      0x00, 0x00, 0x00, 0x05,  // SYSTEM_ERR
  };
  EXPECT_EQ(EncodeSystemErrReply(0x89ABCDEF), expected);
  EXPECT_EQ(expected.size(), kSystemErrReplySize);
}

}  // namespace
}  // namespace rpcrdma::wire
