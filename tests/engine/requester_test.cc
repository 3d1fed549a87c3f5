// Requester role of the engine against a hand-driven peer: every header the
// engine sends is compared with golden words written from RFC 8166 §4, and
// every reply is built by hand.
#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
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

class RequesterTest : public ::testing::Test {
 protected:
  RequesterTest() {
    Config config;
    config.responder = false;
    config.credits = kCredits;
    engine_ = std::make_unique<Engine>(config, &exposer_);
  }

  void Connect(wire::PrivateData peer = {true, 1024, 1024}) {
    engine_->OnConnected({PrivateDataBytes(peer), 4}, out_);
  }
  Actions Take() { return std::exchange(out_, {}); }

  CallId Start(OutgoingCall call) {
    auto id = engine_->StartCall(std::move(call), out_);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : CallId();
  }
  static OutgoingCall Simple(uint32_t xid) {
    return OutgoingCall{CallStream(xid, {100003, 3, 0}), {}, {}, 100};
  }
  void Receive(const std::vector<uint8_t>& bytes,
               std::optional<uint32_t> invalidated = std::nullopt) {
    engine_->OnReceive(bytes, invalidated, out_);
  }
  // Every XID the actions sent, read from the transport headers.
  static std::vector<uint32_t> SentXids(const Actions& actions) {
    std::vector<uint32_t> xids;
    for (const Send& s : Only<Send>(actions)) {
      xids.push_back(LoadBigEndian32(s.bytes.data()));
    }
    return xids;
  }
  static std::vector<uint8_t> InlineReply(uint32_t xid, uint32_t credits) {
    return Concat(
        {Words({xid, 1, credits, 0, 0, 0, 0}), Words({xid, 1, 0, 0, 0, 0})});
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

TEST_F(RequesterTest, Rfc8797_4_2_ThresholdsNegotiatedAndReceivesPosted) {
  Config config;
  config.local = {true, 8192, 4096};
  config.credits = 7;
  Engine engine(config, &exposer_);
  Actions out;
  engine.OnConnected({PrivateDataBytes({true, 2048, 16384}), 4}, out);
  // send = min(own send 8192, peer receive 16384); receive = min(4096, 2048)
  EXPECT_EQ(engine.thresholds(), (wire::InlineThresholds{8192, 2048, true}));
  ASSERT_EQ(Count<PostReceives>(out), 1u);
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 7u);
  EXPECT_EQ(Only<PostReceives>(out)[0].buffer_size, 4096u);
}

TEST_F(RequesterTest, Rfc8797_5_1_NoPrivateDataMeans1024AndNoInvalidation) {
  engine_->OnConnected({{}, 4}, out_);
  EXPECT_EQ(engine_->thresholds(), (wire::InlineThresholds{1024, 1024, false}));
  // Redone on reconnect (RFC 8797 §5).
  engine_->OnDisconnected(out_);
  Connect({true, 4096, 2048});
  EXPECT_EQ(engine_->thresholds(), (wire::InlineThresholds{1024, 1024, true}));
}

TEST_F(RequesterTest, Rfc8166_3_5_1_InlineCallGoldenBytes) {
  Connect();
  Take();
  std::vector<uint8_t> hello = {'h', 'e', 'l', 'l', 'o'};
  OutgoingCall call{Words({0x11, 0, 2, 100003, 3, 5, 0xAAAAAAAA}),
                    {{24, absl::MakeSpan(hello)}},
                    {},
                    100};
  Start(std::move(call));
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  // RDMA_MSG, credits requested = 4, empty lists, then the call with the
  // argument back at position 24 and its XDR roundup.
  EXPECT_EQ(Only<Send>(out)[0].bytes,
            Concat({Words({0x11, 1, kCredits, 0, 0, 0, 0}),
                    Words({0x11, 0, 2, 100003, 3, 5}),
                    {'h', 'e', 'l', 'l', 'o', 0, 0, 0},
                    Words({0xAAAAAAAA})}));
  EXPECT_FALSE(Only<Send>(out)[0].invalidate.has_value());
  EXPECT_TRUE(exposer_.windows.empty());
}

TEST_F(RequesterTest, Rfc8166_3_4_5_ReadChunkAtXdrPositionZeroCopy) {
  Connect();
  Take();
  std::vector<uint8_t> data(2001, 0x5a);
  Start(OutgoingCall{Words({0x12, 0, 2, 100003, 3, 2001, 0xAAAAAAAA}),
                     {{24, absl::MakeSpan(data)}},
                     {},
                     100});
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  // Read list: one segment at position 24 whose length excludes the
  // roundup (RFC 8166 §3.4.6); the reduced stream follows inline.
  EXPECT_EQ(Only<Send>(out)[0].bytes,
            Concat({Words({0x12, 1, kCredits, 0, 1, 24, 0x100, 2001, 0x100, 0,
                           0, 0, 0}),
                    Words({0x12, 0, 2, 100003, 3, 2001, 0xAAAAAAAA})}));
  ASSERT_EQ(exposer_.windows.size(), 1u);
  EXPECT_EQ(exposer_.windows[0x100].memory.data(), data.data());
  EXPECT_EQ(exposer_.windows[0x100].access, uint32_t{kRemoteRead});
}

TEST_F(RequesterTest, Rfc8166_3_5_3_PositionZeroLongCall) {
  Connect();
  Take();
  std::vector<uint8_t> reduced = CallStream(0x22, {});
  reduced.resize(1100, 0x33);
  std::vector<uint8_t> arg = {1, 2, 3, 4, 5};
  Start(OutgoingCall{reduced, {{12, absl::MakeSpan(arg)}}, {}, 100});
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({0x22, 1, kCredits, 1, 1, 0, 0x100,
                                             1108, 0x100, 0, 0, 0, 0}));
  // Only the long message was exposed (nothing for an unused read chunk),
  // and it is the whole call with the argument and its roundup in place.
  ASSERT_EQ(exposer_.windows.size(), 1u);
  auto whole =
      exposer_.Access({0x100, 1108, uint64_t{0x100} << 32}, kRemoteRead);
  ASSERT_TRUE(whole.ok());
  std::vector<uint8_t> expected(reduced.begin(), reduced.begin() + 12);
  expected.insert(expected.end(), {1, 2, 3, 4, 5, 0, 0, 0});
  expected.insert(expected.end(), reduced.begin() + 12, reduced.end());
  EXPECT_EQ(std::vector<uint8_t>(whole->begin(), whole->end()), expected);
}

