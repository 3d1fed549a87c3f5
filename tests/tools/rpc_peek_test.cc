#include "oncrpc/rpc_peek.h"

#include <vector>

#include "gtest/gtest.h"

namespace rpcrdma::oncrpc {
namespace {

// RFC 5531 §9: a call of NFS (100003) version 3 procedure 0.
const std::vector<uint8_t> kCall = {
    0x12, 0x34, 0x56, 0x78,  // xid
    0x00, 0x00, 0x00, 0x00,  // CALL
    0x00, 0x00, 0x00, 0x02,  // rpcvers
    0x00, 0x01, 0x86, 0xa3,  // prog 100003
    0x00, 0x00, 0x00, 0x03,  // vers
    0x00, 0x00, 0x00, 0x00,  // proc
};

TEST(RpcPeek, Rfc5531_9_CallReportsProgramVersionProcedure) {
  auto p = PeekRpcMessage(kCall);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->xid, 0x12345678u);
  EXPECT_EQ(p->type, RpcMsgType::kCall);
  ASSERT_TRUE(p->call.has_value());
  EXPECT_EQ(*p->call, (RpcCallPeek{2, 100003, 3, 0}));
}

TEST(RpcPeek, Rfc5531_9_CallShorterThan24OctetsHasNoProgram) {
  std::vector<uint8_t> shorter(kCall.begin(), kCall.end() - 1);
  auto p = PeekRpcMessage(shorter);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->xid, 0x12345678u);
  EXPECT_EQ(p->type, RpcMsgType::kCall);
  EXPECT_FALSE(p->call.has_value());
}

TEST(RpcPeek, Rfc5531_9_ReplyNeedsEightOctets) {
  const std::vector<uint8_t> reply = {0, 0, 0, 9, 0, 0, 0, 1};
  auto p = PeekRpcMessage(reply);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->xid, 9u);
  EXPECT_EQ(p->type, RpcMsgType::kReply);
  EXPECT_FALSE(p->call.has_value());
  // A reply never reports call fields, however long it is.
  std::vector<uint8_t> longer = reply;
  longer.resize(40, 0xff);
  auto q = PeekRpcMessage(longer);
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->call.has_value());
}

TEST(RpcPeek, FewerThanEightOctetsIsNothing) {
  for (size_t n = 0; n < 8; ++n) {
    std::vector<uint8_t> bytes(kCall.begin(), kCall.begin() + n);
    EXPECT_FALSE(PeekRpcMessage(bytes).has_value()) << n << " octets";
  }
}

TEST(RpcPeek, Rfc5531_9_MsgTypeOtherThanCallOrReplyIsNothing) {
  std::vector<uint8_t> bytes = kCall;
  bytes[7] = 2;
  EXPECT_FALSE(PeekRpcMessage(bytes).has_value());
  bytes[7] = 0;
  bytes[4] = 0x80;
  EXPECT_FALSE(PeekRpcMessage(bytes).has_value());
}

}  // namespace
}  // namespace rpcrdma::oncrpc
