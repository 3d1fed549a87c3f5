// Transport properties of version two on a live connection
// (draft-cel-nfsv4-rpcrdma-version-two-04 §5): this side's receive buffer
// size raised with RDMA2_UPDPROP (§5.3.4, §5.2.1), requests that lower the
// peer's (§5.2.1), what RDMA2_CONNPROP lets change (§5.3.1), answers
// (§5.3.3) and experimental properties carried for the owner (§5.4.2).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v2.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/version_two_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::DecodeV2OrDie;
using test::ExpectNoLinkErrors;
using test::FakeExposer;
using test::kV2Credits;
using test::Loopback;
using test::Only;
using test::SentProcs;
using test::V2ClientConfig;
using test::V2ServerConfig;
using test::Words;

constexpr uint32_t kClientProp = wire::kFirstExperimentalPropId + 1;
constexpr uint32_t kServerProp = wire::kFirstExperimentalPropId + 2;
constexpr uint32_t kForeignProp = wire::kFirstExperimentalPropId + 3;

wire::PropVal Rbsiz(uint32_t octets) { return wire::MakeRbsizProperty(octets); }

// A client engine in version two: connected, the server's RDMA2_CONNPROP
// (`server_props`) received.
struct Client {
  explicit Client(Config config, wire::PropSet server_props = {Rbsiz(4096)})
      : engine(config, &exposer) {
    engine.OnConnected({{}, 4, 0x99}, out);
    posted = Only<PostReceives>(out);
    engine.OnReceive(wire::EncodeV2(wire::V2Header{
                         0x99, 2, kV2Credits,
                         wire::V2ConnProp{std::move(server_props), {}}}),
                     std::nullopt, out);
    EXPECT_EQ(engine.version(), 2u);
    out.clear();
  }
  Actions Receive(const wire::V2Header& h) {
    engine.OnReceive(wire::EncodeV2(h), std::nullopt, out);
    return std::exchange(out, {});
  }
  FakeExposer exposer;
  Engine engine;
  Actions out;
  std::vector<PostReceives> posted;
};