// Config::max_header_segments (Linux: RPCRDMA_MAX_HDR_SEGS): nine DDP
// arguments would need nine read segments; the call goes as one long call.
TEST_F(RequesterTest, Rfc8166_3_5_3_TooManyReadSegmentsBecomeALongCall) {
  Connect();
  Take();
  std::vector<std::vector<uint8_t>> args(9, std::vector<uint8_t>(200, 0x11));
  OutgoingCall call{CallStream(0x31, {}), {}, {}, 100};
  for (auto& a : args) {
    test::AppendWord(call.xdr, 200);
    call.arguments.push_back(
        {static_cast<uint32_t>(call.xdr.size()), absl::MakeSpan(a)});
  }
  Start(std::move(call));
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  // RDMA_NOMSG, one position-zero segment of 24 + 9 * (4 + 200) octets.
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({0x31, 1, kCredits, 1, 1, 0, 0x100,
                                             1860, 0x100, 0, 0, 0, 0}));
  EXPECT_EQ(exposer_.windows.size(), 1u);
}

TEST_F(RequesterTest, Rfc8166_3_4_7_TooManyWriteSegmentsFailTheCall) {
  Connect();
  Take();
  std::vector<std::vector<uint8_t>> results(9, std::vector<uint8_t>(64));
  OutgoingCall call{CallStream(0x32, {}), {}, {}, 100};
  for (auto& r : results) call.results.push_back(absl::MakeSpan(r));
  Start(std::move(call));
  Actions out = Take();
  EXPECT_EQ(Count<Send>(out), 0u);
  // Every exposed result is revoked before the failure is reported.
  EXPECT_EQ(Count<Invalidate>(out), 9u);
  for (const Invalidate& i : Only<Invalidate>(out)) {
    engine_->OnInvalidated(i.handle, out_);
  }
  std::vector<FailCall> failed = Only<FailCall>(Take());
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(failed[0].status.message(),
            "the call's write and reply chunks need 9 segments in its "
            "transport header; at most 8 are allowed");
  EXPECT_EQ(engine_->calls_outstanding(), 0u);
}

