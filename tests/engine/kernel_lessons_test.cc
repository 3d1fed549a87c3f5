// What Linux's svcrdma (server) and xprtrdma (client) learned the hard way,
// checked in this engine: one test per lesson, named after the rule it
// checks, or a pointer to the test that already shows the behaviour.
// Labels engine and hostile.
//
//  1. Write and Reply chunks with zero segments are rejected:
//     Rfc8166_3_4_7_ChunksWithoutSegmentsAreErrChunk; over a connection,
//     the ...ZeroSegments cases of
//     HostileServer.MalformedCallsAreAnsweredWithTheRfcError in
//     tests/hostile/hostile_server_test.cc.
//  2. Read lists beyond the server's memory budget are rejected:
//     Rfc8166_4_5_2_ReadListsOverTheCallBudgetAreErrChunk.
//  3. Empty chunks are walked safely: Rfc8166_3_4_5_EmptyChunksAreWalkedSafely.
//  4. Offset arithmetic in Read-chunk ranges:
//     Rfc8166_3_4_5_ReadsNameExactlyTheSegmentsEvenNearTheTopOfTheAddressSpace.
//  5. Read-chunk positions are validated before reassembly:
//     Rfc8166_3_4_5_ReadPositionsAreCheckedBeforeAnyRead.
//  6. Inline replies that overflow the receive buffer are rejected:
//     Rfc8166_3_5_4_NoInlineReplyExceedsThePeersReceiveBuffer (responder)
//     and HostileRequesterTest.Rfc8166_3_5_4_InlineReplyOverMaxReplySizeFails
//     in hostile_test.cc (requester).
//  7. The client sanitises the credit value it is granted:
//     Rfc8166_3_3_1_GrantedCreditsAreClampedToWhatThisSidePosts.
//  8. The client never lets its Receive Queue wrap:
//     Rfc8166_3_3_1_ReceiveQueueNeverWrapsWhateverThePeerGrants.
//  9. Receives are reposted after a malformed reply:
//     Rfc8166_4_2_ReceiveRepostedAfterEveryMalformedMessage (client) and
//     Rfc8166_4_5_2_ReceiveRepostedAfterAnErrChunk (server).
// 10. The connection is dropped after an RDMA Read error:
//     Rfc8166_3_4_5_FailedRdmaReadEndsTheCallUnanswered (the engine's part)
//     and, over a connection,
//     HostileServer.Rfc8166_3_4_5_FailedRdmaReadEndsTheConnection in
//     tests/hostile/hostile_server_test.cc: the fabric breaks the
//     connection for both sides on a remote access error
//     (FabricConformanceTest.ReadWithWrongHandleIsRemoteAccessError and its
//     neighbours in tests/fabric/fabric_conformance.cc) and the api layer
//     treats a failed RDMA Read completion as fatal to the connection.
// 11. A reply chunk on the very first inline call (as the Linux NFSv4
//     client sends) is tolerated:
//     Rfc8166_3_5_4_ReplyChunkOnTheFirstInlineCallIsTolerated.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "rpcrdma/xdr.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Concat;
using test::Count;
using test::FakeExposer;
using test::Only;
using test::PrivateDataBytes;
using test::Words;

constexpr uint32_t kCredits = 4;
constexpr uint32_t kReceiveSize = 1024;  // both sides' inline threshold

std::vector<uint8_t> ErrChunk(uint32_t xid) {
  return Words({xid, 1, kCredits, 4, 2});
}

// The responder (server) role alone, as Linux's svcrdma.
class ServerLessonsTest : public ::testing::Test {
 protected:
  ServerLessonsTest() { Reset({}); }

