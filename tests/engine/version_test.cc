// Version negotiation of the requester (draft-cel-nfsv4-rpcrdma-version-
// two-04 §7): with version two offered, the first message of a connection
// is an RDMA2_CONNPROP with rdma_vers 2; calls wait for the answer; a
// version-one peer's ERR_VERS selects version one (§7.2).
#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Count;
using test::FakeExposer;
using test::Loopback;
using test::Only;
using test::PrivateDataBytes;
using test::Words;

constexpr uint32_t kCredits = 4;
constexpr uint32_t kProbeXid = 0x5eed0001;

class VersionTest : public ::testing::Test {
 protected:
  void Make(bool fallback) {
    Config config;
    config.responder = false;
    config.credits = kCredits;
    config.local = {true, 4096, 4096};
    config.offered_version = 2;
    config.version_fallback = fallback;
    engine_ = std::make_unique<Engine>(config, &exposer_);
    engine_->OnConnected({PrivateDataBytes({true, 4096, 4096}), 4, kProbeXid},
                         out_);
  }
  Actions Take() { return std::exchange(out_, {}); }
  void Queue(uint32_t xid) {
    auto id = engine_->StartCall(
        OutgoingCall{CallStream(xid, {100003, 4, 0}), {}, {}, 100}, out_);
    ASSERT_TRUE(id.ok()) << id.status();
  }
  void Receive(const std::vector<uint8_t>& bytes) {
    engine_->OnReceive(bytes, std::nullopt, out_);
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

TEST_F(VersionTest, V2Draft_7_FirstMessageIsConnPropWithVersionTwo) {
  Make(true);
  Queue(0x100);
  Actions out = Take();
  std::vector<Send> sends = Only<Send>(out);
  ASSERT_EQ(sends.size(), 1u);
  // rdma_xid, rdma_vers 2, rdma_credit, rdma_htype RDMA2_CONNPROP (6);
  // rdma_start: two propvals, RDMA2_PROPID_RBSIZ (1) with a four-octet
  // uint32 of 4096 (§5.2.1) and RDMA2_PROPID_BRS (2) with
  // RDMA2_BKREQSUP_NONE (0): this client serves no backward calls
  // (§5.2.2); rdma_nochg: one word with bit 1, BRS, which the
  // configuration fixes for the connection (§5.3.1).
  EXPECT_EQ(sends[0].bytes,
            Words({kProbeXid, 2, kCredits, 6, 2, 1, 4, 4096, 2, 4, 0, 1, 2}));
  // §7: no larger than the version-one default inline threshold.
  EXPECT_LE(sends[0].bytes.size(), 1024u);
  EXPECT_TRUE(engine_->negotiating());
  EXPECT_EQ(engine_->calls_queued(), 1u);
  EXPECT_EQ(engine_->calls_outstanding(), 1u);  // the probe's credit
}

TEST_F(VersionTest, V2Draft_7_2_ErrVersSelectsVersionOneAndSendsWaitingCalls) {
  Make(true);
  Queue(0x100);
  Take();
  // RDMA_ERROR (4), ERR_VERS (1), low 1, high 1: what a version-one
  // responder answers (RFC 8166 §4.5.1).
  Receive(Words({kProbeXid, 1, 0, 4, 1, 1, 1}));
  Actions out = Take();
  EXPECT_FALSE(engine_->negotiating());
  EXPECT_TRUE(engine_->negotiation_status().ok());
  EXPECT_EQ(engine_->version(), 1u);
  EXPECT_EQ(engine_->peer_versions(), (std::pair<uint32_t, uint32_t>{1, 1}));
  std::vector<Send> sends = Only<Send>(out);
  ASSERT_EQ(sends.size(), 1u);
  // The waiting call, as a version-one inline RDMA_MSG.
  EXPECT_EQ(LoadBigEndian32(sends[0].bytes.data()), 0x100u);
  EXPECT_EQ(LoadBigEndian32(sends[0].bytes.data() + 4), 1u);
  EXPECT_EQ(LoadBigEndian32(sends[0].bytes.data() + 12), 0u);
  EXPECT_EQ(engine_->calls_outstanding(), 1u);
}

// Linux's svcrdma copies rdma_vers from the message it rejects: its answer
// to the probe is [xid, 2, credits, RDMA_ERROR, ERR_VERS, 1, 1], a
// well-formed version-two RDMA2_ERROR / RDMA2_ERR_VERS (§6.2.4).
TEST_F(VersionTest, V2Draft_7_2_ErrVersWithVersionTwoHeaderAsLinuxSendsIt) {
  Make(true);
  Queue(0x100);
  Take();
  Receive(Words({kProbeXid, 2, 64, 4, 1, 1, 1}));
  Actions out = Take();
  EXPECT_TRUE(engine_->negotiation_status().ok())
      << engine_->negotiation_status();
  EXPECT_EQ(engine_->version(), 1u);
  EXPECT_EQ(engine_->peer_versions(), (std::pair<uint32_t, uint32_t>{1, 1}));
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(LoadBigEndian32(Only<Send>(out)[0].bytes.data() + 4), 1u);
}

TEST_F(VersionTest, V2Draft_7_2_WithoutFallbackWaitingCallsFail) {
  Make(false);
  Queue(0x100);
  Queue(0x101);
  Take();
  Receive(Words({kProbeXid, 1, 0, 4, 1, 1, 1}));
  Actions out = Take();
  EXPECT_EQ(Count<Send>(out), 0u);
  std::vector<FailCall> failed = Only<FailCall>(out);
  ASSERT_EQ(failed.size(), 2u);
  for (const FailCall& f : failed) {
    EXPECT_EQ(f.status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(f.status.message(),
              "the peer supports RPC-over-RDMA versions 1 to 1, not version "
              "2 (ERR_VERS)");
  }
  EXPECT_EQ(engine_->negotiation_status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Later calls fail at once.
  Queue(0x102);
  EXPECT_EQ(Count<FailCall>(Take()), 1u);
}

TEST_F(VersionTest, V2Draft_7_2_RangeWithoutVersionOneFails) {
  Make(true);
  Receive(Words({kProbeXid, 1, 0, 4, 1, 3, 4}));
  EXPECT_EQ(engine_->negotiation_status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine_->peer_versions(), (std::pair<uint32_t, uint32_t>{3, 4}));
}

// §7.1: the peer's own RDMA2_CONNPROP selects version two; its RBSIZ bounds
// what this side sends inline, its credits are the grant, and the waiting
// call goes out as an RDMA2_MSG.
TEST_F(VersionTest, V2Draft_7_1_ConnPropAnswerSelectsVersionTwo) {
  Make(true);
  Queue(0x100);
  Take();
  // An RDMA2_CONNPROP back: RBSIZ 2048, no-change subset empty.
  Receive(Words({kProbeXid, 2, kCredits, 6, 1, 1, 4, 2048, 0}));
  Actions out = Take();
  EXPECT_TRUE(engine_->negotiation_status().ok());
  EXPECT_EQ(engine_->version(), 2u);
  EXPECT_EQ(engine_->thresholds().send, 2048u);
  EXPECT_EQ(engine_->credit_grant(), kCredits);
  EXPECT_EQ(Count<FailCall>(out), 0u);
  std::vector<Send> sends = Only<Send>(out);
  ASSERT_EQ(sends.size(), 1u);
  // rdma_xid, rdma_vers 2, credits, RDMA2_MSG, CALL, no invalidation, three
  // empty lists, then the RPC call.
  EXPECT_EQ(
      std::vector<uint8_t>(sends[0].bytes.begin(), sends[0].bytes.begin() + 32),
      Words({0x100, 2, kCredits, 0, 0, 0, 0, 0}));
}

TEST_F(VersionTest, V2Draft_7_1_OtherVersionTwoAnswerIsDataLoss) {
  Make(true);
  Queue(0x100);
  Take();
  Receive(Words({kProbeXid, 2, kCredits, 9, 0}));  // RDMA2_UPDPROP
  Actions out = Take();
  EXPECT_EQ(engine_->negotiation_status().code(), absl::StatusCode::kDataLoss);
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Count<Send>(out), 0u);
}

TEST_F(VersionTest, V2Draft_7_OtherMessagesBeforeTheAnswerAreIgnored) {
  Make(true);
  Queue(0x100);
  Take();
  Receive(Words({kProbeXid + 1, 1, 0, 4, 1, 1, 1}));  // another XID
  Receive(Words({kProbeXid}));                        // too short
  Actions out = Take();
  EXPECT_EQ(Count<Send>(out), 0u);
  EXPECT_EQ(Count<PostReceives>(out), 2u);  // each receive replaced
  EXPECT_TRUE(engine_->negotiating());
}

TEST_F(VersionTest, V2Draft_7_2_ErrChunkInsteadOfErrVersIsDataLoss) {
  Make(true);
  Receive(Words({kProbeXid, 1, 0, 4, 2}));  // ERR_CHUNK
  EXPECT_EQ(engine_->negotiation_status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(VersionTest, V2Draft_7_ConnectionLossEndsTheNegotiation) {
  Make(true);
  Queue(0x100);
  Take();
  engine_->OnDisconnected(out_);
  Actions out = Take();
  EXPECT_FALSE(engine_->negotiating());
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kUnavailable);
}

// Both engines of this project: the responder answers the probe with
// ERR_VERS 1..1 (RFC 8166 §4.5.1) and the call then completes in v1.
TEST(VersionLoopback, V2Draft_7_2_FallbackAgainstVersionOneResponder) {
  Config client;
  client.responder = false;
  client.offered_version = 2;
  Config server;
  server.requester = false;
  Loopback link(client, server);
  link.Connect();
  ASSERT_TRUE(
      link.a.Call(OutgoingCall{CallStream(7, {1, 1, 0}), {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  ASSERT_TRUE(link.b
                  .Answer(link.b.delivered[0].call,
                          OutgoingReply{Words({7, 1, 0, 0, 0, 0}), {}})
                  .ok());
  link.Run();
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.engine.version(), 1u);
  EXPECT_EQ(link.a.engine.peer_versions(),
            (std::pair<uint32_t, uint32_t>{1, 1}));
}

}  // namespace
}  // namespace rpcrdma::engine
