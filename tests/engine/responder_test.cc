// Responder role of the engine against a hand-built requester: calls are
// golden transport headers from RFC 8166 §4, replies and errors are checked
// word by word.
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::Concat;
using test::Count;
using test::FakeExposer;
using test::Only;
using test::PrivateDataBytes;
using test::Words;

constexpr uint32_t kCredits = 8;

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

class ResponderTest : public ::testing::Test {
 protected:
  explicit ResponderTest(bool peer_r = true) { Reset(peer_r); }

  void Reset(bool peer_r, uint32_t ord = 4) {
    Config config;
    config.requester = false;
    config.credits = kCredits;
    config.max_call_size = 4096;
    engine_ = std::make_unique<Engine>(config, &exposer_);
    engine_->OnConnected({PrivateDataBytes({peer_r, 1024, 1024}), ord}, out_);
    out_.clear();
  }
  Actions Receive(const std::vector<uint8_t>& bytes) {
    engine_->OnReceive(bytes, std::nullopt, out_);
    return std::exchange(out_, {});
  }
  Actions Take() { return std::exchange(out_, {}); }
  // Delivers an inline call with the given chunk-list words.
  CallId Deliver(uint32_t xid, std::vector<uint8_t> lists) {
    Actions out = Receive(Concat(
        {Words({xid, 1, 2, 0}), lists, Words({xid, 0, 2, 100003, 3, 1})}));
    auto d = Only<DeliverCall>(out);
    EXPECT_EQ(d.size(), 1u);
    return d.empty() ? CallId() : d[0].call;
  }
  static std::vector<uint8_t> ErrChunk(uint32_t xid) {
    return Words({xid, 1, kCredits, 4, 2});
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

TEST_F(ResponderTest, Rfc8166_4_5_ShortMessageDroppedSilently) {
  std::vector<uint8_t> short_call = Words({1, 1, 1, 0, 0, 0});
  short_call.push_back(0);
  short_call.push_back(0);
  short_call.push_back(0);  // 27 octets
  Actions out = Receive(short_call);
  ASSERT_EQ(out.size(), 1u);  // only the replacement receive
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 1u);
}

TEST_F(ResponderTest, Rfc8166_4_5_1_ErrVersWithSupportedRangeOneToOne) {
  Actions out = Receive(Words({0x10, 2, 5, 0, 0, 0, 0}));
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({0x10, 1, kCredits, 4, 1, 1, 1}));
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
}

TEST_F(ResponderTest, Rfc8166_4_5_2_ErrChunkForEveryUnacceptableList) {
  struct Case {
    const char* name;
    std::vector<uint8_t> message;
  };
  const std::vector<uint8_t> payload = Words({0x20, 0, 2, 100003, 3, 1});
  auto msg = [&](std::vector<uint8_t> lists, uint32_t proc = 0) {
    return Concat({Words({0x20, 1, 2, proc}), lists, payload});
  };
  std::vector<uint8_t> many;
  for (int i = 0; i < 17; ++i) {
    test::AppendWord(many, 1);
    for (uint32_t w : {8u, 0x500u, 4u, 0u, 0u}) test::AppendWord(many, w);
  }
  test::AppendWord(many, 0);
  many = Concat({many, Words({0, 0})});
  std::vector<Case> cases = {
      {"unaligned position", msg(Words({1, 6, 0x500, 4, 0, 0, 0, 0, 0}))},
      {"positions out of order",
       msg(Words({1, 16, 0x500, 4, 0, 0, 1, 8, 0x501, 4, 0, 0, 0, 0, 0}))},
      {"RDMA_MSG with a position-zero chunk",
       msg(Words({1, 0, 0x500, 4, 0, 0, 0, 0, 0}))},
      {"RDMA_NOMSG without read chunks", msg(Words({0, 0, 0}), 1)},
      {"RDMA_NOMSG without position zero",
       msg(Words({1, 8, 0x500, 4, 0, 0, 0, 0, 0}), 1)},
      {"position past the inline payload",
       msg(Words({1, 28, 0x500, 4, 0, 0, 0, 0, 0}))},
      {"NOMSG position past the position-zero chunk",
       msg(Words({1, 0, 0x500, 8, 0, 0, 1, 12, 0x501, 4, 0, 0, 0, 0, 0}), 1)},
      {"more read segments than the limit", msg(many)},
      {"call larger than max_call_size",
       msg(Words({1, 8, 0x500, 0xFFFFFFF0, 0, 0, 0, 0, 0}))},
      {"unknown procedure", msg(Words({0, 0, 0}), 7)},
      {"bad list discriminant", msg(Words({2, 0, 0}))},
      {"truncated read segment", Words({0x20, 1, 2, 0, 1, 8, 0x500})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Actions out = Receive(c.message);
    ASSERT_EQ(Count<Send>(out), 1u);
    EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(0x20));
    EXPECT_EQ(Count<RdmaRead>(out), 0u);
    EXPECT_EQ(Count<DeliverCall>(out), 0u);
  }
}