  void Reset(Config config, uint32_t ord = 4) {
    config.requester = false;
    config.credits = kCredits;
    engine_ = std::make_unique<Engine>(config, &exposer_);
    engine_->OnConnected(
        {PrivateDataBytes({true, kReceiveSize, kReceiveSize}), ord}, out_);
    out_.clear();
  }
  Actions Receive(const std::vector<uint8_t>& bytes) {
    engine_->OnReceive(bytes, std::nullopt, out_);
    return std::exchange(out_, {});
  }
  Actions Take() { return std::exchange(out_, {}); }
  // A call refused before anything was read, allocated or delivered.
  void ExpectErrChunk(const Actions& out, uint32_t xid) {
    ASSERT_EQ(Count<Send>(out), 1u);
    EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(xid));
    EXPECT_EQ(Count<RdmaRead>(out), 0u);
    EXPECT_EQ(Count<DeliverCall>(out), 0u);
    EXPECT_EQ(engine_->reassembly_bytes_held(), 0u);
    EXPECT_EQ(engine_->calls_unanswered(), 0u);
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

// The requester (client) role alone, as Linux's xprtrdma.
class ClientLessonsTest : public ::testing::Test {
 protected:
  ClientLessonsTest() { Reset(); }

  void Reset() {
    Config config;
    config.responder = false;
    config.credits = kCredits;
    engine_ = std::make_unique<Engine>(config, &exposer_);
    posted_ = 0;
    sent_xids_.clear();
    engine_->OnConnected(
        {PrivateDataBytes({true, kReceiveSize, kReceiveSize}), 4}, out_);
    Track(Take());
  }
  Actions Take() { return std::exchange(out_, {}); }
  // Receives counted as a driver would: posted by PostReceives, consumed
  // by every message that arrives.
  void Track(const Actions& actions) {
    for (const PostReceives& p : Only<PostReceives>(actions)) {
      posted_ += p.count;
      EXPECT_EQ(p.buffer_size, kReceiveSize);
    }
    for (const Send& s : Only<Send>(actions)) {
      sent_xids_.push_back(LoadBigEndian32(s.bytes.data()));
    }
  }
  void Start(uint32_t xid) {
    ASSERT_TRUE(
        engine_->StartCall({CallStream(xid, {100003, 3, 0}), {}, {}, 100}, out_)
            .ok());
    Track(Take());
  }
  Actions Receive(const std::vector<uint8_t>& bytes) {
    EXPECT_GT(posted_, 0u) << "a message arrived with no receive posted";
    --posted_;
    engine_->OnReceive(bytes, std::nullopt, out_);
    Actions out = Take();
    Track(out);
    return out;
  }
  static std::vector<uint8_t> InlineReply(uint32_t xid, uint32_t credits) {
    return Concat(
        {Words({xid, 1, credits, 0, 0, 0, 0}), Words({xid, 1, 0, 0, 0, 0})});
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
  uint64_t posted_ = 0;
  std::vector<uint32_t> sent_xids_;
};

// ---- 1. Write and Reply chunks with zero segments -------------------------

// Linux's svcrdma took a write or reply chunk whose segment count is zero
// and later used it as if it named memory; it now rejects such a chunk
// while decoding the header. Here such a chunk could convey nothing (RFC
// 8166 §3.4.7 for results, §3.5.4 for a long reply), so the call is
// refused with ERR_CHUNK (§4.5.2) before a handler runs it.
TEST_F(ServerLessonsTest, Rfc8166_3_4_7_ChunksWithoutSegmentsAreErrChunk) {
  const std::vector<uint8_t> call = CallStream(0x11, {100003, 3, 0});
  struct Case {
    const char* name;
    std::vector<uint8_t> lists;
  };
  const Case cases[] = {
      {"write chunk of zero segments", Words({0, 1, 0, 0, 0})},
      {"reply chunk of zero segments", Words({0, 0, 1, 0})},
      {"second write chunk of zero segments",
       Words({0, 1, 1, 0x500, 64, 0, 0, 1, 0, 0, 0})},
      {"both", Words({0, 1, 0, 0, 1, 0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Actions out =
        Receive(Concat({Words({0x11, 1, kCredits, 0}), c.lists, call}));
    ExpectErrChunk(out, 0x11);
    EXPECT_EQ(Only<PostReceives>(out).size(), 1u);
  }
  // The same call with one segment in each chunk is served.
  Actions out = Receive(Concat({Words({0x11, 1, kCredits, 0, 0, 1, 1, 0x500, 64,
                                       0, 0, 0, 1, 1, 0x501, 64, 0, 0}),
                                call}));
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].write_chunk_capacities,
            std::vector<uint64_t>{64});
  EXPECT_EQ(Only<DeliverCall>(out)[0].reply_chunk_capacity, 64u);
}

// ---- 2. Read lists beyond the budget ----------------------------------------

// Linux's svcrdma now rejects a Read list whose chunks need more pages
// than the server has for one request. Here the reassembled size (base
// stream plus every chunk with its XDR roundup, RFC 8166 §3.4.6) is summed
// in 64 bits before anything is allocated, and a call over
// Config::max_call_size gets ERR_CHUNK (§4.5.2); lengths whose 32-bit sum
// wraps to a small number cannot slip through.
TEST_F(ServerLessonsTest, Rfc8166_4_5_2_ReadListsOverTheCallBudgetAreErrChunk) {
  Config config;
  config.max_call_size = 4096;
  Reset(config);
  const std::vector<uint8_t> call = CallStream(0x21, {100003, 3, 0});
  std::vector<uint8_t> sixteen_huge;  // the most segments the limits allow
  for (uint32_t i = 0; i < 16; ++i) {
    for (uint32_t w : {1u, 24u, 0x500u + i, 0xFFFFFFFFu, 0u, 0u}) {
      test::AppendWord(sixteen_huge, w);
    }
  }
  struct Case {
    const char* name;
    std::vector<uint8_t> message;
  };
  const Case cases[] = {
      {"two segments whose 32-bit sum wraps to zero",
       Concat({Words({0x21, 1, kCredits, 0, 1, 24, 0x500, 0x80000000, 0, 0, 1,
                      24, 0x501, 0x80000000, 0, 0, 0, 0, 0}),
               call})},
      {"sixteen segments of 4 GiB",
       Concat({Words({0x21, 1, kCredits, 0}), sixteen_huge, Words({0, 0, 0}),
               call})},
      {"position-zero chunk whose 32-bit sum wraps",
       Words({0x21, 1, kCredits, 1, 1, 0, 0x500, 0xFFFFFFFC, 0, 0, 1, 0, 0x501,
              8, 0, 0, 0, 0, 0})},
      {"one octet over max_call_size (with its roundup)",
       Concat({Words({0x21, 1, kCredits, 0, 1, 24, 0x500, 4096 - 24 + 1, 0, 0,
                      0, 0, 0}),
               call})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectErrChunk(Receive(c.message), 0x21);
  }
  // Exactly max_call_size is served, read into a buffer of that size.
  Actions out = Receive(Concat(
      {Words({0x21, 1, kCredits, 0, 1, 24, 0x500, 4096 - 24, 0, 0, 0, 0, 0}),
       call}));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  EXPECT_EQ(Only<RdmaRead>(out)[0].destination.size(), 4096u - 24);
  EXPECT_EQ(engine_->reassembly_bytes_held(), 4096u);
}

// ---- 3. Empty chunks
// ----------------------------------------------------------

// Linux's svcrdma mishandled chunks and segments of length zero while
// walking its parsed chunk lists. Here an empty segment inside a chunk, an
// empty chunk (an empty opaque, RFC 8166 §3.4.5) and a write chunk whose
// only segment is empty are walked without a read or write of zero
// octets, and the call is reassembled around them. See also
// HostileTest.Rfc8166_3_4_5_ZeroLengthReadChunkDeliversTheCall and
// HostileTest.Rfc8166_3_5_3_ZeroLengthPositionZeroChunkIsNotDelivered in
// hostile_test.cc.
TEST_F(ServerLessonsTest, Rfc8166_3_4_5_EmptyChunksAreWalkedSafely) {
  // Call words 0..2, a chunk at 12 of segments 4, 0 and 2 octets, call
  // words 3..5, and an empty chunk at 24 (the end).
  Actions out = Receive(Concat({Words({0x31, 1,  kCredits, 0,           //
                                       1,    12, 0x500,    4, 0, 0,     //
                                       1,    12, 0x501,    0, 0, 0,     //
                                       1,    12, 0x502,    2, 0, 0,     //
                                       1,    24, 0x503,    0, 0, 0, 0,  //
                                       1,    1,  0x504,    0, 0, 0, 0,  //
                                       0}),
                                CallStream(0x31, {100003, 3, 0})}));
  std::vector<RdmaRead> reads = Only<RdmaRead>(out);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].source.handle, 0x500u);
  EXPECT_EQ(reads[1].source.handle, 0x502u);
  std::copy_n("abcd", 4, reads[0].destination.begin());
  std::copy_n("ef", 2, reads[1].destination.begin());
  engine_->OnReadComplete(reads[0].op, true, out_);
  engine_->OnReadComplete(reads[1].op, true, out_);
  out = Take();
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  const DeliverCall d = Only<DeliverCall>(out)[0];
  EXPECT_EQ(d.message, Concat({Words({0x31, 0, 2}),
                               {'a', 'b', 'c', 'd', 'e', 'f', 0, 0},
                               Words({100003, 3, 0})}));
  EXPECT_EQ(d.write_chunk_capacities, std::vector<uint64_t>{0});
  // A reply that needs no write chunk returns the empty one unused and
  // writes nothing.
  ASSERT_TRUE(
      engine_->Reply(d.call, {Words({0x31, 1, 0, 0, 0, 0}), {}}, out_).ok());
  out = Take();
  EXPECT_EQ(Count<RdmaWrite>(out), 0u);
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(
      Only<Send>(out)[0].bytes,
      Concat({Words({0x31, 1, kCredits, 0, 0, 1, 1, 0x504, 0, 0, 0, 0, 0}),
              Words({0x31, 1, 0, 0, 0, 0})}));
}

// ---- 4. Offset arithmetic --------------------------------------------------

// Linux's svcrdma computed the page and offset of each piece of a Read
// chunk from the segment's offset and length, and a hostile offset or
// length made that arithmetic land outside the segment. Here the engine
// does no arithmetic on a peer's offsets: every RDMA Read names exactly
// one segment as the peer sent it (RFC 8166 §3.4.5), the peer's NIC (or
// the soft fabric) checks the range against its own registration, and the
// destination is exactly the segment's length, in place in the call.
TEST_F(
    ServerLessonsTest,
    Rfc8166_3_4_5_ReadsNameExactlyTheSegmentsEvenNearTheTopOfTheAddressSpace) {
  const wire::Segment first{0x500, 8, 0xFFFFFFFFFFFFFFFCull};   // wraps
  const wire::Segment second{0x501, 6, 0xFFFFFFFFFFFFFFFFull};  // wraps
  Actions out = Receive(Concat(
      {Words({0x41, 1, kCredits, 0, 1, 12, 0x500, 8, 0xFFFFFFFF, 0xFFFFFFFC, 1,
              12, 0x501, 6, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0}),
       CallStream(0x41, {100003, 3, 0})}));
  std::vector<RdmaRead> reads = Only<RdmaRead>(out);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].source, first);
  EXPECT_EQ(reads[1].source, second);
  ASSERT_EQ(reads[0].destination.size(), 8u);
  ASSERT_EQ(reads[1].destination.size(), 6u);
  // Back to back, in the chunk's place.
  EXPECT_EQ(reads[1].destination.data(), reads[0].destination.data() + 8);
  std::copy_n("01234567", 8, reads[0].destination.begin());
  std::copy_n("89abcd", 6, reads[1].destination.begin());
  engine_->OnReadComplete(reads[0].op, true, out_);
  engine_->OnReadComplete(reads[1].op, true, out_);
  out = Take();
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].message,
            Concat({Words({0x41, 0, 2}),
                    {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b',
                     'c', 'd', 0, 0},
                    Words({100003, 3, 0})}));
}

