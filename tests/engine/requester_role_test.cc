// The requester role (plugin/engine/requester.h) driven directly through
// its interface, without Engine: its credits (RFC 8166 §3.3.1), the gate
// the version-two control keeps over backward calls, late replies of
// cancelled calls and the version-two probe's credit.
#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/requester.h"
#include "plugin/wire/v1.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Concat;
using test::Count;
using test::FakeExposer;
using test::Only;
using test::Words;

constexpr uint32_t kCredits = 4;

// Records what the requester asks and answers with `verdict`.
class RecordingGate : public BackwardCallGate {
 public:
  absl::Status BackwardCallAllowed(const CallPlanInput& call) const override {
    asked.push_back(call);
    return verdict;
  }
  absl::Status verdict;
  mutable std::vector<CallPlanInput> asked;
};

Config RequesterConfig() {
  Config config;
  config.responder = false;
  config.credits = kCredits;
  return config;
}

class RequesterRoleTest : public ::testing::Test {
 protected:
  RequesterRoleTest() : ctx_(RequesterConfig(), &exposer_), role_(ctx_, gate_) {
    ctx_.connected = true;
    role_.OnConnected();
  }

  CallId Start(uint32_t xid, uint32_t max_reply_size = 100) {
    auto id = role_.StartCall(
        OutgoingCall{CallStream(xid, {100003, 3, 0}), {}, {}, max_reply_size},
        out_);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : CallId();
  }
  // An inline RDMA_MSG reply to `xid` granting `credits`.
  void Reply(uint32_t xid, uint32_t credits) {
    const std::vector<uint8_t> bytes = Concat(
        {Words({xid, 1, credits, 0, 0, 0, 0}), Words({xid, 1, 0, 0, 0, 0})});
    wire::DecodeResult<wire::V1Decoded> decoded = wire::DecodeV1(bytes);
    ASSERT_TRUE(decoded.ok());
    role_.OnReply(*decoded, bytes, std::nullopt, out_);
  }
  Actions Take() { return std::exchange(out_, {}); }

  FakeExposer exposer_;
  RecordingGate gate_;
  EngineContext ctx_;
  Requester role_;
  Actions out_;
};

TEST_F(RequesterRoleTest, Rfc8166_3_3_1_OneCallUntilFirstReplyThenTheGrant) {
  Start(1);
  Start(2);
  Start(3);
  EXPECT_EQ(Count<Send>(Take()), 1u);
  EXPECT_EQ(role_.calls_outstanding(), 1u);
  EXPECT_EQ(role_.calls_queued(), 2u);
  ASSERT_TRUE(role_.AwaitsReply(1));
  Reply(1, 2);
  Actions after = Take();
  EXPECT_EQ(Count<CompleteCall>(after), 1u);
  EXPECT_EQ(Count<Send>(after), 2u);
  EXPECT_EQ(role_.credit_grant(), 2u);
  EXPECT_FALSE(role_.AwaitsReply(1));
}

TEST_F(RequesterRoleTest, Rfc8166_3_3_1_GrantClampedToOneAndToTheLimit) {
  Start(1);
  Reply(1, 0);
  EXPECT_EQ(role_.credit_grant(), 1u);
  Start(2);
  Reply(2, 1000);
  EXPECT_EQ(role_.credit_grant(), kCredits);
}

TEST_F(RequesterRoleTest, Rfc8167_3_GateIsAskedWithThePlanInputOfTheCall) {
  Start(7, 5000);
  ASSERT_EQ(gate_.asked.size(), 1u);
  const CallPlanInput& in = gate_.asked.front();
  EXPECT_EQ(in.reduced_size, 24u);
  EXPECT_EQ(in.max_reply_size, 5000u);
  EXPECT_EQ(in.send_threshold, ctx_.thresholds.send);
  EXPECT_EQ(in.receive_threshold, ctx_.thresholds.receive);
}

