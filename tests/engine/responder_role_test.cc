// The responder role (plugin/engine/responder.h) driven directly through
// its interface, without Engine: the steps a call goes through (procedure,
// credit, validation, admission), reassembly memory (RFC 5666 §11), RDMA
// Reads of read chunks, and replies inline or refused ERR_CHUNK.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/responder.h"
#include "plugin/wire/v1.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Count;
using test::Only;
using test::Words;

constexpr uint32_t kCredits = 2;

// A shared budget the test opens and closes.
class SwitchedBudget : public ReassemblyBudget {
 public:
  bool TryReserve(uint64_t bytes) override {
    if (!open) return false;
    held += bytes;
    return true;
  }
  void Release(uint64_t bytes) override { held -= bytes; }
  uint64_t capacity() const override { return 1 << 20; }
  bool open = true;
  uint64_t held = 0;
};

Config ResponderConfig() {
  Config config;
  config.requester = false;
  config.credits = kCredits;
  return config;
}

// The RDMA_ERROR code of a Send, or nullopt when it is no RDMA_ERROR.
std::optional<uint32_t> ErrorCode(const Send& send) {
  if (send.bytes.size() < 20 ||
      LoadBigEndian32(send.bytes.data() + 12) !=
          static_cast<uint32_t>(wire::V1Proc::kError)) {
    return std::nullopt;
  }
  return LoadBigEndian32(send.bytes.data() + 16);
}

class ResponderRoleTest : public ::testing::Test {
 protected:
  ResponderRoleTest()
      : ctx_(ResponderConfig(), nullptr), role_(ctx_, &budget_) {
    ctx_.connected = true;
    role_.OnConnected(/*max_reads=*/4);
  }

  // Hands the role the message `header` + `payload`, as Engine routes it.
  void Receive(const wire::V1Header& header,
               const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> bytes = wire::EncodeV1(header);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    wire::DecodeResult<wire::V1Decoded> decoded = wire::DecodeV1(bytes);
    ASSERT_TRUE(decoded.ok());
    role_.OnCall(*decoded, bytes, /*inv_handle=*/0, out_);
  }
  void InlineCall(uint32_t xid, wire::ChunkLists lists = {}) {
    Receive(wire::V1Header{xid, 1, kCredits, wire::V1Msg{std::move(lists)}},
            CallStream(xid, {100003, 3, 0}));
  }
  Actions Take() { return std::exchange(out_, {}); }

  SwitchedBudget budget_;
  EngineContext ctx_;
  Responder role_;
  Actions out_;
};

TEST_F(ResponderRoleTest, Rfc8166_3_3_1_CallOverTheGrantClosesConnection) {
  InlineCall(1);
  InlineCall(2);
  EXPECT_EQ(Count<DeliverCall>(Take()), 2u);
  EXPECT_EQ(role_.calls_unanswered(), kCredits);
  InlineCall(3);
  Actions out = Take();
  EXPECT_EQ(Count<CloseConnection>(out), 1u);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_TRUE(role_.closing());
  role_.OnConnected(4);
  EXPECT_FALSE(role_.closing());
}

TEST_F(ResponderRoleTest, Rfc8166_4_6_RdmaMsgpAnsweredErrChunkDoneDropped) {
  Receive(wire::V1Header{7, 1, kCredits, wire::V1Done{}}, {});
  EXPECT_TRUE(Take().empty());
  Receive(wire::V1Header{8, 1, kCredits, wire::V1Msgp{4, 0, {}}}, {});
  std::vector<Send> sends = Only<Send>(Take());
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(ErrorCode(sends[0]),
            static_cast<uint32_t>(wire::V1ErrorCode::kChunk));
  EXPECT_EQ(role_.calls_unanswered(), 0u);
}

TEST_F(ResponderRoleTest, Rfc8166_4_5_2_PositionZeroInRdmaMsgIsErrChunk) {
  wire::ChunkLists lists;
  lists.reads.push_back({0, wire::Segment{0x100, 64, 0}});
  InlineCall(9, lists);
  std::vector<Send> sends = Only<Send>(Take());
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(ErrorCode(sends[0]),
            static_cast<uint32_t>(wire::V1ErrorCode::kChunk));
  EXPECT_EQ(role_.calls_unanswered(), 0u);  // nothing admitted
  EXPECT_EQ(role_.reassembly_bytes_held(), 0u);
}

TEST_F(ResponderRoleTest, Rfc5666_11_CallWaitsForMemoryThenStarts) {
  budget_.open = false;
  InlineCall(1);
  EXPECT_EQ(Count<DeliverCall>(Take()), 0u);
  EXPECT_EQ(role_.calls_awaiting_memory(), 1u);
  EXPECT_EQ(role_.calls_unanswered(), 1u);  // it holds its credit
  budget_.open = true;
  role_.OnBudgetReleased(out_);
  EXPECT_EQ(Count<DeliverCall>(Take()), 1u);
  EXPECT_EQ(role_.calls_awaiting_memory(), 0u);
  EXPECT_EQ(role_.reassembly_bytes_held(), 24u);
  EXPECT_EQ(budget_.held, 24u);
}

