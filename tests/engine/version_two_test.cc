// RPC-over-RDMA version two in both roles
// (draft-cel-nfsv4-rpcrdma-version-two-04): the responder's side of the
// negotiation (§7.1), calls and replies as RDMA2_MSG / RDMA2_NOMSG with the
// direction stated (§4.2, §6.2.2), the peer's receive buffer size as the
// inline threshold (§2, §5.2.1), property messages (§5.3), optional
// messages (§4.1) and version-two errors both ways (§6.2.4).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v2.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Count;
using test::FakeExposer;
using test::Loopback;
using test::Only;
using test::Words;

constexpr uint32_t kCredits = 4;

wire::V2Header DecodeOrDie(const std::vector<uint8_t>& bytes) {
  auto d = wire::DecodeV2(bytes);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? d->header : wire::V2Header{};
}

std::vector<uint8_t> ConnProp(uint32_t xid, uint32_t rbsiz) {
  return wire::EncodeV2(
      wire::V2Header{xid, 2, kCredits,
                     wire::V2ConnProp{{wire::MakeRbsizProperty(rbsiz)}, {}}});
}

Config ClientConfig(uint32_t receive_size = 4096, uint32_t send_size = 4096) {
  Config c;
  c.responder = false;
  c.credits = kCredits;
  c.local = {false, send_size, receive_size};
  c.offered_version = 2;
  c.version_fallback = false;
  return c;
}

Config ServerConfig(uint32_t receive_size = 4096) {
  Config c;
  c.requester = false;
  c.credits = kCredits;
  c.local = {false, 4096, receive_size};
  c.serve_version_two = true;
  return c;
}

// A server engine, connected, fed messages one at a time.
class ResponderV2 : public ::testing::Test {
 protected:
  void Make(Config config) {
    engine_ = std::make_unique<Engine>(config, &exposer_);
    engine_->OnConnected({{}, 4}, out_);
    Take();
  }
  Actions Take() { return std::exchange(out_, {}); }
  Actions Receive(const std::vector<uint8_t>& bytes) {
    engine_->OnReceive(bytes, std::nullopt, out_);
    return Take();
  }
  std::vector<Send> Sends(const Actions& out) { return Only<Send>(out); }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

TEST_F(ResponderV2, V2Draft_7_1_ConnPropIsAnsweredWithOursAndSelectsV2) {
  Make(ServerConfig(8192));
  Actions out = Receive(ConnProp(0x77, 2048));
  std::vector<Send> sends = Sends(out);
  ASSERT_EQ(sends.size(), 1u);
  wire::V2Header answer = DecodeOrDie(sends[0].bytes);
  EXPECT_EQ(answer.xid, 0x77u);
  EXPECT_EQ(answer.credits, kCredits);
  const auto* props = std::get_if<wire::V2ConnProp>(&answer.body);
  ASSERT_NE(props, nullptr);
  auto known = wire::InterpretProperties(props->start);
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->rbsiz, 8192u);  // §5.2.1: what this side posts
  EXPECT_EQ(engine_->version(), 2u);
  // §5.2.1: the client's receive buffers bound this side's Sends.
  EXPECT_EQ(engine_->thresholds().send, 2048u);
  EXPECT_EQ(engine_->calls_unanswered(), 0u);  // a CONNPROP is no call
}

TEST_F(ResponderV2, V2Draft_7_2_WithoutVersionTwoTheConnPropGetsErrVers) {
  Config c = ServerConfig();
  c.serve_version_two = false;
  Make(c);
  std::vector<Send> sends = Sends(Receive(ConnProp(0x77, 4096)));
  ASSERT_EQ(sends.size(), 1u);
  // RDMA_ERROR ERR_VERS 1..1 (RFC 8166 §4.5.1) with the probe's XID.
  auto d = wire::DecodeV1(sends[0].bytes);
  ASSERT_TRUE(d.ok()) << d.status();
  const auto* err = std::get_if<wire::V1Error>(&d->header.body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, wire::V1ErrorCode::kVers);
  EXPECT_EQ(d->header.xid, 0x77u);
  EXPECT_EQ(engine_->version(), 1u);
}