TEST_F(RequesterRoleTest, Rfc8167_3_GateRefusalFailsTheCallAndFreesCredit) {
  gate_.verdict = absl::FailedPreconditionError("inline only");
  const CallId refused = Start(1);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].call, refused);
  EXPECT_EQ(Only<FailCall>(out)[0].status.message(), "inline only");
  EXPECT_EQ(Count<Send>(out), 0u);
  EXPECT_EQ(exposer_.windows.size(), 0u);  // nothing exposed
  EXPECT_EQ(role_.calls_outstanding(), 0u);
  EXPECT_FALSE(role_.IsLiveXid(1));
}

TEST_F(RequesterRoleTest, Rfc8166_3_3_1_LateReplyOfCancelledCallFreesCredit) {
  const CallId id = Start(1);
  Start(2);
  Take();
  role_.Cancel(id, absl::DeadlineExceededError("late"), out_);
  EXPECT_EQ(Count<FailCall>(Take()), 1u);
  EXPECT_EQ(role_.calls_abandoned(), 1u);
  EXPECT_EQ(role_.calls_outstanding(), 1u);  // the credit stays taken
  EXPECT_FALSE(role_.DropLateReply(99, 3, out_));
  EXPECT_TRUE(role_.DropLateReply(1, 3, out_));
  EXPECT_EQ(role_.calls_abandoned(), 0u);
  EXPECT_EQ(role_.credit_grant(), 3u);
  EXPECT_EQ(Count<Send>(Take()), 1u);  // call 2 goes
}

TEST_F(RequesterRoleTest, Draft04_6_2_4_PeerErrorNamesWhatTheCallOffered) {
  Start(1, 5000);
  Take();
  role_.FailOnPeerError(1, 2,
                        absl::ResourceExhaustedError("reply needs more room"),
                        /*reply_did_not_fit=*/true, out_);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 0u);  // the reply chunk is invalidated
  ASSERT_EQ(Count<Invalidate>(out), 1u);
  role_.OnInvalidated(Only<Invalidate>(out)[0].handle, out_);
  out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  const absl::Status status = Only<FailCall>(out)[0].status;
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("a reply chunk of 5000 octets"),
            absl::string_view::npos)
      << status;
  EXPECT_EQ(role_.credit_grant(), 2u);
}

TEST_F(RequesterRoleTest, Rfc8166_4_2_UndecodableReplyFailsWithDataLoss) {
  Start(1);
  Take();
  role_.FailUndecodableReply(1, absl::InvalidArgumentError("short"),
                             std::nullopt, out_);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status,
            absl::DataLossError("undecodable reply: short"));
  EXPECT_EQ(role_.calls_outstanding(), 0u);
}

TEST_F(RequesterRoleTest, Draft04_7_ProbeHoldsTheCreditUntilItsAnswer) {
  role_.HoldProbeCredit();
  Start(1);
  EXPECT_EQ(Count<Send>(Take()), 0u);
  role_.EndProbe(3);
  role_.Dispatch(out_);
  EXPECT_EQ(Count<Send>(Take()), 1u);
  EXPECT_EQ(role_.credit_grant(), 3u);
}

TEST_F(RequesterRoleTest, Draft04_7_FailedNegotiationFailsQueuedCalls) {
  ctx_.negotiating = true;
  Start(1);
  EXPECT_EQ(Count<Send>(Take()), 0u);
  ctx_.negotiating = false;
  ctx_.negotiation = absl::FailedPreconditionError("peer speaks 1 only");
  role_.Dispatch(out_);
  Actions out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status, ctx_.negotiation);
}

TEST_F(RequesterRoleTest, DisconnectFailsCallsInOrderAndHandsBackUnsent) {
  const CallId sent = Start(1);
  const CallId queued = Start(2);
  Take();
  ctx_.connected = false;
  role_.OnDisconnected(out_);
  std::vector<FailCall> failed = Only<FailCall>(Take());
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].call, sent);
  EXPECT_FALSE(failed[0].never_sent);
  EXPECT_EQ(failed[1].call, queued);
  EXPECT_TRUE(failed[1].never_sent);
  EXPECT_EQ(failed[1].unsent_xdr, CallStream(2, {100003, 3, 0}));
  EXPECT_EQ(role_.calls_outstanding(), 0u);
  EXPECT_EQ(role_.credit_grant(), 1u);
}

}  // namespace
}  // namespace rpcrdma::engine
