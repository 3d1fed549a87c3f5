// Optional messages of version two (draft-cel-nfsv4-rpcrdma-version-two-04
// §4.1, §6.2.2) in both roles, and the window that keeps every message
// without RPC within the receives the peer posts for them (version_two.h).
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v2.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/version_two_util.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::DecodeV2OrDie;
using test::ExpectNoLinkErrors;
using test::kV2Credits;
using test::Loopback;
using test::Only;
using test::Side;
using test::V2ClientConfig;
using test::V2ServerConfig;

constexpr uint32_t kType = 0x4F505431;  // "OPT1"

struct Link {
  explicit Link(bool serve = true) : link(Client(serve), Server(serve)) {
    link.Connect();
  }
  static Config Client(bool serve) {
    Config c = V2ClientConfig();
    if (serve) c.optional_types = {kType};
    return c;
  }
  static Config Server(bool serve) {
    Config c = V2ServerConfig();
    if (serve) c.optional_types = {kType};
    return c;
  }
  absl::StatusOr<uint32_t> Start(Side& side, std::vector<uint8_t> info,
                                 std::vector<uint8_t> payload = {},
                                 uint32_t type = kType) {
    return side.Do([&](Actions& out) {
      return side.engine.StartOptional(type, std::move(info),
                                       std::move(payload), out);
    });
  }
  Loopback link;
};

// §4.1 with §6.2.2: an optional message goes as RDMA2_OPTIONAL with
// rdma_optdir CALL; the peer's handler answers it with rdma_optdir REPLY
// and the same XID and type; rdma_optinfo and the payload after the header
// (§6.2.1) arrive as sent. Client to server and server to client.
TEST(VersionTwoOptional, V2Draft_4_1_OptionalMessageAnsweredByTheHandler) {
  for (bool from_client : {true, false}) {
    SCOPED_TRACE(from_client);
    Link l;
    Side& asker = from_client ? l.link.a : l.link.b;
    Side& answerer = from_client ? l.link.b : l.link.a;
    const size_t call_send = asker.sends.size();
    auto xid = l.Start(asker, {1, 2, 3}, {0xA, 0xB});
    ASSERT_TRUE(xid.ok()) << xid.status();
    l.link.Run();
    ASSERT_EQ(answerer.optionals.size(), 1u);
    const DeliverOptional& d = answerer.optionals[0];
    EXPECT_EQ(d.xid, *xid);
    EXPECT_EQ(d.type, kType);
    EXPECT_EQ(d.info, (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(d.payload, (std::vector<uint8_t>{0xA, 0xB}));
    const wire::V2Header call = DecodeV2OrDie(asker.sends[call_send]);
    EXPECT_EQ(call.xid, *xid);
    EXPECT_EQ(std::get<wire::V2Optional>(call.body).optdir,
              wire::MsgDirection::kCall);

    const size_t answer_send = answerer.sends.size();
    ASSERT_TRUE(answerer
                    .Do([&](Actions& out) {
                      return answerer.engine.AnswerOptional(
                          *xid, DeliverOptional{0, 0, {4, 5}, {6, 7, 8, 9}},
                          out);
                    })
                    .ok());
    l.link.Run();
    ExpectNoLinkErrors(l.link);
    ASSERT_EQ(asker.optional_answers.size(), 1u);
    const OptionalAnswered& a = asker.optional_answers[0];
    EXPECT_EQ(a.xid, *xid);
    EXPECT_TRUE(a.status.ok()) << a.status;
    EXPECT_EQ(a.info, (std::vector<uint8_t>{4, 5}));
    EXPECT_EQ(a.payload, (std::vector<uint8_t>{6, 7, 8, 9}));
    const wire::V2Header answer = DecodeV2OrDie(answerer.sends[answer_send]);
    EXPECT_EQ(answer.xid, *xid);
    const auto& opt = std::get<wire::V2Optional>(answer.body);
    EXPECT_EQ(opt.optdir, wire::MsgDirection::kReply);
    EXPECT_EQ(opt.opttype, kType);
    // Answered once: a second answer finds nothing.
    Actions none;
    EXPECT_EQ(
        answerer.engine.AnswerOptional(*xid, DeliverOptional{}, none).code(),
        absl::StatusCode::kNotFound);
  }
}

// §4.1: a type the peer does not serve is answered
// RDMA2_ERR_INVALID_OPTION; the sender sees UNIMPLEMENTED naming it.
TEST(VersionTwoOptional, V2Draft_4_1_UnservedTypeIsInvalidOption) {
  for (bool from_client : {true, false}) {
    SCOPED_TRACE(from_client);
    Link l(/*serve=*/false);
    Side& asker = from_client ? l.link.a : l.link.b;
    Side& answerer = from_client ? l.link.b : l.link.a;
    auto xid = l.Start(asker, {});
    ASSERT_TRUE(xid.ok()) << xid.status();
    l.link.Run();
    ExpectNoLinkErrors(l.link);
    EXPECT_TRUE(answerer.optionals.empty());
    ASSERT_EQ(asker.optional_answers.size(), 1u);
    const absl::Status& s = asker.optional_answers[0].status;
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("RDMA2_ERR_INVALID_OPTION"), std::string::npos)
        << s;
  }
}

// §6.2.4: a handler that fails is RDMA2_ERR_SYSTEM to the sender.
TEST(VersionTwoOptional, V2Draft_6_2_4_HandlerFailureIsSystem) {
  Link l;
  auto xid = l.Start(l.link.a, {});
  ASSERT_TRUE(xid.ok());
  l.link.Run();
  ASSERT_EQ(l.link.b.optionals.size(), 1u);
  ASSERT_TRUE(l.link.b
                  .Do([&](Actions& out) {
                    return l.link.b.engine.AnswerOptional(
                        *xid, absl::InternalError("handler failed"), out);
                  })
                  .ok());
  l.link.Run();
  ASSERT_EQ(l.link.a.optional_answers.size(), 1u);
  const absl::Status& s = l.link.a.optional_answers[0].status;
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("RDMA2_ERR_SYSTEM"), std::string::npos) << s;
}