// §5.3.4 with §5.2.1: receives are posted at receive_grantable from the
// start, so the size rises at once as far as they hold, never beyond, and
// never downward without the peer's request. The update goes with an empty
// RDMA2_REQPROP whose answer shows the peer took it.
TEST(VersionTwoProperties,
     V2Draft_5_3_4_UpdateRaisesRbsizWithinPostedReceives) {
  Config c = V2ClientConfig();
  c.max_receive_size_granted = 16384;
  Client client(c);
  ASSERT_EQ(client.posted.size(), 1u);
  EXPECT_EQ(client.posted[0].buffer_size, 16384u);
  Engine& e = client.engine;
  Actions& out = client.out;
  EXPECT_EQ(e.UpdateProperties({Rbsiz(2048)}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);  // lowered on request only
  EXPECT_EQ(e.UpdateProperties({Rbsiz(32768)}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);  // beyond the receives
  EXPECT_EQ(
      e.UpdateProperties(
           {wire::MakeBrsProperty(wire::BackwardRequestSupport::kInline)}, out)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(e.thresholds().receive, 4096u);

  absl::StatusOr<uint32_t> xid = e.UpdateProperties({Rbsiz(16384)}, out);
  ASSERT_TRUE(xid.ok()) << xid.status();
  std::vector<Send> sends = Only<Send>(std::exchange(out, {}));
  ASSERT_EQ(sends.size(), 2u);
  const wire::V2Header update = DecodeV2OrDie(sends[0].bytes);
  ASSERT_EQ(update.proc(), wire::V2Proc::kUpdProp);
  EXPECT_EQ(std::get<wire::V2UpdProp>(update.body).now,
            (wire::PropSet{Rbsiz(16384)}));
  const wire::V2Header fence = DecodeV2OrDie(sends[1].bytes);
  EXPECT_EQ(fence.xid, *xid);
  EXPECT_EQ(fence, (wire::V2Header{*xid, 2, kV2Credits, wire::V2ReqProp{}}));
  // Replies up to the new size come inline: no reply chunk for them.
  EXPECT_EQ(e.thresholds().receive, 16384u);
  EXPECT_GT(e.max_inline_reply(), 16000u);
  EXPECT_EQ(e.version_two().local_rbsiz, 16384u);

  std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(
      client.Receive({*xid, 2, kV2Credits, wire::V2ResProp{}}));
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_TRUE(answered[0].status.ok()) << answered[0].status;
  EXPECT_TRUE(answered[0].accepted.empty());
}

// §5.3.4 end to end: before the update a 10000-octet reply needs a reply
// chunk (a long reply); after it the server sends it inline.
TEST(VersionTwoProperties, V2Draft_5_3_4_AfterTheUpdateALargerReplyIsInline) {
  Config client = V2ClientConfig();
  client.max_receive_size_granted = 16384;
  Loopback link(client, V2ServerConfig(4096, 16384));
  link.Connect();
  EXPECT_EQ(link.b.engine.thresholds().send, 4096u);
  std::vector<uint8_t> reply = Words({0, 1, 0, 0, 0, 0});
  reply.resize(10000, 0x5A);
  for (uint32_t xid : {0x41u, 0x42u}) {
    SCOPED_TRACE(xid);
    if (xid == 0x42) {
      auto update = link.a.Do([&](Actions& out) {
        return link.a.engine.UpdateProperties({Rbsiz(16384)}, out);
      });
      ASSERT_TRUE(update.ok()) << update.status();
      link.Run();
      ASSERT_EQ(link.a.properties_answered.size(), 1u);
      EXPECT_EQ(link.a.properties_answered[0].xid, *update);
      EXPECT_EQ(link.b.engine.thresholds().send, 16384u);
      EXPECT_EQ(link.b.engine.version_two().peer_rbsiz, 16384u);
    }
    const size_t first = link.a.sends.size();
    ASSERT_TRUE(
        link.a.Call(OutgoingCall{CallStream(xid, {1, 1, 0}), {}, {}, 10000})
            .ok());
    link.Run();
    ASSERT_EQ(link.b.delivered.size(), 1u);
    const bool chunk =
        DecodeV2OrDie(link.a.sends[first]).chunks()->lists.reply.has_value();
    EXPECT_EQ(chunk, xid == 0x41);
    const std::vector<uint8_t> xid_word = Words({xid});
    std::copy(xid_word.begin(), xid_word.end(), reply.begin());
    const size_t reply_send = link.b.sends.size();
    ASSERT_TRUE(
        link.b.Answer(link.b.delivered[0].call, OutgoingReply{reply, {}}).ok());
    link.b.delivered.clear();
    link.Run();
    ExpectNoLinkErrors(link);
    ASSERT_EQ(link.a.completed.size(), 1u);
    EXPECT_EQ(link.a.completed[0].reply.size(), reply.size());
    link.a.completed.clear();
    EXPECT_EQ(DecodeV2OrDie(link.b.sends[reply_send]).proc(),
              xid == 0x41 ? wire::V2Proc::kNoMsg : wire::V2Proc::kMsg);
  }
}

// §5.3.4: rdma_now holds the new values; what it does not carry is
// unchanged (a zero-length value is the property's default, §5.1.1).
TEST(VersionTwoProperties, V2Draft_5_3_4_AnUpdateChangesOnlyWhatItCarries) {
  Config c = V2ClientConfig(4096, 16384);
  Client client(c, {Rbsiz(8192)});
  EXPECT_EQ(client.engine.thresholds().send, 8192u);
  const wire::PropVal exp{kServerProp, {1, 2, 3, 4}};
  client.Receive({0x51, 2, kV2Credits, wire::V2UpdProp{{exp}}});
  EXPECT_EQ(client.engine.thresholds().send, 8192u);
  EXPECT_EQ(client.engine.version_two().peer_experimental, wire::PropSet{exp});
  client.Receive({0x52, 2, kV2Credits,
                  wire::V2UpdProp{{wire::PropVal{wire::kPropIdRbsiz, {}}}}});
  EXPECT_EQ(client.engine.thresholds().send, wire::kDefaultRbsiz);
}

// §5.2.1: a side that asks for a lower receive buffer size sends no more
// than it from the request on, until it is rejected; granted, it stays.
TEST(VersionTwoProperties, V2Draft_5_2_1_ALowerSizeBoundsSendsUntilAnswered) {
  Client client(V2ClientConfig(4096, 8192), {Rbsiz(8192)});
  Engine& e = client.engine;
  EXPECT_EQ(e.thresholds().send, 8192u);
  for (bool granted : {false, true}) {
    SCOPED_TRACE(granted);
    absl::StatusOr<uint32_t> xid =
        e.RequestProperties({Rbsiz(2048)}, client.out);
    ASSERT_TRUE(xid.ok()) << xid.status();
    EXPECT_EQ(e.thresholds().send, 2048u);
    wire::V2ResProp answer;
    wire::SubsetAdd(granted ? answer.done : answer.rejected, 0);
    std::vector<PropertiesAnswered> answered = Only<PropertiesAnswered>(
        client.Receive({*xid, 2, kV2Credits, std::move(answer)}));
    ASSERT_EQ(answered.size(), 1u);
    EXPECT_EQ(answered[0].accepted, std::vector<bool>{granted});
    EXPECT_EQ(e.thresholds().send, granted ? 2048u : 8192u);
  }
}

// §5.3.1: only properties the peer stated and did not mark in rdma_nochg
// may be requested; a client's BRS is fixed (marked in its rdma_nochg).
TEST(VersionTwoProperties, V2Draft_5_3_1_WhatThePeerFixedIsNotRequested) {
  Config client = V2ClientConfig();
  client.experimental_properties = {{kClientProp, {0, 0, 0, 1}}};
  Loopback link(client, V2ServerConfig());
  link.Connect();
  const wire::V2ConnProp opening =
      std::get<wire::V2ConnProp>(DecodeV2OrDie(link.a.sends[0]).body);
  EXPECT_EQ(opening.start.size(), 3u);  // RBSIZ, BRS, the experimental one
  EXPECT_EQ(opening.nochg, wire::PropSubset{0b10});
  auto request = [](test::Side& side, wire::PropSet want) {
    return side
        .Do([&](Actions& out) {
          return side.engine.RequestProperties(want, out);
        })
        .status()
        .code();
  };
  const wire::PropVal brs =
      wire::MakeBrsProperty(wire::BackwardRequestSupport::kGeneral);
  EXPECT_EQ(request(link.b, {brs}), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(request(link.a, {brs}), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(request(link.a, {{kServerProp, {}}}),
            absl::StatusCode::kFailedPrecondition);
  // The client's experimental property may be asked for; rejected here,
  // since the client's owner decides none.
  EXPECT_EQ(request(link.b, {{kClientProp, {0, 0, 0, 2}}}),
            absl::StatusCode::kOk);
  link.Run();
  ExpectNoLinkErrors(link);
  ASSERT_EQ(link.b.properties_answered.size(), 1u);
  EXPECT_EQ(link.b.properties_answered[0].accepted, std::vector<bool>{false});
  EXPECT_TRUE(link.a.properties_requested.empty());
}

// §5.4.2: experimental properties go in RDMA2_CONNPROP and reach the
// peer; a request to change one is the owner's to decide: as asked
// (done), another value (rdma_other) or not at all (rejected).
TEST(VersionTwoProperties, V2Draft_5_4_2_OwnerDecidesExperimentalRequests) {
  const std::vector<uint8_t> start{0, 0, 0, 1}, asked{0, 0, 0, 2},
      instead{0, 0, 0, 3};
  for (std::optional<std::vector<uint8_t>> decision :
       {std::optional(asked), std::optional(instead),
        std::optional<std::vector<uint8_t>>()}) {
    SCOPED_TRACE(decision ? static_cast<int>(decision->back()) : -1);
    Config client = V2ClientConfig();
    client.experimental_properties = {{kClientProp, {9}}};
    Config server = V2ServerConfig();
    server.experimental_properties = {{kServerProp, start}};
    server.decides_properties = true;
    Loopback link(client, server);
    link.Connect();
    EXPECT_EQ(link.a.engine.version_two().peer_experimental,
              (wire::PropSet{{kServerProp, start}}));
    EXPECT_EQ(link.b.engine.version_two().peer_experimental,
              (wire::PropSet{{kClientProp, {9}}}));
    auto xid = link.a.Do([&](Actions& out) {
      return link.a.engine.RequestProperties({{kServerProp, asked}}, out);
    });
    ASSERT_TRUE(xid.ok()) << xid.status();
    link.Run();
    ASSERT_EQ(link.b.properties_requested.size(), 1u);
    const PropertiesRequested& r = link.b.properties_requested[0];
    EXPECT_EQ(r.xid, *xid);
    ASSERT_EQ(r.wanted.size(), 1u);
    EXPECT_EQ(r.wanted[0].first, 0u);
    EXPECT_EQ(r.wanted[0].second, (wire::PropVal{kServerProp, asked}));
    EXPECT_TRUE(link.a.properties_answered.empty());  // not decided yet
    ASSERT_TRUE(link.b
                    .Do([&](Actions& out) {
                      return link.b.engine.DecideProperties(*xid, {decision},
                                                            out);
                    })
                    .ok());
    link.Run();
    ExpectNoLinkErrors(link);
    ASSERT_EQ(link.a.properties_answered.size(), 1u);
    const PropertiesAnswered& a = link.a.properties_answered[0];
    EXPECT_EQ(a.accepted, std::vector<bool>{decision == asked});
    const std::vector<uint8_t> now = decision.value_or(start);
    const wire::PropSet other = decision == instead
                                    ? wire::PropSet{{kServerProp, instead}}
                                    : wire::PropSet{};
    EXPECT_EQ(a.other, other);
    EXPECT_EQ(link.a.engine.version_two().peer_experimental,
              (wire::PropSet{{kServerProp, now}}));
    EXPECT_EQ(link.b.engine.version_two().local_experimental,
              (wire::PropSet{{kServerProp, now}}));
  }
}

// §5.3.3 with §5.2.1: an answer whose values would not fit the peer's
// receive buffers rejects the owner's changes; the engine's own decisions
// (here a receive buffer size granted) stand.
TEST(VersionTwoProperties, V2Draft_5_3_3_AnAnswerTooLargeRejectsTheOwners) {
  Config server = V2ServerConfig();
  server.experimental_properties = {{kServerProp, {1}}};
  server.decides_properties = true;
  Loopback link(V2ClientConfig(4096, 8192), server);
  link.Connect();
  auto xid = link.a.Do([&](Actions& out) {
    return link.a.engine.RequestProperties({Rbsiz(4096), {kServerProp, {2}}},
                                           out);
  });
  ASSERT_TRUE(xid.ok()) << xid.status();
  link.Run();
  ASSERT_EQ(link.b.properties_requested.size(), 1u);
  const absl::Status s = link.b.Do([&](Actions& out) {
    return link.b.engine.DecideProperties(*xid, {std::vector<uint8_t>(5000, 7)},
                                          out);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  link.Run();
  ExpectNoLinkErrors(link);
  ASSERT_EQ(link.a.properties_answered.size(), 1u);
  EXPECT_EQ(link.a.properties_answered[0].accepted,
            (std::vector<bool>{true, false}));
  EXPECT_EQ(link.b.engine.version_two().local_experimental,
            (wire::PropSet{{kServerProp, {1}}}));
}

// §5.3.3: a value in rdma_other for a requested property is a partial
// grant; one for a property not requested is ignored.
TEST(VersionTwoProperties, V2Draft_5_3_3_OtherIsAPartialGrantForeignIgnored) {
  Client client(V2ClientConfig(4096, 16384), {Rbsiz(4096)});
  absl::StatusOr<uint32_t> xid =
      client.engine.RequestProperties({Rbsiz(16384)}, client.out);
  ASSERT_TRUE(xid.ok()) << xid.status();
  std::vector<PropertiesAnswered> answered =
      Only<PropertiesAnswered>(client.Receive(
          {*xid, 2, kV2Credits,
           wire::V2ResProp{{}, {}, {Rbsiz(8192), {kForeignProp, {7}}}}}));
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].accepted, std::vector<bool>{false});
  EXPECT_EQ(answered[0].other, wire::PropSet{Rbsiz(8192)});
  EXPECT_EQ(client.engine.thresholds().send, 8192u);
  EXPECT_TRUE(client.engine.version_two().peer_experimental.empty());
}

// §5.3 / §6.2.4: a peer that does not support RDMA2_REQPROP answers it with
// an error; the request ends with that error, named.
TEST(VersionTwoProperties, V2Draft_5_3_AnErrorAnswersTheRequest) {
  Client client(V2ClientConfig(4096, 8192));
  absl::StatusOr<uint32_t> xid =
      client.engine.RequestProperties({Rbsiz(8192)}, client.out);
  ASSERT_TRUE(xid.ok()) << xid.status();
  wire::V2Error e;
  e.code = wire::V2ErrorCode::kInvalidOption;
  std::vector<PropertiesAnswered> answered =
      Only<PropertiesAnswered>(client.Receive({*xid, 2, kV2Credits, e}));
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_FALSE(answered[0].connection_lost);
  EXPECT_EQ(answered[0].status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(answered[0].status.message().find("RDMA2_ERR_INVALID_OPTION"),
            std::string::npos)
      << answered[0].status;
  EXPECT_EQ(client.engine.thresholds().send, 4096u);
}

// Outside version two there is nothing to request or update; before the
// version is settled, nothing yet.
TEST(VersionTwoProperties, V2Draft_5_3_VersionOneHasNoProperties) {
  FakeExposer exposer;
  Config c = V2ClientConfig();
  c.offered_version = 1;
  Engine e(c, &exposer);
  Actions out;
  e.OnConnected({{}, 4}, out);
  EXPECT_EQ(e.RequestProperties({Rbsiz(4096)}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.UpdateProperties({Rbsiz(4096)}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.StartOptional(0x100, {}, {}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // §7: while the version is being settled there is nothing to use yet.
  Engine negotiating(V2ClientConfig(), &exposer);
  negotiating.OnConnected({{}, 4, 0x99}, out);
  ASSERT_TRUE(negotiating.negotiating());
  EXPECT_EQ(negotiating.UpdateProperties({Rbsiz(4096)}, out).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace rpcrdma::engine