// Write and reply chunks without segments are answered ERR_CHUNK:
// ServerLessonsTest.Rfc8166_3_4_7_ChunksWithoutSegmentsAreErrChunk in
// kernel_lessons_test.cc.

TEST_F(ResponderTest, Rfc8166_4_6_MsgpAnsweredWithErrChunkLikeLinux) {
  Actions out = Receive(
      Concat({Words({0x30, 1, 2, 2, 4, 1024, 0, 0, 0}), Words({0x30, 0})}));
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(0x30));
}

TEST_F(ResponderTest, Rfc8166_4_6_DoneAndErrorDroppedSilently) {
  Actions out = Receive(Words({0x31, 1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(Count<PostReceives>(out), 1u);
  out = Receive(Words({0x31, 1, 2, 4, 1, 1, 1}));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(Count<PostReceives>(out), 1u);
}

TEST_F(ResponderTest, Rfc8166_3_4_6_ReadChunkReassembledWithRoundup) {
  Actions out =
      Receive(Concat({Words({0x40, 1, 2, 0, 1, 16, 0x500, 5, 0, 0x77, 0, 0, 0}),
                      Words({0x40, 0, 2, 5, 0xCCCCCCCC})}));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  RdmaRead read = Only<RdmaRead>(out)[0];
  EXPECT_EQ(read.source, (wire::Segment{0x500, 5, 0x77}));
  ASSERT_EQ(read.destination.size(), 5u);
  std::string data = "abcde";
  std::copy(data.begin(), data.end(), read.destination.begin());
  engine_->OnReadComplete(read.op, true, out_);
  out = Take();
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].xid, 0x40u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].message, Concat({Words({0x40, 0, 2, 5}),
                                                       Bytes("abcde"),
                                                       {0, 0, 0},
                                                       Words({0xCCCCCCCC})}));
}

TEST_F(ResponderTest, Rfc8166_3_5_3_PositionZeroPlusChunkReassembled) {
  // The whole call (24 octets) in the position-zero chunk, plus a 3-octet
  // chunk at position 8 of it.
  Actions out = Receive(Words(
      {0x41, 1, 2, 1, 1, 0, 0x500, 24, 0, 0, 1, 8, 0x501, 3, 0, 0, 0, 0, 0}));
  auto reads = Only<RdmaRead>(out);
  ASSERT_EQ(reads.size(), 2u);
  std::vector<uint8_t> whole = Words({0x41, 0, 3, 0xDDDDDDDD, 5, 6});
  std::copy(whole.begin(), whole.end(), reads[0].destination.begin());
  std::string small = "xyz";
  std::copy(small.begin(), small.end(), reads[1].destination.begin());
  engine_->OnReadComplete(reads[1].op, true, out_);
  EXPECT_EQ(Count<DeliverCall>(Take()), 0u);
  engine_->OnReadComplete(reads[0].op, true, out_);
  out = Take();
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(
      Only<DeliverCall>(out)[0].message,
      Concat(
          {Words({0x41, 0}), Bytes("xyz"), {0}, Words({3, 0xDDDDDDDD, 5, 6})}));
}

