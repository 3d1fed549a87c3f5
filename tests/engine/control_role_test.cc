// The version-two control (plugin/engine/control.h) driven directly
// through its interface, without Engine: the window of exchanges
// (draft-04 §5.3), its XIDs, the peer's errors and optional messages, and
// the Backward Request Support check of backward calls (§5.2.2), which
// asks PlanCall.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/control.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/wire/v2.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::Count;
using test::Only;

constexpr uint32_t kOptionalType = 0x1234;

// The requester's XIDs in flight, as the test sets them.
class FixedXids : public LiveXids {
 public:
  bool IsLiveXid(uint32_t xid) const override { return live.contains(xid); }
  std::set<uint32_t> live;
};

// A server that issues backward calls (RFC 8167) and serves version two.
Config ServerConfig() {
  Config config;
  config.requester = false;
  config.serve_version_two = true;
  config.peer_backchannel_credits = 2;
  config.optional_types = {kOptionalType};
  return config;
}

class ControlRoleTest : public ::testing::Test {
 protected:
  ControlRoleTest() : ctx_(ServerConfig(), nullptr), control_(ctx_, xids_) {
    ctx_.connected = true;
    ctx_.version = wire::kRpcRdmaVersion2;
    control_.OnConnected();
    // The peer lets its receive buffer size change and takes backward
    // calls inline only (§5.2.2).
    wire::V2ConnProp peer;
    peer.start.push_back(wire::MakeRbsizProperty(4096));
    peer.start.push_back(
        wire::MakeBrsProperty(wire::BackwardRequestSupport::kInline));
    wire::SubsetAdd(peer.nochg, 1);
    control_.AdoptPeerConnProp(peer);
  }

  absl::StatusOr<uint32_t> Request(uint32_t rbsiz) {
    return control_.RequestProperties({wire::MakeRbsizProperty(rbsiz)}, out_);
  }
  // A backward call of `reduced` octets without DDP items.
  CallPlanInput BackwardCall(uint64_t reduced, uint64_t max_reply) const {
    CallPlanInput in;
    in.version = ctx_.version;
    in.reduced_size = reduced;
    in.max_reply_size = max_reply;
    in.send_threshold = ctx_.thresholds.send;
    in.receive_threshold = ctx_.thresholds.receive;
    return in;
  }
  Actions Take() { return std::exchange(out_, {}); }

  FixedXids xids_;
  EngineContext ctx_;
  Control control_;
  Actions out_;
};

TEST_F(ControlRoleTest, Draft04_5_3_ExchangesBeyondTheWindowWaitInOrder) {
  std::vector<uint32_t> xids;
  for (uint32_t i = 0; i <= kControlWindow; ++i) {
    absl::StatusOr<uint32_t> xid = Request(wire::kMinInlineSize);
    ASSERT_TRUE(xid.ok()) << xid.status();
    xids.push_back(*xid);
  }
  EXPECT_EQ(Count<Send>(Take()), kControlWindow);
  EXPECT_EQ(control_.state().waiting.size(), 1u);
  wire::V2ResProp done;
  wire::SubsetAdd(done.done, 0);
  control_.OnPropertyAnswer(xids[0], done, out_);
  Actions out = Take();
  ASSERT_EQ(Count<PropertiesAnswered>(out), 1u);
  EXPECT_EQ(Only<PropertiesAnswered>(out)[0].accepted, std::vector<bool>{true});
  EXPECT_EQ(Count<Send>(out), 1u);  // the waiting one goes
  EXPECT_TRUE(control_.state().waiting.empty());
}

TEST_F(ControlRoleTest, Draft04_5_3_ControlXidsAvoidTheRequestersXids) {
  const uint32_t first = control_.state().next_xid;
  xids_.live = {first, first + 1};
  absl::StatusOr<uint32_t> xid = Request(wire::kMinInlineSize);
  ASSERT_TRUE(xid.ok());
  EXPECT_EQ(*xid, first + 2);
}

TEST_F(ControlRoleTest, Draft04_6_2_4_PeerErrorFailsTheExchange) {
  absl::StatusOr<uint32_t> xid = Request(wire::kMinInlineSize);
  ASSERT_TRUE(xid.ok());
  Take();
  EXPECT_FALSE(
      control_.OnPeerError(*xid + 100, absl::InvalidArgumentError("x"), out_));
  ASSERT_TRUE(control_.OnPeerError(
      *xid, absl::InvalidArgumentError("RDMA2_ERR_BAD_XDR"), out_));
  std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(Take());
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].status.message(), "RDMA2_ERR_BAD_XDR");
  EXPECT_FALSE(answered[0].connection_lost);
  EXPECT_TRUE(control_.state().in_flight.empty());
}

TEST_F(ControlRoleTest, Draft04_5_3_DisconnectFailsEveryExchange) {
  for (uint32_t i = 0; i <= kControlWindow; ++i)
    ASSERT_TRUE(Request(wire::kMinInlineSize).ok());
  Take();
  control_.OnDisconnected(out_);
  std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(Take());
  ASSERT_EQ(answered.size(), kControlWindow + 1);
  for (const PropertiesAnswered& a : answered) {
    EXPECT_TRUE(a.connection_lost);
    EXPECT_EQ(a.status.code(), absl::StatusCode::kUnavailable);
  }
}