TEST_F(ResponderV2, V2Draft_7_2_VersionTwoOnlyAnswersVersionOneCallsErrVers) {
  Config c = ServerConfig();
  c.require_version_two = true;
  Make(c);
  const std::vector<uint8_t> call = test::Concat(
      {Words({0x10, 1, kCredits, 0, 0, 0, 0}), CallStream(0x10, {1, 1, 0})});
  std::vector<Send> sends = Sends(Receive(call));
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0].bytes, Words({0x10, 1, kCredits, 4, 1, 2, 2}));
  EXPECT_EQ(engine_->calls_unanswered(), 0u);
}

TEST_F(ResponderV2, V2Draft_7_1_OnlyTheFirstMessageMayOpenVersionTwo) {
  Make(ServerConfig());
  const std::vector<uint8_t> call = test::Concat(
      {Words({0x10, 1, kCredits, 0, 0, 0, 0}), CallStream(0x10, {1, 1, 0})});
  Receive(call);
  Receive(ConnProp(0x11, 4096));
  EXPECT_EQ(engine_->version(), 1u);
}

TEST_F(ResponderV2, V2Draft_6_2_4_MalformedHeaderIsAnsweredBadXdr) {
  Make(ServerConfig());
  Receive(ConnProp(0x77, 4096));
  // RDMA2_MSG whose read list says an entry follows and ends.
  std::vector<Send> sends =
      Sends(Receive(Words({0x20, 2, kCredits, 0, 0, 0, 1, 5})));
  ASSERT_EQ(sends.size(), 1u);
  wire::V2Header e = DecodeOrDie(sends[0].bytes);
  EXPECT_EQ(e.xid, 0x20u);
  const auto* err = std::get_if<wire::V2Error>(&e.body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, wire::V2ErrorCode::kBadXdr);
}

// §6.2.4: chunk lists beyond this side's limits are answered with the code
// and the limit that was exceeded.
TEST_F(ResponderV2, V2Draft_6_2_4_ChunkLimitsAreAnsweredWithTheirCodes) {
  Config c = ServerConfig();
  c.limits = {2, 1, 2};  // read segments, write chunks, segments per chunk
  Make(c);
  Receive(ConnProp(0x77, 4096));
  const wire::Segment s{1, 8, 0};
  struct Case {
    wire::ChunkLists lists;
    wire::V2ErrorCode code;
    uint32_t limit;
  };
  const Case cases[] = {
      {{{{4, s}, {4, s}, {8, s}}, {}, std::nullopt},
       wire::V2ErrorCode::kReadChunks,
       2},
      {{{}, {{s}, {s}}, std::nullopt}, wire::V2ErrorCode::kWriteChunks, 1},
      {{{}, {{s, s, s}}, std::nullopt}, wire::V2ErrorCode::kSegments, 2},
  };
  uint32_t xid = 0x80;
  for (const Case& k : cases) {
    SCOPED_TRACE(wire::V2ErrorCodeName(k.code));
    std::vector<uint8_t> bytes = wire::EncodeV2(
        wire::V2Header{++xid, 2, kCredits,
                       wire::V2Msg{{wire::MsgDirection::kCall, 0, k.lists}}});
    std::vector<Send> sends = Sends(Receive(bytes));
    ASSERT_EQ(sends.size(), 1u);
    wire::V2Header e = DecodeOrDie(sends[0].bytes);
    EXPECT_EQ(e.xid, xid);
    const auto* err = std::get_if<wire::V2Error>(&e.body);
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(err->code, k.code);
    EXPECT_EQ(k.code == wire::V2ErrorCode::kSegments ? err->max_segments
                                                     : err->max_chunks,
              k.limit);
  }
}