TEST_F(ResponderRoleTest, Rfc8166_3_4_5_ReadChunkIsReadIntoPlaceAndDelivered) {
  const std::vector<uint8_t> argument = {1, 2, 3, 4, 5};
  wire::ChunkLists lists;
  lists.reads.push_back(
      {24, wire::Segment{0x100, static_cast<uint32_t>(argument.size()), 0}});
  InlineCall(5, lists);
  std::vector<RdmaRead> reads = Only<RdmaRead>(Take());
  ASSERT_EQ(reads.size(), 1u);
  ASSERT_EQ(reads[0].destination.size(), argument.size());
  std::copy(argument.begin(), argument.end(), reads[0].destination.begin());
  role_.OnReadComplete(reads[0].op, true, out_);
  std::vector<DeliverCall> delivered = Only<DeliverCall>(Take());
  ASSERT_EQ(delivered.size(), 1u);
  // The argument at position 24 with its XDR roundup (RFC 8166 §3.4.6).
  EXPECT_EQ(delivered[0].message.size(), 32u);
  EXPECT_EQ(delivered[0].message.span()[24], 1);
  EXPECT_EQ(delivered[0].message.span()[29], 0);
}

TEST_F(ResponderRoleTest, Rfc8166_4_1_CallWithAnotherRpcXidIsDiscarded) {
  Receive(wire::V1Header{1, 1, kCredits, wire::V1Msg{}},
          CallStream(2, {100003, 3, 0}));
  EXPECT_EQ(Count<DeliverCall>(Take()), 0u);
  EXPECT_EQ(role_.calls_discarded(), 1u);
  EXPECT_EQ(role_.calls_unanswered(), 0u);
  EXPECT_EQ(budget_.held, 0u);
}

TEST_F(ResponderRoleTest, Rfc8166_3_3_1_ReplyFreesCreditSendCompleteMemory) {
  InlineCall(1);
  const CallId id = Only<DeliverCall>(Take())[0].call;
  ASSERT_TRUE(
      role_.Reply(id, OutgoingReply{Words({1, 1, 0, 0, 0, 0}), {}}, out_).ok());
  std::vector<Send> sends = Only<Send>(Take());
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(role_.calls_unanswered(), 0u);
  EXPECT_EQ(role_.reassembly_bytes_held(), 24u);  // until the Send completes
  role_.OnSendComplete(sends[0].op, out_);
  EXPECT_EQ(Count<ReplySent>(Take()), 1u);
  EXPECT_EQ(role_.reassembly_bytes_held(), 0u);
  EXPECT_EQ(role_.Reply(id, OutgoingReply{Words({1, 1, 0}), {}}, out_).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ResponderRoleTest, Rfc8166_4_5_2_ReplyWithoutRoomIsErrChunk) {
  InlineCall(1);
  const CallId id = Only<DeliverCall>(Take())[0].call;
  // Over the 1024-octet threshold, and the call offered no reply chunk.
  OutgoingReply large{std::vector<uint8_t>(2048), {}};
  ASSERT_TRUE(role_.Reply(id, std::move(large), out_).ok());
  Actions out = Take();
  std::vector<Send> sends = Only<Send>(out);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(ErrorCode(sends[0]),
            static_cast<uint32_t>(wire::V1ErrorCode::kChunk));
  EXPECT_EQ(Count<ReplySent>(out), 1u);
  EXPECT_EQ(role_.calls_unanswered(), 0u);
  EXPECT_EQ(budget_.held, 0u);
}

TEST_F(ResponderRoleTest, Rfc8166_4_5_UndecodableCallAnsweredUnlessError) {
  // Version 7: ERR_VERS (§4.5.1).
  std::vector<uint8_t> bad = Words({1, 7, kCredits, 0, 0, 0, 0});
  wire::DecodeResult<wire::V1Decoded> d = wire::DecodeV1(bad);
  ASSERT_FALSE(d.ok());
  role_.OnUndecodableCall(bad, d.error(), out_);
  std::vector<Send> sends = Only<Send>(Take());
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(ErrorCode(sends[0]),
            static_cast<uint32_t>(wire::V1ErrorCode::kVers));
  // A malformed RDMA_ERROR is never answered.
  std::vector<uint8_t> error = Words({1, 1, kCredits, 4, 9});
  d = wire::DecodeV1(error);
  ASSERT_FALSE(d.ok());
  role_.OnUndecodableCall(error, d.error(), out_);
  EXPECT_TRUE(Take().empty());
}

TEST_F(ResponderRoleTest, DisconnectDropsCallsAndTheirCredits) {
  InlineCall(1);
  Take();
  ctx_.connected = false;
  role_.OnDisconnected(out_);
  EXPECT_EQ(role_.calls_unanswered(), 0u);
  EXPECT_EQ(role_.reassembly_bytes_held(), 0u);
  EXPECT_EQ(budget_.held, 0u);
}

}  // namespace
}  // namespace rpcrdma::engine