TEST_F(ResponderTest, Rfc8166_3_4_5_ReadsRespectOrd) {
  Reset(true, /*ord=*/2);
  // One chunk of three segments at position 8.
  Actions out = Receive(
      Concat({Words({0x42, 1, 2, 0, 1, 8,     0x500, 4, 0, 0, 1, 8, 0x501,
                     4,    0, 0, 1, 8, 0x502, 2,     0, 0, 0, 0, 0}),
              Words({0x42, 0, 2, 3, 4})}));
  auto reads = Only<RdmaRead>(out);
  ASSERT_EQ(reads.size(), 2u);
  std::copy_n("abcd", 4, reads[0].destination.begin());
  std::copy_n("efgh", 4, reads[1].destination.begin());
  engine_->OnReadComplete(reads[0].op, true, out_);
  out = Take();
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  RdmaRead third = Only<RdmaRead>(out)[0];
  EXPECT_EQ(third.source.handle, 0x502u);
  std::copy_n("ij", 2, third.destination.begin());
  engine_->OnReadComplete(third.op, true, out_);
  EXPECT_EQ(Count<DeliverCall>(Take()), 0u);
  engine_->OnReadComplete(reads[1].op, true, out_);
  out = Take();
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(
      Only<DeliverCall>(out)[0].message,
      Concat(
          {Words({0x42, 0}), Bytes("abcdefghij"), {0, 0}, Words({2, 3, 4})}));
}

TEST_F(ResponderTest, Rfc8166_4_3_InlineReplyGoldenAndCreditGrant) {
  CallId call = Deliver(0x50, Words({0, 0, 0}));
  ASSERT_TRUE(
      engine_->Reply(call, {Words({0x50, 1, 0, 0, 0, 0}), {}}, out_).ok());
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  Send send = Only<Send>(out)[0];
  EXPECT_EQ(send.bytes, Concat({Words({0x50, 1, kCredits, 0, 0, 0, 0}),
                                Words({0x50, 1, 0, 0, 0, 0})}));
  EXPECT_FALSE(send.invalidate.has_value());  // no handle in the call
  engine_->OnSendComplete(send.op, true, out_);
  out = Take();
  ASSERT_EQ(Count<ReplySent>(out), 1u);
  EXPECT_EQ(Only<ReplySent>(out)[0].call, call);
  EXPECT_EQ(engine_->Reply(call, {}, out_).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ResponderTest, Rfc8166_3_4_7_ResultWrittenActualLengthReturned) {
  CallId call = Deliver(0x51, Words({0, 1, 1, 0x600, 64, 0, 0x1000, 0, 0}));
  std::vector<uint8_t> hello = Bytes("hello");
  ASSERT_TRUE(engine_
                  ->Reply(call,
                          {Words({0x51, 1, 0, 0, 0, 0, 5}),
                           {{28, absl::MakeSpan(hello)}}},
                          out_)
                  .ok());
  Actions out = Take();
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<RdmaWrite>(out[0]));
  RdmaWrite write = std::get<RdmaWrite>(out[0]);
  EXPECT_EQ(write.target, (wire::Segment{0x600, 5, 0x1000}));
  EXPECT_EQ(std::vector<uint8_t>(write.source.begin(), write.source.end()),
            hello);
  ASSERT_TRUE(std::holds_alternative<Send>(out[1]));
  EXPECT_EQ(
      std::get<Send>(out[1]).bytes,
      Concat({Words({0x51, 1, kCredits, 0, 0, 1, 1, 0x600, 5, 0, 0x1000, 0, 0}),
              Words({0x51, 1, 0, 0, 0, 0, 5})}));
  // The only handle of the call, and both sides set R: Send With
  // Invalidate (RFC 8797 §4.1).
  EXPECT_EQ(std::get<Send>(out[1]).invalidate, std::optional<uint32_t>(0x600));
}