// §6.2.2 with §6.2.4: an RDMA2_OPTIONAL with rdma_optdir REPLY answers
// something; one that answers nothing of this side's is dropped, never
// answered with an error (errors do not flow from requester to responder).
TEST(VersionTwoOptional, V2Draft_6_2_2_AStrayReplyIsNotAnswered) {
  Link l(/*serve=*/false);
  Actions out;
  l.link.b.engine.OnReceive(
      wire::EncodeV2(wire::V2Header{
          0x77, 2, kV2Credits,
          wire::V2Optional{wire::MsgDirection::kReply, 0x1234, {}}}),
      std::nullopt, out);
  EXPECT_TRUE(Only<Send>(out).empty());
}

// Table 2 of §5.3 numbers the property operations as optional types 1..4
// (§6.2 makes them procedures): they are no user's optional types.
TEST(VersionTwoOptional, V2Draft_5_3_TableTwoTypesAreNotOptionalTypes) {
  Config server = V2ServerConfig();
  server.optional_types = {3};
  Loopback link(V2ClientConfig(), server);
  link.Connect();
  Link helper;
  EXPECT_EQ(helper.Start(helper.link.a, {}, {}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  Actions out;
  link.b.engine.OnReceive(
      wire::EncodeV2(
          wire::V2Header{0x78, 2, kV2Credits,
                         wire::V2Optional{wire::MsgDirection::kCall, 3, {}}}),
      std::nullopt, out);
  std::vector<Send> sends = Only<Send>(out);
  ASSERT_EQ(sends.size(), 1u);
  const wire::V2Header e = DecodeV2OrDie(sends[0].bytes);
  ASSERT_EQ(e.proc(), wire::V2Proc::kError);
  EXPECT_EQ(std::get<wire::V2Error>(e.body).code,
            wire::V2ErrorCode::kInvalidOption);
  EXPECT_TRUE(Only<DeliverOptional>(out).empty());
}

// Optional messages travel inline: one larger than the peer's receive
// buffer size is refused before anything is sent.
TEST(VersionTwoOptional, V2Draft_5_2_1_AnOptionalMessageMustFitInline) {
  Link l;
  auto big = l.Start(l.link.a, {}, std::vector<uint8_t>(5000));
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted)
      << big.status();
  EXPECT_TRUE(l.link.a.pending.empty());
}

// version_two.h: with every credit held by calls, and the peer processing
// its receives late (bursts), optional messages, an update and a request
// stay within the receives posted for them: kControlWindow await their
// answer, the others wait, and nothing overruns the peer.
TEST(VersionTwoOptional, V2Draft_MessagesWithoutRpcStayWithinTheirReceives) {
  Config client = Link::Client(true);
  client.max_receive_size_granted = 8192;
  Loopback link(client, Link::Server(true));
  link.Connect();
  link.bursts = true;  // from here on (the server posts before it accepts)
  // The first reply raises the grant from one to every credit.
  ASSERT_TRUE(
      link.a.Call(OutgoingCall{CallStream(0x10, {1, 1, 0}), {}, {}, 64}).ok());
  link.Run();
  ExpectNoLinkErrors(link);
  ASSERT_EQ(link.b.delivered.size(), 1u);
  ASSERT_TRUE(link.b
                  .Answer(link.b.delivered[0].call,
                          OutgoingReply{test::Words({0x10, 1, 0, 0, 0, 0}), {}})
                  .ok());
  link.b.delivered.clear();
  link.Run();
  for (uint32_t i = 0; i < kV2Credits; ++i) {
    ASSERT_TRUE(
        link.a.Call(OutgoingCall{CallStream(0x20 + i, {1, 1, 0}), {}, {}, 64})
            .ok());
  }
  Link helper;  // for Start()
  constexpr size_t kOptionals = 10;
  for (size_t i = 0; i < kOptionals; ++i) {
    ASSERT_TRUE(helper.Start(link.a, {static_cast<uint8_t>(i)}).ok());
  }
  ASSERT_TRUE(link.a
                  .Do([&](Actions& out) {
                    return link.a.engine.UpdateProperties(
                        {wire::MakeRbsizProperty(8192)}, out);
                  })
                  .ok());
  link.Run();
  ExpectNoLinkErrors(link);
  EXPECT_EQ(link.b.delivered.size(), kV2Credits);
  EXPECT_EQ(link.b.optionals.size(), kControlWindow);
  size_t answered = 0;
  while (!link.b.optionals.empty()) {
    std::vector<DeliverOptional> now = std::exchange(link.b.optionals, {});
    for (const DeliverOptional& d : now) {
      ASSERT_TRUE(link.b
                      .Do([&](Actions& out) {
                        return link.b.engine.AnswerOptional(
                            d.xid, DeliverOptional{0, 0, d.info, {}}, out);
                      })
                      .ok());
    }
    link.Run();
    ExpectNoLinkErrors(link);
    answered += now.size();
    EXPECT_LE(link.b.optionals.size(), kControlWindow);
  }
  EXPECT_EQ(answered, kOptionals);
  ASSERT_EQ(link.a.optional_answers.size(), kOptionals);
  for (size_t i = 0; i < kOptionals; ++i) {
    EXPECT_TRUE(link.a.optional_answers[i].status.ok());
    EXPECT_EQ(link.a.optional_answers[i].info,
              std::vector<uint8_t>{static_cast<uint8_t>(i)});
  }
  ASSERT_EQ(link.a.properties_answered.size(), 1u);
  EXPECT_EQ(link.b.engine.thresholds().send, 4096u);  // its own send size
  EXPECT_EQ(link.b.engine.version_two().peer_rbsiz, 8192u);
}

// The connection's loss ends every exchange, sent or waiting, with
// UNAVAILABLE.
TEST(VersionTwoOptional, V2Draft_4_1_LossEndsEveryExchange) {
  Link l;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(l.Start(l.link.a, {}).ok());
  Actions out;
  l.link.a.engine.OnDisconnected(out);
  std::vector<OptionalAnswered> ended = Only<OptionalAnswered>(out);
  ASSERT_EQ(ended.size(), 6u);
  for (const OptionalAnswered& a : ended) {
    EXPECT_EQ(a.status.code(), absl::StatusCode::kUnavailable) << a.status;
  }
}

// An optional message's XID is one no call of this side has in flight, so
// an RDMA2_ERROR names one or the other unambiguously.
TEST(VersionTwoOptional, V2Draft_6_2_2_ControlXidsAvoidCallXids) {
  Link l;
  ASSERT_TRUE(
      l.link.a.Call(OutgoingCall{CallStream(0x52455150, {1, 1, 0}), {}, {}, 64})
          .ok());
  auto xid = l.Start(l.link.a, {});
  ASSERT_TRUE(xid.ok());
  EXPECT_NE(*xid, 0x52455150u);
}

}  // namespace
}  // namespace rpcrdma::engine