TEST_F(RequesterTest, Rfc8166_3_4_7_WriteChunkResultWithActualLength) {
  Connect();
  Take();
  std::vector<uint8_t> result(64, 0);
  CallId id = Start(OutgoingCall{
      CallStream(0x31, {100003, 3, 6}), {}, {absl::MakeSpan(result)}, 100});
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(
      Only<Send>(out)[0].bytes,
      Concat({Words({0x31, 1, kCredits, 0, 0, 1, 1, 0x100, 64, 0x100, 0, 0, 0}),
              CallStream(0x31, {100003, 3, 6})}));
  EXPECT_EQ(exposer_.windows[0x100].access, uint32_t{kRemoteWrite});
  // The responder writes three octets and reports exactly three (no
  // roundup in the write chunk).
  auto target =
      exposer_.Access({0x100, 3, uint64_t{0x100} << 32}, kRemoteWrite);
  ASSERT_TRUE(target.ok());
  (*target)[0] = 'x';
  (*target)[1] = 'y';
  (*target)[2] = 'z';
  Receive(Concat({Words({0x31, 1, 8, 0, 0, 1, 1, 0x100, 3, 0x100, 0, 0, 0}),
                  Words({0x31, 1, 0, 0, 0, 0, 3})}));
  out = Take();
  // The handle is invalidated before the call completes.
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  EXPECT_EQ(Only<Invalidate>(out)[0].handle, 0x100u);
  EXPECT_EQ(Count<CompleteCall>(out), 0u);
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<CompleteCall>(out), 1u);
  CompleteCall done = Only<CompleteCall>(out)[0];
  EXPECT_EQ(done.call, id);
  EXPECT_EQ(done.xid, 0x31u);
  EXPECT_EQ(done.reply, Words({0x31, 1, 0, 0, 0, 0, 3}));
  EXPECT_EQ(done.result_lengths, std::vector<uint32_t>{3});
  EXPECT_EQ(std::string(result.begin(), result.begin() + 3), "xyz");
  // The grant of 8 is clamped to the 4 receives this side posts.
  EXPECT_EQ(engine_->credit_grant(), kCredits);
}

TEST_F(RequesterTest, Rfc8166_3_5_4_ReplyChunkWhenReplyMayExceedThreshold) {
  Connect();
  Take();
  Start(OutgoingCall{CallStream(0x41, {}), {}, {}, 4000});
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(
      Only<Send>(out)[0].bytes,
      Concat({Words({0x41, 1, kCredits, 0, 0, 0, 1, 1, 0x100, 4000, 0x100, 0}),
              CallStream(0x41, {})}));
  std::vector<uint8_t> reply = Words({0x41, 1, 0, 0, 0, 0xBEEF});
  auto target = exposer_.Access(
      {0x100, static_cast<uint32_t>(reply.size()), uint64_t{0x100} << 32},
      kRemoteWrite);
  ASSERT_TRUE(target.ok());
  std::copy(reply.begin(), reply.end(), target->begin());
  // RDMA_NOMSG reply with the reply chunk returned with its used length.
  Receive(Words({0x41, 1, 4, 1, 0, 0, 1, 1, 0x100, 24, 0x100, 0}));
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<CompleteCall>(out), 1u);
  EXPECT_EQ(Only<CompleteCall>(out)[0].reply, reply);
  EXPECT_TRUE(Only<CompleteCall>(out)[0].result_lengths.empty());
}