TEST_F(ResponderV2, V2Draft_6_2_4_UnknownProcIsAnsweredInvalidProc) {
  Make(ServerConfig());
  Receive(ConnProp(0x77, 4096));
  std::vector<Send> sends = Sends(Receive(Words({0x21, 2, kCredits, 3})));
  ASSERT_EQ(sends.size(), 1u);
  const wire::V2Header e = DecodeOrDie(sends[0].bytes);
  const auto* err = std::get_if<wire::V2Error>(&e.body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, wire::V2ErrorCode::kInvalidProc);
}

TEST_F(ResponderV2, V2Draft_6_2_4_AnErrorIsNeverAnsweredWithAnError) {
  Make(ServerConfig());
  Receive(ConnProp(0x77, 4096));
  EXPECT_EQ(Count<Send>(Receive(Words({0x22, 2, kCredits, 4}))), 0u);
}

TEST_F(ResponderV2, V2Draft_4_1_UnknownOptionalIsAnsweredInvalidOption) {
  Make(ServerConfig());
  Receive(ConnProp(0x77, 4096));
  std::vector<Send> sends = Sends(Receive(wire::EncodeV2(wire::V2Header{
      0x30, 2, kCredits,
      wire::V2Optional{wire::MsgDirection::kCall, 0xF0000001, {1, 2, 3}}})));
  ASSERT_EQ(sends.size(), 1u);
  wire::V2Header e = DecodeOrDie(sends[0].bytes);
  EXPECT_EQ(e.xid, 0x30u);
  const auto* err = std::get_if<wire::V2Error>(&e.body);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, wire::V2ErrorCode::kInvalidOption);
}

// §5.3.3: RBSIZ is granted within what the posted receives hold
// (Config::max_receive_size_granted: they are posted that large from the
// start, §5.2.1); anything else is rejected.
TEST_F(ResponderV2, V2Draft_5_3_3_RbsizGrantedWithinThePostedReceives) {
  Config c = ServerConfig(4096);
  c.max_receive_size_granted = 16384;
  engine_ = std::make_unique<Engine>(c, &exposer_);
  engine_->OnConnected({{}, 4}, out_);
  std::vector<PostReceives> posted = Only<PostReceives>(Take());
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_EQ(posted[0].buffer_size, 16384u);
  Receive(ConnProp(0x77, 4096));
  std::vector<Send> sends = Sends(Receive(wire::EncodeV2(wire::V2Header{
      0x40, 2, kCredits,
      wire::V2ReqProp{
          {wire::MakeRbsizProperty(65536),
           wire::MakeBrsProperty(wire::BackwardRequestSupport::kGeneral),
           wire::MakeRbsizProperty(8192), wire::PropVal{0x77777777, {}}}}})));
  ASSERT_EQ(sends.size(), 1u);
  wire::V2Header answer = DecodeOrDie(sends[0].bytes);
  EXPECT_EQ(answer.xid, 0x40u);
  const auto* res = std::get_if<wire::V2ResProp>(&answer.body);
  ASSERT_NE(res, nullptr);
  EXPECT_EQ(res->done, (wire::PropSubset{0b0100}));
  EXPECT_EQ(res->rejected, (wire::PropSubset{0b1011}));
  EXPECT_EQ(engine_->thresholds().receive, 8192u);
}