TEST_F(ControlRoleTest, Draft04_4_1_OptionalServedOrAnsweredInvalidOption) {
  control_.OnOptional(
      7, wire::V2Optional{wire::MsgDirection::kCall, kOptionalType + 1, {}}, {},
      out_);
  EXPECT_EQ(Count<Send>(Take()), 1u);  // RDMA2_ERR_INVALID_OPTION
  control_.OnOptional(
      8, wire::V2Optional{wire::MsgDirection::kCall, kOptionalType, {}}, {},
      out_);
  ASSERT_EQ(Count<DeliverOptional>(Take()), 1u);
  EXPECT_EQ(control_.AnswerOptional(9, DeliverOptional{}, out_).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(control_.AnswerOptional(8, DeliverOptional{}, out_).ok());
  EXPECT_EQ(Count<Send>(Take()), 1u);
}

TEST_F(ControlRoleTest, Draft04_4_1_NothingWithoutRpcOnVersionOne) {
  ctx_.version = wire::kRpcRdmaVersion1;
  EXPECT_EQ(Request(wire::kMinInlineSize).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// §5.2.2, RDMA2_BKREQSUP_INLINE: a backward call goes only when it and
// its reply fit inline, as PlanCall sizes them. The version-two RDMA_MSG
// header without chunks is 36 octets.
TEST_F(ControlRoleTest, Draft04_5_2_2_InlineOnlyBackwardCallsSizedByPlanCall) {
  ctx_.thresholds.send = 1024;
  ctx_.thresholds.receive = 1024;
  constexpr uint64_t kFits = 1024 - 36;
  EXPECT_TRUE(control_.BackwardCallAllowed(BackwardCall(kFits, 0)).ok());
  const absl::Status too_long =
      control_.BackwardCallAllowed(BackwardCall(kFits + 4, 0));
  EXPECT_EQ(too_long.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(too_long.message().find("a read chunk"), std::string::npos)
      << too_long;
  // The call fits; its reply may not: a reply chunk is what it needs, not
  // a read chunk (the call is sized without room for its reply).
  const absl::Status long_reply =
      control_.BackwardCallAllowed(BackwardCall(kFits, kFits + 4));
  EXPECT_NE(long_reply.message().find("a reply chunk"), std::string::npos)
      << long_reply;
  EXPECT_TRUE(control_.BackwardCallAllowed(BackwardCall(kFits, kFits)).ok());
  CallPlanInput with_result = BackwardCall(100, 0);
  with_result.result_sizes = {64};
  EXPECT_NE(
      control_.BackwardCallAllowed(with_result).message().find("write chunks"),
      std::string::npos);
}

TEST_F(ControlRoleTest, Draft04_5_2_2_OutsideVersionTwoEveryCallIsAllowed) {
  ctx_.version = wire::kRpcRdmaVersion1;
  CallPlanInput with_result = BackwardCall(100, 0);
  with_result.result_sizes = {64};
  EXPECT_TRUE(control_.BackwardCallAllowed(with_result).ok());
}

// §7.2: a server without version two answers the probe RDMA_ERROR
// ERR_VERS with the probe's XID; the client falls back to version one when
// its configuration allows, and otherwise the connection carries nothing.
// Any other message before the answer is ignored.
TEST_F(ControlRoleTest, Draft04_7_2_ProbeAnswerSettlesTheVersion) {
  for (bool fallback : {true, false}) {
    SCOPED_TRACE(fallback);
    ctx_.config.version_fallback = fallback;
    ctx_.version = wire::kRpcRdmaVersion1;
    ctx_.negotiation = absl::OkStatus();
    control_.SendVersionProbe(0x99, out_);
    EXPECT_EQ(Count<Send>(Take()), 1u);
    EXPECT_TRUE(ctx_.negotiating);
    const std::vector<uint8_t> other = test::Words({0x98, 1, 1, 4, 1, 1, 1});
    EXPECT_FALSE(control_.TakeProbeAnswer(other).has_value());
    EXPECT_TRUE(ctx_.negotiating);
    const std::vector<uint8_t> err_vers = test::Words({0x99, 1, 1, 4, 1, 1, 1});
    std::optional<ProbeAnswer> answer = control_.TakeProbeAnswer(err_vers);
    ASSERT_TRUE(answer.has_value());
    EXPECT_FALSE(answer->credits.has_value());
    EXPECT_FALSE(ctx_.negotiating);
    EXPECT_EQ(control_.peer_versions(), std::make_pair(1u, 1u));
    EXPECT_EQ(ctx_.version, wire::kRpcRdmaVersion1);
    EXPECT_EQ(ctx_.negotiation.code(),
              fallback ? absl::StatusCode::kOk
                       : absl::StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace rpcrdma::engine