TEST_F(ResponderTest, Rfc8166_3_4_7_UnusedWriteChunkReturnedWithZeroLength) {
  CallId call = Deliver(
      0x52, Words({0, 1, 1, 0x600, 64, 0, 0, 1, 1, 0x601, 64, 0, 0, 0, 0}));
  std::vector<uint8_t> a = Bytes("ab");
  ASSERT_TRUE(
      engine_
          ->Reply(call,
                  {Words({0x52, 1, 0, 0, 0, 0, 2}), {{28, absl::MakeSpan(a)}}},
                  out_)
          .ok());
  Actions out = Take();
  ASSERT_EQ(Count<RdmaWrite>(out), 1u);
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes,
            Concat({Words({0x52, 1, kCredits, 0, 0, 1, 1, 0x600, 2, 0, 0, 1, 1,
                           0x601, 0, 0, 0, 0, 0}),
                    Words({0x52, 1, 0, 0, 0, 0, 2})}));
  // Two distinct handles: no remote invalidation.
  EXPECT_FALSE(Only<Send>(out)[0].invalidate.has_value());
}

TEST_F(ResponderTest, Rfc8166_3_4_7_ResultWithoutWriteChunkStaysInline) {
  CallId call = Deliver(0x5B, Words({0, 1, 1, 0x600, 64, 0, 0, 0, 0}));
  std::vector<uint8_t> a = Bytes("ab");
  std::vector<uint8_t> b = Bytes("xyz");
  ASSERT_TRUE(engine_
                  ->Reply(call,
                          {Words({0x5B, 1, 0, 0, 0, 0, 2, 3}),
                           {{28, absl::MakeSpan(a)}, {32, absl::MakeSpan(b)}}},
                          out_)
                  .ok());
  Actions out = Take();
  ASSERT_EQ(Count<RdmaWrite>(out), 1u);
  ASSERT_EQ(Count<Send>(out), 1u);
  // The second result is inserted at its position with XDR roundup.
  EXPECT_EQ(
      Only<Send>(out)[0].bytes,
      Concat({Words({0x5B, 1, kCredits, 0, 0, 1, 1, 0x600, 2, 0, 0, 0, 0}),
              Words({0x5B, 1, 0, 0, 0, 0, 2, 3}),
              Bytes("xyz"),
              {0}}));
}

TEST_F(ResponderTest, Rfc8166_3_5_4_LongReplyThroughReplyChunk) {
  CallId call = Deliver(0x53, Words({0, 0, 1, 1, 0x700, 4096, 0, 0x2000}));
  std::vector<uint8_t> reply = Words({0x53, 1, 0, 0, 0, 0});
  reply.resize(2000, 0x44);
  ASSERT_TRUE(engine_->Reply(call, {reply, {}}, out_).ok());
  Actions out = Take();
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<RdmaWrite>(out[0]));
  RdmaWrite write = std::get<RdmaWrite>(out[0]);
  EXPECT_EQ(write.target, (wire::Segment{0x700, 2000, 0x2000}));
  EXPECT_EQ(std::vector<uint8_t>(write.source.begin(), write.source.end()),
            reply);
  ASSERT_TRUE(std::holds_alternative<Send>(out[1]));
  EXPECT_EQ(std::get<Send>(out[1]).bytes,
            Words({0x53, 1, kCredits, 1, 0, 0, 1, 1, 0x700, 2000, 0, 0x2000}));
}

TEST_F(ResponderTest, Rfc8166_3_5_4_WriteListAndReplyChunkTogether) {
  CallId call = Deliver(0x54, Words({0, 1, 1, 0x600, 8, 0, 0, 0, 1, 2, 0x700,
                                     1000, 0, 0, 0x701, 1000, 0, 0}));
  std::vector<uint8_t> result = Bytes("12345678");
  std::vector<uint8_t> reply = Words({0x54, 1, 0, 0, 0, 0, 8});
  reply.resize(1500, 0x55);
  ASSERT_TRUE(
      engine_->Reply(call, {reply, {{28, absl::MakeSpan(result)}}}, out_).ok());
  Actions out = Take();
  auto writes = Only<RdmaWrite>(out);
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_EQ(writes[0].target, (wire::Segment{0x600, 8, 0}));
  EXPECT_EQ(writes[1].target, (wire::Segment{0x700, 1000, 0}));
  EXPECT_EQ(writes[2].target, (wire::Segment{0x701, 500, 0}));
  EXPECT_EQ(writes[2].source.data(), writes[1].source.data() + 1000);
  ASSERT_TRUE(std::holds_alternative<Send>(out.back()));
  EXPECT_EQ(std::get<Send>(out.back()).bytes,
            Words({0x54, 1, kCredits, 1,     0,    1, 1, 0x600, 8,   0, 0,
                   0,    1, 2,        0x700, 1000, 0, 0, 0x701, 500, 0, 0}));
}