// §5.3.3 on the requester: an index both done and rejected, or neither, was
// not changed; a granted RBSIZ becomes the send threshold.
TEST(VersionTwoRequester, V2Draft_5_3_3_OverlapsAndOmissionsAreRejections) {
  FakeExposer exposer;
  Engine engine(ClientConfig(4096, 16384), &exposer);
  Actions out;
  engine.OnConnected({{}, 4, 0x99}, out);
  engine.OnReceive(ConnProp(0x99, 4096), std::nullopt, out);
  ASSERT_EQ(engine.version(), 2u);
  out.clear();
  auto xid = engine.RequestProperties(
      {wire::MakeRbsizProperty(16384), wire::MakeRbsizProperty(8192),
       wire::MakeRbsizProperty(2048)},
      out);
  ASSERT_TRUE(xid.ok()) << xid.status();
  std::vector<Send> sent = Only<Send>(out);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(DecodeOrDie(sent[0].bytes).proc(), wire::V2Proc::kReqProp);
  // §5.2.1: the lower size asked for (index 2) bounds Sends meanwhile.
  EXPECT_EQ(engine.thresholds().send, 2048u);
  out.clear();
  // Index 0 done; index 1 both; index 2 neither.
  engine.OnReceive(
      wire::EncodeV2(wire::V2Header{*xid, 2, kCredits,
                                    wire::V2ResProp{{0b011}, {0b010}, {}}}),
      std::nullopt, out);
  std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(out);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].xid, *xid);
  EXPECT_EQ(answered[0].accepted, (std::vector<bool>{true, false, false}));
  EXPECT_FALSE(answered[0].connection_lost);
  EXPECT_EQ(engine.thresholds().send, 16384u);
}

TEST(VersionTwoRequester, V2Draft_5_3_LossAnswersAPendingRequest) {
  FakeExposer exposer;
  Engine engine(ClientConfig(4096, 8192), &exposer);
  Actions out;
  engine.OnConnected({{}, 4, 0x99}, out);
  engine.OnReceive(ConnProp(0x99, 4096), std::nullopt, out);
  auto xid = engine.RequestProperties({wire::MakeRbsizProperty(8192)}, out);
  ASSERT_TRUE(xid.ok());
  out.clear();
  engine.OnDisconnected(out);
  std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(out);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_TRUE(answered[0].connection_lost);
}

TEST_F(ResponderV2, V2Draft_5_3_4_UpdPropChangesTheSendThreshold) {
  Make(ServerConfig());
  Receive(ConnProp(0x77, 4096));
  EXPECT_EQ(engine_->thresholds().send, 4096u);
  Receive(wire::EncodeV2(wire::V2Header{
      0x50, 2, kCredits, wire::V2UpdProp{{wire::MakeRbsizProperty(2048)}}}));
  EXPECT_EQ(engine_->thresholds().send, 2048u);
}

void ExpectNoErrors(const Loopback& link) {
  EXPECT_TRUE(link.errors.empty()) << link.errors.front();
}

// Every Send after the opening exchange is a version-two message whose
// direction is the one its RPC message has.
void ExpectAllVersionTwo(const test::Side& side) {
  for (const std::vector<uint8_t>& bytes : side.sends) {
    auto d = wire::DecodeV2(bytes);
    ASSERT_TRUE(d.ok()) << d.status();
  }
}

TEST(VersionTwoLoopback, V2Draft_4_2_CallAndReplyTravelAsRdma2Msg) {
  Loopback link(ClientConfig(), ServerConfig());
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
  ExpectNoErrors(link);
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.engine.version(), 2u);
  EXPECT_EQ(link.b.engine.version(), 2u);
  ExpectAllVersionTwo(link.a);
  ExpectAllVersionTwo(link.b);
  // CONNPROP each way, then the call and its reply.
  ASSERT_EQ(link.a.sends.size(), 2u);
  ASSERT_EQ(link.b.sends.size(), 2u);
  wire::V2Header call = DecodeOrDie(link.a.sends[1]);
  wire::V2Header reply = DecodeOrDie(link.b.sends[1]);
  ASSERT_EQ(call.proc(), wire::V2Proc::kMsg);
  ASSERT_EQ(reply.proc(), wire::V2Proc::kMsg);
  EXPECT_EQ(call.chunks()->direction, wire::MsgDirection::kCall);
  EXPECT_EQ(reply.chunks()->direction, wire::MsgDirection::kReply);
  // §6.2.3: no handle is offered for remote invalidation.
  EXPECT_EQ(call.chunks()->inv_handle, 0u);
  EXPECT_FALSE(link.b.send_invalidates[1].has_value());
}