// ---- 5. Read-chunk positions -----------------------------------------------

// Linux's svcrdma now checks each Read chunk's position against the
// inline payload before it assembles the call. Here every position is
// checked before anything is read or allocated (RFC 8166 §3.4.5: a
// multiple of four, non-decreasing, within the base stream) and ERR_CHUNK
// answers (§4.5.2). The simpler cases (unaligned, decreasing, past the
// payload, position zero in RDMA_MSG) are in
// ResponderTest.Rfc8166_4_5_2_ErrChunkForEveryUnacceptableList.
TEST_F(ServerLessonsTest, Rfc8166_3_4_5_ReadPositionsAreCheckedBeforeAnyRead) {
  const std::vector<uint8_t> call = CallStream(0x51, {100003, 3, 0});
  std::vector<uint8_t> unaligned_payload = call;
  unaligned_payload.resize(26);
  struct Case {
    const char* name;
    std::vector<uint8_t> message;
  };
  const Case cases[] = {
      {"a chunk split around another (8, 16, 8)",
       Concat(
           {Words({0x51, 1, kCredits, 0, 1, 8,     0x500, 4, 0, 0, 1, 16, 0x501,
                   4,    0, 0,        1, 8, 0x502, 4,     0, 0, 0, 0, 0}),
            call})},
      {"past an inline payload of 26 octets",
       Concat({Words({0x51, 1, kCredits, 0, 1, 28, 0x500, 4, 0, 0, 0, 0, 0}),
               unaligned_payload})},
      {"position near 2^32", Concat({Words({0x51, 1, kCredits, 0, 1, 0xFFFFFFFC,
                                            0x500, 4, 0, 0, 0, 0, 0}),
                                     call})},
      {"RDMA_NOMSG position past its two-segment position-zero chunk",
       Words({0x51, 1, kCredits, 1, 1,  0,     0x500, 8, 0, 0, 1, 0, 0x501,
              4,    0, 0,        1, 16, 0x502, 4,     0, 0, 0, 0, 0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectErrChunk(Receive(c.message), 0x51);
  }
}

// ---- 6. Inline replies and the receive buffer -------------------------------

// Linux's xprtrdma copied an inline reply into the RPC's receive buffer
// without checking that it fit; the requester side here refuses an inline
// reply longer than the call's max_reply_size (see
// HostileRequesterTest.Rfc8166_3_5_4_InlineReplyOverMaxReplySizeFails).
// The responder side never sends what the peer cannot receive: a reply
// whose Send would exceed the negotiated threshold (RFC 8797 §4.2, RFC
// 8166 §3.3.2) goes through the reply chunk or, without one, is answered
// ERR_CHUNK (§3.5.4, §4.5.2).
TEST_F(ServerLessonsTest,
       Rfc8166_3_5_4_NoInlineReplyExceedsThePeersReceiveBuffer) {
  const size_t reply_header = 28;  // an RDMA_MSG with empty lists
  for (size_t stream :
       {kReceiveSize - reply_header, kReceiveSize - reply_header + 4}) {
    SCOPED_TRACE(stream);
    Actions out = Receive(
        Concat({Words({0x61, 1, kCredits, 0, 0, 0, 0}), CallStream(0x61, {})}));
    ASSERT_EQ(Count<DeliverCall>(out), 1u);
    std::vector<uint8_t> reply = Words({0x61, 1, 0, 0, 0, 0});
    reply.resize(stream);
    ASSERT_TRUE(
        engine_->Reply(Only<DeliverCall>(out)[0].call, {reply, {}}, out_).ok());
    out = Take();
    ASSERT_EQ(Count<Send>(out), 1u);
    const std::vector<uint8_t> sent = Only<Send>(out)[0].bytes;
    EXPECT_LE(sent.size(), kReceiveSize);
    if (stream + reply_header <= kReceiveSize) {
      EXPECT_EQ(sent.size(), kReceiveSize);
    } else {
      EXPECT_EQ(sent, ErrChunk(0x61));
    }
  }
}

// ---- 7. Credit sanitising -------------------------------------------------

// Linux's xprtrdma took the credit value of a reply as it came; a grant of
// zero stalled it and a huge grant let it send more calls than it had
// receives for their replies. Here the grant is clamped to [1, credits]
// (RFC 8166 §3.3.1). The same over a real connection:
// HostileResponder.Rfc8166_3_3_1_CreditZeroAnd65535AreClamped in
// tests/hostile/hostile_channel_test.cc.
TEST_F(ClientLessonsTest,
       Rfc8166_3_3_1_GrantedCreditsAreClampedToWhatThisSidePosts) {
  for (uint32_t xid = 1; xid <= 12; ++xid) Start(xid);
  EXPECT_EQ(engine_->calls_outstanding(), 1u);  // one before any reply
  Receive(InlineReply(1, 0xFFFFFFFF));
  EXPECT_EQ(engine_->credit_grant(), kCredits);
  EXPECT_EQ(engine_->calls_outstanding(), kCredits);
  Receive(InlineReply(2, 0));
  EXPECT_EQ(engine_->credit_grant(), 1u);
  EXPECT_EQ(engine_->calls_outstanding(), kCredits - 1);  // nothing new
  Receive(InlineReply(3, 65535));
  EXPECT_EQ(engine_->credit_grant(), kCredits);
  EXPECT_EQ(engine_->calls_outstanding(), kCredits);
}

// ---- 8. The receive queue never wraps ---------------------------------------

// Linux's xprtrdma posted receives according to the credits the server
// granted, so a large grant could overrun its receive queue. Here the
// receives posted are fixed by this side's own credits (RFC 8166 §3.3.1):
// each one consumed is replaced by one, whatever the peer grants, and
// every outstanding call has a receive waiting for its reply.
TEST_F(ClientLessonsTest,
       Rfc8166_3_3_1_ReceiveQueueNeverWrapsWhateverThePeerGrants) {
  EXPECT_EQ(posted_, kCredits);
  EXPECT_EQ(engine_->receives_posted(), kCredits);
  for (uint32_t xid = 1; xid <= 64; ++xid) Start(xid);
  const uint32_t grants[] = {0xFFFFFFFF, 1000, 0, 65535, kCredits + 1};
  size_t answered = 0;
  while (answered < sent_xids_.size()) {
    const uint32_t xid = sent_xids_[answered];
    Receive(InlineReply(xid, grants[answered % 5]));
    ++answered;
    EXPECT_EQ(posted_, kCredits);
    EXPECT_LE(engine_->calls_outstanding(), posted_);
  }
  EXPECT_EQ(answered, 64u);
  EXPECT_EQ(engine_->receives_posted(), kCredits);
}

// ---- 9. Receives reposted after a malformed message -------------------------

// Linux's xprtrdma lost the receive of a reply it could not parse, and
// each such reply drained its receive queue by one until the connection
// stalled. Here every received message, however malformed, is replaced by
// one receive before it is looked at (RFC 8166 §3.3.1); the call it
// names fails with DATA_LOSS (§4.2). The same for a server: a call
// answered ERR_CHUNK also gets its receive back.
TEST_F(ClientLessonsTest,
       Rfc8166_4_2_ReceiveRepostedAfterEveryMalformedMessage) {
  struct Case {
    const char* name;
    std::vector<uint8_t> reply;
    bool fails_the_call;  // decodes far enough to name call 0x70
  };
  const Case cases[] = {
      {"four octets", Words({0x70}), false},
      {"shorter than any header", Words({0x70, 1, kCredits, 0}), false},
      {"bad list discriminant", Words({0x70, 1, kCredits, 0, 7, 0, 0}), true},
      {"read list in a reply",
       Words({0x70, 1, kCredits, 0, 1, 0, 1, 4, 0, 0, 0, 0, 0}), true},
      {"RDMA_DONE as a reply", Words({0x70, 1, kCredits, 3, 0, 0, 0}), true},
      {"unknown version", Words({0x70, 7, kCredits, 0, 0, 0, 0}), true},
      {"no such call", Words({0x99, 1, kCredits, 0, 0, 0, 0}), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Reset();
    Start(0x70);
    ASSERT_EQ(sent_xids_, std::vector<uint32_t>{0x70});
    Actions out = Receive(c.reply);
    ASSERT_EQ(Count<PostReceives>(out), 1u);
    EXPECT_EQ(Only<PostReceives>(out)[0].count, 1u);
    EXPECT_EQ(posted_, kCredits);
    EXPECT_EQ(Count<CompleteCall>(out), 0u);
    if (c.fails_the_call) {
      ASSERT_EQ(Count<FailCall>(out), 1u);
      EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
                absl::StatusCode::kDataLoss);
    } else {
      EXPECT_EQ(Count<FailCall>(out), 0u);
    }
  }
}

TEST_F(ServerLessonsTest, Rfc8166_4_5_2_ReceiveRepostedAfterAnErrChunk) {
  Actions out = Receive(Words({0x91, 1, kCredits, 0, 2, 0, 0}));
  ASSERT_EQ(Count<PostReceives>(out), 1u);
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, ErrChunk(0x91));
}

// ---- 10. RDMA Read errors -----------------------------------------------

// Linux's svcrdma went on using a connection after an RDMA Read failed
// and could hand a partly read call to nfsd; it now closes the
// connection. Here a failed read (a remote access error breaks the
// connection in the fabric, which the api layer reports as fatal) ends the
// call: never delivered, never answered (no ERR_CHUNK on a connection
// being torn down), its remaining reads never issued, its memory and
// credit released.
TEST_F(ServerLessonsTest, Rfc8166_3_4_5_FailedRdmaReadEndsTheCallUnanswered) {
  Reset({}, /*ord=*/1);
  Actions out = Receive(Concat({Words({0xA1, 1, kCredits, 0, 1, 12, 0x500, 4, 0,
                                       0, 1, 12, 0x501, 4, 0, 0, 0, 0, 0}),
                                CallStream(0xA1, {100003, 3, 0})}));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);  // ORD 1: the second one waits
  EXPECT_GT(engine_->reassembly_bytes_held(), 0u);
  engine_->OnReadComplete(Only<RdmaRead>(out)[0].op, false, out_);
  out = Take();
  EXPECT_EQ(Count<RdmaRead>(out), 0u);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(Count<Send>(out), 0u);
  EXPECT_EQ(engine_->reassembly_bytes_held(), 0u);
  EXPECT_EQ(engine_->calls_unanswered(), 0u);
}

// ---- 11. A reply chunk on the very first call -------------------------------

// The Linux NFSv4 client offers a reply chunk on its very first inline
// call (its reply may be long), before any credit grant has arrived. A
// server must take it as an ordinary call (RFC 8166 §3.5.4: a reply chunk
// is offered whenever the reply might not fit), also when it serves
// version two and reads the first message as a possible RDMA2_CONNPROP.
// A short reply leaves the reply chunk unused and goes inline; a long one
// uses it.
TEST_F(ServerLessonsTest,
       Rfc8166_3_5_4_ReplyChunkOnTheFirstInlineCallIsTolerated) {
  for (bool serve_version_two : {false, true}) {
    for (size_t reply_size : {size_t{24}, size_t{2000}}) {
      SCOPED_TRACE(::testing::Message() << "version two " << serve_version_two
                                        << ", reply " << reply_size);
      Config config;
      config.serve_version_two = serve_version_two;
      Reset(config);
      Actions out = Receive(
          Concat({Words({0xB1, 1, kCredits, 0, 0, 0, 1, 1, 0x600, 4096, 0, 0}),
                  CallStream(0xB1, {100003, 4, 0})}));
      ASSERT_EQ(Count<DeliverCall>(out), 1u);
      EXPECT_EQ(Count<Send>(out), 0u);
      EXPECT_EQ(engine_->version(), 1u);
      const DeliverCall d = Only<DeliverCall>(out)[0];
      EXPECT_EQ(d.reply_chunk_capacity, 4096u);
      std::vector<uint8_t> reply = Words({0xB1, 1, 0, 0, 0, 0});
      reply.resize(reply_size);
      ASSERT_TRUE(engine_->Reply(d.call, {reply, {}}, out_).ok());
      out = Take();
      ASSERT_EQ(Count<Send>(out), 1u);
      const Send sent = Only<Send>(out)[0];
      // The only handle the call named may be invalidated (RFC 8797 §4.1).
      EXPECT_EQ(sent.invalidate, std::optional<uint32_t>(0x600));
      if (reply_size == 24) {
        EXPECT_EQ(Count<RdmaWrite>(out), 0u);
        EXPECT_EQ(sent.bytes,
                  Concat({Words({0xB1, 1, kCredits, 0, 0, 0, 0}), reply}));
      } else {
        ASSERT_EQ(Count<RdmaWrite>(out), 1u);
        EXPECT_EQ(Only<RdmaWrite>(out)[0].target.handle, 0x600u);
        EXPECT_EQ(Only<RdmaWrite>(out)[0].source.size(), 2000u);
        EXPECT_EQ(sent.bytes,
                  Words({0xB1, 1, kCredits, 1, 0, 0, 1, 1, 0x600, 2000, 0, 0}));
      }
    }
  }
}

}  // namespace
}  // namespace rpcrdma::engine