TEST_F(ResponderTest, Rfc8166_4_5_2_ReplyThatCannotBeConveyedIsErrChunk) {
  CallId call = Deliver(0x55, Words({0, 1, 1, 0x600, 4, 0, 0, 0, 0}));
  std::vector<uint8_t> big = Bytes("too long");
  ASSERT_TRUE(engine_
                  ->Reply(call,
                          {Words({0x55, 1, 0, 0, 0, 0, 8}),
                           {{28, absl::MakeSpan(big)}}},
                          out_)
                  .ok());
  Actions out = Take();
  EXPECT_EQ(Count<RdmaWrite>(out), 0u);
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(0x55));

  // Too long for inline and no reply chunk offered.
  call = Deliver(0x56, Words({0, 0, 0}));
  std::vector<uint8_t> reply(2000, 0);
  ASSERT_TRUE(engine_->Reply(call, {reply, {}}, out_).ok());
  out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(0x56));
  EXPECT_EQ(engine_->Reply(call, {}, out_).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ResponderTest, ReplyRejectsMisplacedResultPositions) {
  CallId call = Deliver(0x57, Words({0, 0, 0}));
  std::vector<uint8_t> r(4);
  EXPECT_EQ(
      engine_->Reply(call, {Words({0x57, 1}), {{6, absl::MakeSpan(r)}}}, out_)
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      engine_->Reply(call, {Words({0x57, 1}), {{12, absl::MakeSpan(r)}}}, out_)
          .code(),
      absl::StatusCode::kInvalidArgument);
  // The call is still answerable.
  EXPECT_TRUE(engine_->Reply(call, {Words({0x57, 1}), {}}, out_).ok());
}

TEST_F(ResponderTest, Rfc8797_4_1_SameHandleInEveryListStillUnambiguous) {
  CallId call = Deliver(
      0x58, Words({0, 1, 1, 0x600, 8, 0, 0, 0, 1, 1, 0x600, 2000, 0, 0}));
  ASSERT_TRUE(engine_->Reply(call, {Words({0x58, 1}), {}}, out_).ok());
  EXPECT_EQ(Only<Send>(Take())[0].invalidate, std::optional<uint32_t>(0x600));
}

class ResponderNoRemoteInvalidationTest : public ResponderTest {
 protected:
  ResponderNoRemoteInvalidationTest() : ResponderTest(false) {}
};

TEST_F(ResponderNoRemoteInvalidationTest, Rfc8797_4_1_PlainSendWithoutPeerR) {
  CallId call = Deliver(0x59, Words({0, 1, 1, 0x600, 8, 0, 0, 0, 0}));
  ASSERT_TRUE(engine_->Reply(call, {Words({0x59, 1}), {}}, out_).ok());
  EXPECT_FALSE(Only<Send>(Take())[0].invalidate.has_value());
}

TEST_F(ResponderTest, FailedReadDropsCallWithoutDelivery) {
  Actions out =
      Receive(Concat({Words({0x5A, 1, 2, 0, 1, 8, 0x500, 4, 0, 0, 0, 0, 0}),
                      Words({0x5A, 0})}));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  engine_->OnReadComplete(Only<RdmaRead>(out)[0].op, false, out_);
  EXPECT_EQ(Count<DeliverCall>(Take()), 0u);
}