// §2 / §5.2.1: the client's 2000-octet call fits the server's 4096-octet
// receives inline, but not 1024-octet ones: then it is a long call.
TEST(VersionTwoLoopback, V2Draft_2_PeerRbsizDecidesInlineOrLongCall) {
  for (uint32_t server_receive : {4096u, 1024u}) {
    SCOPED_TRACE(server_receive);
    Loopback link(ClientConfig(), ServerConfig(server_receive));
    link.Connect();
    std::vector<uint8_t> stream = CallStream(9, {1, 1, 0});
    stream.resize(2000, 0xAB);
    ASSERT_TRUE(link.a.Call(OutgoingCall{stream, {}, {}, 64}).ok());
    link.Run();
    ASSERT_EQ(link.b.delivered.size(), 1u);
    EXPECT_EQ(link.b.delivered[0].message.size(), stream.size());
    ASSERT_TRUE(link.b
                    .Answer(link.b.delivered[0].call,
                            OutgoingReply{Words({9, 1, 0, 0, 0, 0}), {}})
                    .ok());
    link.Run();
    ExpectNoErrors(link);
    ASSERT_EQ(link.a.completed.size(), 1u);
    wire::V2Header call = DecodeOrDie(link.a.sends[1]);
    EXPECT_EQ(call.proc(), server_receive == 4096 ? wire::V2Proc::kMsg
                                                  : wire::V2Proc::kNoMsg);
    EXPECT_EQ(call.chunks()->direction, wire::MsgDirection::kCall);
  }
}