TEST_F(RequesterTest, Rfc8166_3_5_4_WriteListAndReplyChunkTogether) {
  Connect();
  Take();
  std::vector<uint8_t> result(16, 0);
  Start(OutgoingCall{CallStream(0x42, {}), {}, {absl::MakeSpan(result)}, 2000});
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes,
            Concat({Words({0x42, 1, kCredits, 0, 0, 1, 1, 0x100, 16, 0x100, 0,
                           0, 1, 1, 0x101, 2000, 0x101, 0}),
                    CallStream(0x42, {})}));
  std::vector<uint8_t> reply = Words({0x42, 1, 0, 0, 0, 0, 16});
  auto target =
      exposer_.Access({0x101, 28, uint64_t{0x101} << 32}, kRemoteWrite);
  ASSERT_TRUE(target.ok());
  std::copy(reply.begin(), reply.end(), target->begin());
  Receive(Words({0x42, 1, 4, 1, 0, 1, 1, 0x100, 16, 0x100, 0, 0, 1, 1, 0x101,
                 28, 0x101, 0}));
  out = Take();
  EXPECT_EQ(Count<Invalidate>(out), 2u);
  engine_->OnInvalidated(0x101, out_);
  EXPECT_EQ(Count<CompleteCall>(Take()), 0u);
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<CompleteCall>(out), 1u);
  EXPECT_EQ(Only<CompleteCall>(out)[0].reply, reply);
  EXPECT_EQ(Only<CompleteCall>(out)[0].result_lengths,
            std::vector<uint32_t>{16});
}

TEST_F(RequesterTest, Rfc8166_3_3_1_OneOutstandingUntilFirstReplyThenGrant) {
  Connect();
  Take();
  for (uint32_t xid = 1; xid <= 5; ++xid) Start(Simple(xid));
  EXPECT_EQ(SentXids(Take()), std::vector<uint32_t>{1});
  EXPECT_EQ(engine_->calls_queued(), 4u);
  Receive(InlineReply(1, 2));
  EXPECT_EQ(SentXids(Take()), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(engine_->calls_outstanding(), 2u);
  // A zero grant counts as one: with call 3 still out nothing more goes.
  Receive(InlineReply(2, 0));
  EXPECT_EQ(engine_->credit_grant(), 1u);
  EXPECT_TRUE(SentXids(Take()).empty());
  Receive(InlineReply(3, 1));
  EXPECT_EQ(SentXids(Take()), std::vector<uint32_t>{4});
}

TEST_F(RequesterTest, Rfc8166_3_3_1_CallsQueuedBeforeConnectGoOutAfter) {
  Start(Simple(9));
  EXPECT_EQ(Count<Send>(Take()), 0u);
  Connect();
  EXPECT_EQ(SentXids(Take()), std::vector<uint32_t>{9});
}

TEST_F(RequesterTest, Rfc8166_4_5_1_ErrVersFailsCallWithRange) {
  Connect();
  Take();
  CallId id = Start(Simple(0x51));
  Take();
  Receive(Words({0x51, 1, 1, 4, 1, 2, 3}));
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  FailCall f = Only<FailCall>(out)[0];
  EXPECT_EQ(f.call, id);
  EXPECT_EQ(f.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(f.status.message()),
            "RDMA_ERROR ERR_VERS: the peer supports RPC-over-RDMA versions 2 "
            "to 3");
}

TEST_F(RequesterTest, Rfc8166_4_5_2_ErrChunkOf20OctetsFailsCall) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  Start(OutgoingCall{CallStream(0x52, {}), {}, {absl::MakeSpan(result)}, 10});
  Take();
  Receive(Words({0x52, 1, 1, 4, 2}));
  Actions out = Take();
  EXPECT_EQ(Count<FailCall>(out), 0u);  // waits for the invalidation
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(RequesterTest, Rfc8797_4_1_RemotelyInvalidatedHandleNotInvalidated) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  Start(OutgoingCall{CallStream(0x61, {}), {}, {absl::MakeSpan(result)}, 2000});
  Take();
  // Handles 0x100 (write chunk) and 0x101 (reply chunk); the Send With
  // Invalidate revoked 0x101.
  Receive(Concat({Words({0x61, 1, 4, 0, 0, 1, 1, 0x100, 8, 0x100, 0, 0, 0}),
                  Words({0x61, 1, 0, 0, 0, 0})}),
          0x101);
  Actions out = Take();
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  EXPECT_EQ(Only<Invalidate>(out)[0].handle, 0x100u);
  engine_->OnInvalidated(0x100, out_);
  EXPECT_EQ(Count<CompleteCall>(Take()), 1u);
}