TEST_F(ResponderTest, MemorySafety_ReadDestinationLivesUntilFlushCompletion) {
  Actions out =
      Receive(Concat({Words({0x5C, 1, 2, 0, 1, 8, 0x500, 4, 0, 0, 0, 0, 0}),
                      Words({0x5C, 0})}));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  RdmaRead read = Only<RdmaRead>(out)[0];
  engine_->OnDisconnected(out_);
  // The adapter may still place data until the flush completion arrives
  // (AddressSanitizer reports it if the engine freed the buffer early).
  std::fill(read.destination.begin(), read.destination.end(), uint8_t{9});
  engine_->OnReadComplete(read.op, false, out_);
  out = Take();
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(Count<RdmaRead>(out), 0u);
}

TEST_F(ResponderTest, DisconnectWhileReplyInFlightReleasesOnFlush) {
  CallId sending = Deliver(0x5D, Words({0, 0, 0}));
  CallId waiting = Deliver(0x5E, Words({0, 0, 0}));
  std::vector<uint8_t> reply = Words({0x5D, 1, 0, 0, 0, 0});
  ASSERT_TRUE(engine_->Reply(sending, {reply, {}}, out_).ok());
  Send send = Only<Send>(Take())[0];
  engine_->OnDisconnected(out_);
  EXPECT_TRUE(Take().empty());
  // A delivered call whose connection is gone cannot be answered.
  EXPECT_EQ(engine_->Reply(waiting, {reply, {}}, out_).code(),
            absl::StatusCode::kInvalidArgument);
  engine_->OnSendComplete(send.op, false, out_);
  Actions out = Take();
  ASSERT_EQ(Count<ReplySent>(out), 1u);
  EXPECT_EQ(Only<ReplySent>(out)[0].call, sending);
}

TEST_F(ResponderTest,
       Rfc8166_4_5_CorruptedHeadersGetExactlyOneClassifiedAnswer) {
  // A valid call with every list populated, then words replaced by small
  // or huge values. Each result must be one of: dropped, ERR_VERS, ERR_CHUNK
  // (golden), or accepted (reads issued or call delivered), never two.
  const std::vector<uint8_t> valid =
      Concat({Words({0x77, 1,     2,  0, 1, 8, 0x500, 4, 0,     0,    0, 1,
                     1,    0x600, 16, 0, 0, 0, 1,     1, 0x700, 2000, 0, 0}),
              Words({0x77, 0, 2, 4, 5, 6})});
  std::mt19937 rng(8166);
  const uint32_t values[] = {0, 1, 2, 3, 4, 5, 7, 0x500, 0xFFFFFFFF, 0x10000};
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> m = valid;
    size_t words = m.size() / 4;
    for (int k = 0; k < 1 + i % 3; ++k) {
      size_t at = 1 + rng() % (words - 1);  // keep the XID
      StoreBigEndian32(m.data() + at * 4, values[rng() % 10]);
    }
    m.resize(m.size() - (rng() % 3 == 0 ? 4 * (rng() % words) : 0));
    Reset(true);  // no call holds a credit from the case before
    Actions out = Receive(m);
    auto sends = Only<Send>(out);
    SCOPED_TRACE(i);
    if (!sends.empty()) {
      ASSERT_EQ(sends.size(), 1u);
      ASSERT_TRUE(sends[0].bytes == ErrChunk(0x77) ||
                  sends[0].bytes == Words({0x77, 1, kCredits, 4, 1, 1, 1}));
      EXPECT_EQ(Count<RdmaRead>(out) + Count<DeliverCall>(out), 0u);
    } else if (m.size() >= 28 && LoadBigEndian32(m.data() + 12) < 2) {
      // Accepted: reads issued, delivered, or (no RPC call inline, RFC 8166
      // §4.1) discarded.
      EXPECT_EQ(Count<RdmaRead>(out) + Count<DeliverCall>(out) +
                    engine_->calls_discarded(),
                1u);
    }
    for (const RdmaRead& r : Only<RdmaRead>(out)) {
      engine_->OnReadComplete(r.op, true, out_);
    }
    Take();
  }
}

}  // namespace
}  // namespace rpcrdma::engine