// §6.2.4: a reply larger than what goes inline, with no reply chunk
// offered, is RDMA2_ERR_REPLY_RESOURCE, reported to the caller by name.
TEST(VersionTwoLoopback, V2Draft_6_2_4_ReplyWithoutRoomIsReplyResource) {
  Loopback link(ClientConfig(1024), ServerConfig());
  link.Connect();
  ASSERT_TRUE(
      link.a.Call(OutgoingCall{CallStream(5, {1, 1, 0}), {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  std::vector<uint8_t> big = Words({5, 1, 0, 0, 0, 0});
  big.resize(3000, 1);
  ASSERT_TRUE(
      link.b.Answer(link.b.delivered[0].call, OutgoingReply{big, {}}).ok());
  link.Run();
  ExpectNoErrors(link);
  ASSERT_EQ(link.a.failed.size(), 1u);
  const absl::Status& s = link.a.failed[0].status;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("RDMA2_ERR_REPLY_RESOURCE"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("3000"), std::string::npos) << s;
}

// §5.2.2: a client with a backward service says GENL, one without says
// NONE, and the server then issues it no backward call at all.
TEST(VersionTwoLoopback, V2Draft_5_2_2_BackwardCallsFollowTheClientsBrs) {
  for (uint32_t backchannel : {2u, 0u}) {
    SCOPED_TRACE(backchannel);
    Config client = ClientConfig();
    client.backchannel_credits = backchannel;
    Config server = ServerConfig();
    server.peer_backchannel_credits = 2;
    Loopback link(client, server);
    link.Connect();
    auto known = wire::InterpretProperties(
        std::get<wire::V2ConnProp>(DecodeOrDie(link.a.sends[0]).body).start);
    ASSERT_TRUE(known.ok());
    EXPECT_EQ(known->brs, backchannel > 0
                              ? wire::BackwardRequestSupport::kGeneral
                              : wire::BackwardRequestSupport::kNone);
    ASSERT_TRUE(
        link.b.Call(OutgoingCall{CallStream(0x900, {1, 1, 0}), {}, {}, 64})
            .ok());
    link.Run();
    ExpectNoErrors(link);
    if (backchannel > 0) {
      ASSERT_EQ(link.a.delivered.size(), 1u);
    } else {
      EXPECT_TRUE(link.a.delivered.empty());
      ASSERT_EQ(link.b.failed.size(), 1u);
      EXPECT_EQ(link.b.failed[0].status.code(),
                absl::StatusCode::kFailedPrecondition);
      EXPECT_NE(link.b.failed[0].status.message().find("BKREQSUP_NONE"),
                std::string::npos);
    }
  }
}

// §5.2.2: under RDMA2_BKREQSUP_INLINE (also Table 1's default when the
// client says nothing) a backward call goes only without chunks.
TEST_F(ResponderV2, V2Draft_5_2_2_InlineOnlyClientGetsNoChunks) {
  Config c = ServerConfig();
  c.peer_backchannel_credits = 2;
  Make(c);
  Receive(ConnProp(0x77, 4096));  // RBSIZ only: BRS INLINE by default
  std::vector<uint8_t> result(100);
  auto with_chunk = engine_->StartCall(
      OutgoingCall{
          CallStream(0x901, {1, 1, 0}), {}, {absl::MakeSpan(result)}, 64},
      out_);
  ASSERT_TRUE(with_chunk.ok());
  std::vector<FailCall> failed = Only<FailCall>(Take());
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(failed[0].status.message().find("write chunks"), std::string::npos)
      << failed[0].status;
  auto inline_call = engine_->StartCall(
      OutgoingCall{CallStream(0x902, {1, 1, 0}), {}, {}, 64}, out_);
  ASSERT_TRUE(inline_call.ok());
  std::vector<Send> sends = Sends(Take());
  ASSERT_EQ(sends.size(), 1u);
  wire::V2Header call = DecodeOrDie(sends[0].bytes);
  ASSERT_EQ(call.proc(), wire::V2Proc::kMsg);
  EXPECT_EQ(call.chunks()->direction, wire::MsgDirection::kCall);
  EXPECT_EQ(call.chunks()->lists, wire::ChunkLists{});
}

// §3 / §6.2.3: the requester names one handle of its call in
// rdma_inv_handle; the responder invalidates it with its reply's Send With
// Invalidate, forward and backward (§3.1), and the requester leaves it
// alone. Without willingness on either side nothing is named or
// invalidated.
TEST(VersionTwoLoopback, V2Draft_6_2_3_NamedHandleIsInvalidatedRemotely) {
  for (bool willing : {true, false}) {
    SCOPED_TRACE(willing);
    Config client = ClientConfig();
    client.local.remote_invalidation = willing;
    client.backchannel_credits = 2;
    Config server = ServerConfig();
    server.local.remote_invalidation = willing;
    server.peer_backchannel_credits = 2;
    Loopback link(client, server);
    link.Connect();
    for (test::Side* requester : {&link.a, &link.b}) {
      test::Side* responder = requester == &link.a ? &link.b : &link.a;
      const size_t first_send = requester->sends.size();
      std::vector<uint8_t> result(4096);
      const uint32_t xid = requester == &link.a ? 0x61 : 0x62;
      ASSERT_TRUE(
          requester
              ->Call(OutgoingCall{
                  CallStream(xid, {1, 1, 0}), {}, {absl::MakeSpan(result)}, 64})
              .ok());
      link.Run();
      ASSERT_EQ(responder->delivered.size(), 1u);
      const size_t reply_send = responder->sends.size();
      // Written into the write chunk after Answer returns: kept alive.
      const std::vector<uint8_t> written(16, 0x5A);
      ASSERT_TRUE(responder
                      ->Answer(responder->delivered[0].call,
                               OutgoingReply{Words({xid, 1, 0, 0, 0, 0, 16}),
                                             {{28, written}}})
                      .ok());
      responder->delivered.clear();
      link.Run();
      ExpectNoErrors(link);
      ASSERT_EQ(requester->completed.size(), 1u);
      requester->completed.clear();
      wire::V2Header call = DecodeOrDie(requester->sends[first_send]);
      const uint32_t handle = call.chunks()->lists.writes.at(0).at(0).handle;
      EXPECT_EQ(call.chunks()->inv_handle, willing ? handle : 0u);
      EXPECT_EQ(responder->send_invalidates.at(reply_send),
                willing ? std::optional<uint32_t>(handle) : std::nullopt);
    }
  }
}

// A requester's rdma_inv_handle that names no handle of its call is not
// invalidated (a responder invalidates only what it was sent).
TEST_F(ResponderV2, V2Draft_6_2_3_ForeignHandleIsNotInvalidated) {
  Config c = ServerConfig();
  c.local.remote_invalidation = true;
  Make(c);
  Receive(ConnProp(0x77, 4096));
  wire::V2Header call{
      0x63, 2, kCredits,
      wire::V2Msg{{wire::MsgDirection::kCall,
                   0xBAD,
                   {{}, {{wire::Segment{0x1234, 4096, 0}}}, std::nullopt}}}};
  std::vector<uint8_t> bytes = wire::EncodeV2(call);
  const std::vector<uint8_t> rpc = CallStream(0x63, {1, 1, 0});
  bytes.insert(bytes.end(), rpc.begin(), rpc.end());
  std::vector<DeliverCall> delivered = Only<DeliverCall>(Receive(bytes));
  ASSERT_EQ(delivered.size(), 1u);
  ASSERT_TRUE(engine_
                  ->Reply(delivered[0].call,
                          OutgoingReply{Words({0x63, 1, 0, 0, 0, 0}), {}}, out_)
                  .ok());
  std::vector<Send> sends = Sends(Take());
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_FALSE(sends[0].invalidate.has_value());
}

// §6.2.4: a call larger than the responder accepts has no code of its
// own; RDMA2_ERR_SYSTEM, and the caller sees INTERNAL naming it.
TEST(VersionTwoLoopback, V2Draft_6_2_4_CallOverMaxCallSizeIsSystem) {
  Config server = ServerConfig();
  server.max_call_size = 4096;
  Loopback link(ClientConfig(), server);
  link.Connect();
  std::vector<uint8_t> stream = CallStream(0x71, {1, 1, 0});
  stream.resize(9000, 1);
  ASSERT_TRUE(link.a.Call(OutgoingCall{stream, {}, {}, 64}).ok());
  link.Run();
  ExpectNoErrors(link);
  EXPECT_TRUE(link.b.delivered.empty());
  ASSERT_EQ(link.a.failed.size(), 1u);
  EXPECT_EQ(link.a.failed[0].status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(link.a.failed[0].status.message().find("RDMA2_ERR_SYSTEM"),
            std::string::npos)
      << link.a.failed[0].status;
}

// §6.2.4 on the requester: each error names its code and arm.
TEST(VersionTwoRequester, V2Draft_6_2_4_ReceivedErrorFailsTheCallByName) {
  FakeExposer exposer;
  Engine engine(ClientConfig(), &exposer);
  Actions out;
  engine.OnConnected({{}, 4, 0x99}, out);
  ASSERT_TRUE(
      engine
          .StartCall(OutgoingCall{CallStream(0x31, {1, 1, 0}), {}, {}, 64}, out)
          .ok());
  engine.OnReceive(ConnProp(0x99, 4096), std::nullopt, out);
  ASSERT_EQ(engine.version(), 2u);
  out.clear();
  wire::V2Error e;
  e.code = wire::V2ErrorCode::kReadChunks;
  e.max_chunks = 2;
  engine.OnReceive(wire::EncodeV2(wire::V2Header{0x31, 2, kCredits, e}),
                   std::nullopt, out);
  std::vector<FailCall> failed = Only<FailCall>(out);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(failed[0].status.message().find("RDMA2_ERR_READ_CHUNKS"),
            std::string::npos)
      << failed[0].status;
  EXPECT_NE(failed[0].status.message().find("at most 2 read chunks"),
            std::string::npos)
      << failed[0].status;
  EXPECT_EQ(engine.calls_outstanding(), 0u);
}

}  // namespace
}  // namespace rpcrdma::engine