TEST_F(RequesterTest, Rfc8797_4_1_SingleRemotelyInvalidatedHandleCompletes) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  Start(OutgoingCall{CallStream(0x62, {}), {}, {absl::MakeSpan(result)}, 64});
  Take();
  Receive(Concat({Words({0x62, 1, 4, 0, 0, 1, 1, 0x100, 8, 0x100, 0, 0, 0}),
                  Words({0x62, 1, 0, 0, 0, 0})}),
          0x100);
  Actions out = Take();
  EXPECT_EQ(Count<Invalidate>(out), 0u);
  EXPECT_EQ(Count<CompleteCall>(out), 1u);
}

TEST_F(RequesterTest, Rfc8166_4_2_MalformedRepliesFailWithDataLoss) {
  struct Case {
    const char* name;
    std::vector<uint8_t> reply;
  };
  std::vector<Case> cases = {
      {"write chunk handle differs",
       Words({0x71, 1, 1, 0, 0, 1, 1, 0x999, 4, 0, 0, 0, 0})},
      {"write chunk longer than offered",
       Words({0x71, 1, 1, 0, 0, 1, 1, 0x100, 9, 0, 0, 0, 0})},
      {"more write chunks than offered",
       Words({0x71, 1, 1, 0, 0, 1, 1, 0x100, 4, 0, 0, 1, 1, 0x100, 4, 0, 0, 0,
              0})},
      {"NOMSG without reply chunk", Words({0x71, 1, 1, 1, 0, 0, 0})},
      {"RDMA_MSG reply that also used the reply chunk",
       Words({0x71, 1, 1, 0, 0, 0, 1, 1, 0x101, 4, 0, 0})},
      {"NOMSG with an empty reply chunk",
       Words({0x71, 1, 1, 1, 0, 0, 1, 1, 0x101, 0, 0, 0})},
      {"read list in reply", Words({0x71, 1, 1, 0, 1, 0, 1, 4, 0, 0, 0, 0, 0})},
      {"RDMA_DONE as reply", Words({0x71, 1, 1, 3, 0, 0, 0})},
      {"undecodable list discriminant", Words({0x71, 1, 1, 0, 7, 0, 0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeExposer exposer;  // hands out 0x100 (write), 0x101 (reply chunk)
    Engine engine(Config{.credits = 2, .responder = false}, &exposer);
    Actions out;
    engine.OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out);
    std::vector<uint8_t> result(8);
    ASSERT_TRUE(
        engine
            .StartCall(
                OutgoingCall{
                    CallStream(0x71, {}), {}, {absl::MakeSpan(result)}, 2000},
                out)
            .ok());
    ASSERT_EQ(exposer.windows.size(), 2u);
    out.clear();
    const std::vector<uint8_t>& reply = c.reply;
    engine.OnReceive(reply, std::nullopt, out);
    for (const Invalidate& inv : Only<Invalidate>(out)) {
      engine.OnInvalidated(inv.handle, out);
    }
    ASSERT_EQ(Count<FailCall>(out), 1u);
    EXPECT_EQ(Count<Invalidate>(out), 2u);  // both handles revoked
    EXPECT_EQ(Only<FailCall>(out)[0].status.code(), absl::StatusCode::kDataLoss)
        << Only<FailCall>(out)[0].status;
    EXPECT_EQ(engine.calls_outstanding(), 0u);
  }
}

TEST_F(RequesterTest, Rfc8166_4_2_UnknownXidReplyDroppedReceiveReposted) {
  Connect();
  Take();
  Start(Simple(1));
  Take();
  Receive(InlineReply(77, 3));
  Actions out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 1u);
  EXPECT_EQ(engine_->calls_outstanding(), 1u);
}

TEST(EngineBothRoles, Rfc8167_4_DirectionToldByMsgTypeNotXid) {
  FakeExposer exposer;
  Engine engine(Config{}, &exposer);
  Actions out;
  engine.OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out);
  ASSERT_TRUE(engine.StartCall({CallStream(5, {}), {}, {}, 100}, out).ok());
  out.clear();
  // The peer's own call happens to use XID 5: it is a call, not the reply.
  engine.OnReceive(Concat({Words({5, 1, 1, 0, 0, 0, 0}), CallStream(5, {7})}),
                   std::nullopt, out);
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].message, CallStream(5, {7}));
  EXPECT_EQ(engine.calls_outstanding(), 1u);
  out.clear();
  engine.OnReceive(
      Concat({Words({5, 1, 1, 0, 0, 0, 0}), Words({5, 1, 0, 0, 0, 0})}),
      std::nullopt, out);
  ASSERT_EQ(Count<CompleteCall>(out), 1u);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(engine.calls_outstanding(), 0u);
}

TEST_F(RequesterTest, CancelQueuedCallFailsAtOnce) {
  Connect();
  Take();
  Start(Simple(1));
  CallId second = Start(Simple(2));
  Take();
  engine_->Cancel(second, absl::DeadlineExceededError("deadline"), out_);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].call, second);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(engine_->calls_queued(), 0u);
}

TEST_F(RequesterTest, CancelSentCallInvalidatesFirstAndKeepsCredit) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  CallId first =
      Start(OutgoingCall{CallStream(1, {}), {}, {absl::MakeSpan(result)}, 10});
  Start(Simple(2));
  Take();
  engine_->Cancel(first, absl::CancelledError("cancelled"), out_);
  Actions out = Take();
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  EXPECT_EQ(Count<FailCall>(out), 0u);
  EXPECT_EQ(Count<Send>(out), 0u);  // the credit is still taken
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(), absl::StatusCode::kCancelled);
  // The late reply frees the credit and is dropped; call 2 goes out.
  Receive(InlineReply(1, 1));
  out = Take();
  EXPECT_EQ(SentXids(out), std::vector<uint32_t>{2});
  EXPECT_EQ(Count<CompleteCall>(out), 0u);
}

// A call still waiting for its credit (RFC 8166 §3.3.1) never reached the
// peer: its failure says so and hands its stream back, so the owner can
// send it on the next connection.
TEST_F(RequesterTest, DisconnectFailsAllCallsUnavailableAfterInvalidation) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  CallId sent =
      Start(OutgoingCall{CallStream(1, {}), {}, {absl::MakeSpan(result)}, 10});
  CallId queued = Start(Simple(2));
  Take();
  engine_->OnDisconnected(out_);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].call, queued);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Only<FailCall>(out)[0].never_sent);
  EXPECT_EQ(Only<FailCall>(out)[0].unsent_xdr, CallStream(2, {100003, 3, 0}));
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].call, sent);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(Only<FailCall>(out)[0].never_sent);
  EXPECT_TRUE(Only<FailCall>(out)[0].unsent_xdr.empty());
  // Receives after the disconnect are ignored; a reconnect starts over with
  // one credit.
  Receive(InlineReply(1, 4));
  EXPECT_TRUE(Take().empty());
  Connect();
  EXPECT_EQ(engine_->credit_grant(), 1u);
}

TEST_F(RequesterTest, ExposeFailureFailsCallAndFreesCredit) {
  Connect();
  Take();
  std::vector<uint8_t> result(8);
  exposer_.fail_next_ = true;
  CallId id =
      Start(OutgoingCall{CallStream(1, {}), {}, {absl::MakeSpan(result)}, 10});
  Start(Simple(2));
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].call, id);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(SentXids(out), std::vector<uint32_t>{2});
}

TEST_F(RequesterTest, StartCallRejectsMalformedCalls) {
  Connect();
  Take();
  std::vector<uint8_t> arg(4);
  EXPECT_EQ(engine_->StartCall({Words({1}), {}, {}, 0}, out_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      engine_->StartCall({Words({1, 1, 2}), {}, {}, 0}, out_).status().code(),
      absl::StatusCode::kInvalidArgument);  // msg_type REPLY
  EXPECT_EQ(
      engine_
          ->StartCall({CallStream(1, {}), {{6, absl::MakeSpan(arg)}}, {}, 0},
                      out_)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);  // unaligned position
  EXPECT_EQ(
      engine_
          ->StartCall({CallStream(1, {}), {{28, absl::MakeSpan(arg)}}, {}, 0},
                      out_)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);  // past the stream
  Start(Simple(1));
  EXPECT_EQ(engine_->StartCall(Simple(1), out_).status().code(),
            absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace rpcrdma::engine
