// The RFC 8167 backchannel: a server engine issues backward calls to a
// client engine over the same connection, through the loopback model of a
// reliable connected queue pair (tests/engine/engine_test_util.h), which
// records a Send that finds no posted receive as "receiver not ready".
#include <algorithm>
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
using test::Loopback;
using test::Only;
using test::PrivateDataBytes;
using test::Words;

// The client: forward requester, serving `backchannel` backward calls.
Config ClientConfig(uint32_t credits, uint32_t backchannel) {
  Config c;
  c.responder = false;
  c.credits = credits;
  c.backchannel_credits = backchannel;
  return c;
}
// The server: forward responder, issuing at most `peer_backchannel`
// backward calls at once.
Config ServerConfig(uint32_t credits, uint32_t peer_backchannel) {
  Config c;
  c.requester = false;
  c.credits = credits;
  c.peer_backchannel_credits = peer_backchannel;
  return c;
}

// An accepted RPC reply: XID, REPLY, MSG_ACCEPTED, AUTH_NONE verifier,
// SUCCESS, then `result`.
std::vector<uint8_t> ReplyStream(uint32_t xid, uint32_t result) {
  return Words({xid, 1, 0, 0, 0, 0, result});
}

uint32_t Word(absl::Span<const uint8_t> bytes, size_t index) {
  return LoadBigEndian32(bytes.data() + 4 * index);
}

void ExpectNoErrors(const Loopback& link) {
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
}

TEST(EngineBackchannel, Rfc8167_3_2_ReceivesPostedForBothDirections) {
  Loopback link(ClientConfig(8, 2), ServerConfig(8, 3));
  link.Connect();
  // Client: forward replies plus backward calls; server: forward calls
  // plus replies to its backward calls.
  EXPECT_EQ(link.a.engine.receives_posted(), 10u);
  EXPECT_EQ(link.a.posted_receives, 10u);
  EXPECT_EQ(link.b.engine.receives_posted(), 11u);
  EXPECT_EQ(link.b.posted_receives, 11u);
  EXPECT_FALSE(link.a.engine.issues_backward_calls());
  EXPECT_TRUE(link.b.engine.issues_backward_calls());
  // Without a backchannel nothing changes.
  Loopback plain(ClientConfig(8, 0), ServerConfig(8, 0));
  plain.Connect();
  EXPECT_EQ(plain.a.posted_receives, 8u);
  EXPECT_EQ(plain.b.posted_receives, 8u);
  EXPECT_FALSE(plain.b.engine.issues_backward_calls());
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_4_1_InlineBackwardCallAndReply) {
  Loopback link(ClientConfig(8, 2), ServerConfig(8, 2));
  link.Connect();
  auto id = link.b.Call({CallStream(0x55, {9, 10}), {}, {}, 64});
  ASSERT_TRUE(id.ok()) << id.status();
  link.Run();
  // The backward call: inline RDMA_MSG requesting the backchannel limit.
  ASSERT_EQ(link.b.sends.size(), 1u);
  EXPECT_EQ(Word(link.b.sends[0], 0), 0x55u);  // rdma_xid
  EXPECT_EQ(Word(link.b.sends[0], 2), 2u);     // rdma_credit requested
  EXPECT_EQ(Word(link.b.sends[0], 3), 0u);     // RDMA_MSG
  ASSERT_EQ(link.a.delivered.size(), 1u);
  EXPECT_EQ(link.a.delivered[0].xid, 0x55u);
  EXPECT_EQ(link.a.delivered[0].message, CallStream(0x55, {9, 10}));
  EXPECT_EQ(link.b.engine.calls_outstanding(), 1u);

  ASSERT_TRUE(
      link.a.Answer(link.a.delivered[0].call, {ReplyStream(0x55, 0xabcd), {}})
          .ok());
  link.Run();
  // The backward reply grants the client's backchannel credits (§3.1).
  ASSERT_EQ(link.a.sends.size(), 1u);
  EXPECT_EQ(Word(link.a.sends[0], 2), 2u);
  EXPECT_EQ(Word(link.a.sends[0], 3), 0u);
  ASSERT_EQ(link.b.completed.size(), 1u);
  EXPECT_EQ(link.b.completed[0].call, *id);
  EXPECT_EQ(link.b.completed[0].xid, 0x55u);
  EXPECT_EQ(link.b.completed[0].reply, ReplyStream(0x55, 0xabcd));
  EXPECT_EQ(link.a.replies_sent.size(), 1u);
  EXPECT_EQ(link.b.engine.calls_outstanding(), 0u);
  EXPECT_EQ(link.b.engine.credit_grant(), 2u);
  EXPECT_EQ(link.a.posted_receives, 10u);
  EXPECT_EQ(link.b.posted_receives, 10u);
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_4_SameXidForwardAndBackwardNotConfused) {
  Loopback link(ClientConfig(4, 1), ServerConfig(4, 1));
  link.Connect();
  // Backward call XID 7, left unanswered for now.
  ASSERT_TRUE(link.b.Call({CallStream(7, {1}), {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.a.delivered.size(), 1u);
  // Forward call XID 7 too: an inline one, then a long one (RDMA_NOMSG,
  // position-zero read chunk), which must not pass for the reply to the
  // server's call.
  ASSERT_TRUE(link.a.Call({CallStream(7, {2}), {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  EXPECT_EQ(link.b.delivered[0].message, CallStream(7, {2}));
  EXPECT_EQ(link.b.engine.calls_outstanding(), 1u);
  EXPECT_EQ(link.b.completed.size(), 0u);
  ASSERT_TRUE(
      link.b.Answer(link.b.delivered[0].call, {ReplyStream(7, 22), {}}).ok());
  link.Run();
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.completed[0].reply, ReplyStream(7, 22));
  EXPECT_EQ(link.a.replies_sent.size(), 0u);  // backward call still open

  std::vector<uint8_t> long_call = CallStream(7, {3});
  long_call.resize(1200, 0x5a);
  ASSERT_TRUE(link.a.Call({long_call, {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.a.sends.size(), 2u);
  EXPECT_EQ(Word(link.a.sends[1], 3), 1u);  // RDMA_NOMSG
  ASSERT_EQ(link.b.delivered.size(), 2u);
  EXPECT_EQ(link.b.delivered[1].xid, 7u);
  EXPECT_EQ(link.b.delivered[1].message, long_call);
  EXPECT_EQ(link.b.engine.calls_outstanding(), 1u);
  EXPECT_EQ(link.b.completed.size(), 0u);
  EXPECT_EQ(link.b.failed.size(), 0u);

  // The client's backward reply completes the server's call, and the
  // server's forward reply the client's.
  ASSERT_TRUE(
      link.a.Answer(link.a.delivered[0].call, {ReplyStream(7, 11), {}}).ok());
  ASSERT_TRUE(
      link.b.Answer(link.b.delivered[1].call, {ReplyStream(7, 33), {}}).ok());
  link.Run();
  ASSERT_EQ(link.b.completed.size(), 1u);
  EXPECT_EQ(link.b.completed[0].reply, ReplyStream(7, 11));
  ASSERT_EQ(link.a.completed.size(), 2u);
  EXPECT_EQ(link.a.completed[1].reply, ReplyStream(7, 33));
  EXPECT_EQ(link.a.engine.calls_outstanding(), 0u);
  EXPECT_EQ(link.b.engine.calls_outstanding(), 0u);
  EXPECT_EQ(link.a.exposer.live(), 0u);
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_3_1_BackwardCreditLimitRespected) {
  // The client grants 4, but the upper layer told the server 2: the
  // server never exceeds 2, and starts with one until the first reply.
  Loopback link(ClientConfig(8, 4), ServerConfig(8, 2));
  link.Connect();
  Actions out;
  for (uint32_t xid = 100; xid < 105; ++xid) {
    ASSERT_TRUE(
        link.b.engine.StartCall({CallStream(xid, {}), {}, {}, 64}, out).ok());
  }
  link.b.Take(out);
  link.Run();
  EXPECT_EQ(link.a.delivered.size(), 1u);
  EXPECT_EQ(link.b.engine.calls_outstanding(), 1u);
  EXPECT_EQ(link.b.engine.calls_queued(), 4u);

  size_t answered = 0;
  size_t max_open = 0;
  while (answered < link.a.delivered.size()) {
    max_open = std::max(max_open, link.a.delivered.size() - answered);
    // Answer every open backward call, then let the server send more.
    size_t open_end = link.a.delivered.size();
    for (; answered < open_end; ++answered) {
      const DeliverCall& d = link.a.delivered[answered];
      ASSERT_TRUE(
          link.a.engine.Reply(d.call, {ReplyStream(d.xid, d.xid), {}}, out)
              .ok());
    }
    link.a.Take(out);
    link.Run();
    EXPECT_LE(link.b.engine.calls_outstanding(), 2u);
    EXPECT_EQ(link.b.engine.credit_grant(), 2u);  // clamped 4 -> 2
  }
  EXPECT_EQ(max_open, 2u);
  ASSERT_EQ(link.b.completed.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    uint32_t xid = 100 + static_cast<uint32_t>(i);
    EXPECT_EQ(link.b.completed[i].xid, xid);
    EXPECT_EQ(link.b.completed[i].reply, ReplyStream(xid, xid));
  }
  EXPECT_EQ(link.b.engine.calls_queued(), 0u);
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_5_NoBackchannelClientDropsBackwardCall) {
  // The server was told of a backchannel the client does not have: the
  // client drops the backward call, replaces the receive, sends nothing.
  Loopback link(ClientConfig(4, 0), ServerConfig(4, 1));
  link.Connect();
  EXPECT_EQ(link.a.posted_receives, 4u);
  Actions out;
  auto id = link.b.engine.StartCall({CallStream(9, {}), {}, {}, 64}, out);
  ASSERT_TRUE(id.ok());
  link.b.Take(out);
  link.Run();
  EXPECT_EQ(link.b.sends.size(), 1u);
  EXPECT_EQ(link.a.delivered.size(), 0u);
  EXPECT_EQ(link.a.sends.size(), 0u);
  EXPECT_EQ(link.a.posted_receives, 4u);
  // The server's upper layer times the call out.
  link.b.engine.Cancel(*id, absl::DeadlineExceededError("no backchannel"), out);
  link.b.Take(out);
  link.Run();
  ASSERT_EQ(link.b.failed.size(), 1u);
  EXPECT_EQ(link.b.failed[0].status.code(),
            absl::StatusCode::kDeadlineExceeded);
  // The forward direction is unaffected.
  ASSERT_TRUE(link.a.Call({CallStream(9, {}), {}, {}, 64}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  ASSERT_TRUE(
      link.b.Answer(link.b.delivered[0].call, {ReplyStream(9, 1), {}}).ok());
  link.Run();
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.completed[0].reply, ReplyStream(9, 1));
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_5_NoPeerBackchannelStartCallRefused) {
  FakeExposer exposer;
  Engine server(ServerConfig(4, 0), &exposer);
  Actions out;
  server.OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out);
  auto id = server.StartCall({CallStream(1, {}), {}, {}, 64}, out);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(Count<PostReceives>(out), 1u);
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 4u);
  EXPECT_EQ(Count<Send>(out), 0u);
}

TEST(EngineBackchannel, Rfc8167_3_1_ClientErrorRepliesGrantBackchannelCredits) {
  FakeExposer exposer;
  Engine client(ClientConfig(8, 3), &exposer);
  Actions out;
  client.OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out);
  ASSERT_EQ(Only<PostReceives>(out)[0].count, 11u);
  out.clear();
  // A backward call of RPC-over-RDMA version 2: ERR_VERS 1..1 (RFC 8166
  // §4.5.1) granting the backchannel credits, not the forward ones.
  client.OnReceive(
      Concat({Words({0x31, 2, 3, 0, 0, 0, 0}), CallStream(0x31, {})}),
      std::nullopt, out);
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({0x31, 1, 3, 4, 1, 1, 1}));
  ASSERT_EQ(Count<PostReceives>(out), 1u);
  EXPECT_EQ(Only<PostReceives>(out)[0].count, 1u);
  out.clear();
  // RDMA_MSGP backward call: ERR_CHUNK, again granting 3.
  client.OnReceive(Words({0x32, 1, 3, 2, 0, 0, 0, 0, 0}), std::nullopt, out);
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({0x32, 1, 3, 4, 2}));
}

TEST(EngineBackchannel, Rfc8167_3_2_ManyCallsBothWaysNeverFindNoReceive) {
  Loopback link(ClientConfig(2, 2), ServerConfig(2, 2));
  link.bursts = true;
  link.Connect();
  Actions out;
  for (uint32_t i = 0; i < 6; ++i) {
    // Same XIDs in both directions on purpose.
    ASSERT_TRUE(link.a.Call({CallStream(i, {i}), {}, {}, 64}).ok());
    ASSERT_TRUE(link.b.Call({CallStream(i, {i + 100}), {}, {}, 64}).ok());
  }
  link.Run();
  size_t a_answered = 0;
  size_t b_answered = 0;
  for (int round = 0; round < 20; ++round) {
    // Both sides answer everything open in one batch before the link runs,
    // so the forward and backward messages cross.
    for (; a_answered < link.a.delivered.size(); ++a_answered) {
      const DeliverCall& d = link.a.delivered[a_answered];
      ASSERT_EQ(Word(d.message, 3), d.xid + 100);
      ASSERT_TRUE(link.a.engine
                      .Reply(d.call, {ReplyStream(d.xid, d.xid + 100), {}}, out)
                      .ok());
    }
    link.a.Take(out);
    for (; b_answered < link.b.delivered.size(); ++b_answered) {
      const DeliverCall& d = link.b.delivered[b_answered];
      ASSERT_EQ(Word(d.message, 3), d.xid);
      ASSERT_TRUE(
          link.b.engine.Reply(d.call, {ReplyStream(d.xid, d.xid), {}}, out)
              .ok());
    }
    link.b.Take(out);
    link.Run();
    EXPECT_LE(link.a.engine.calls_outstanding(), 2u);
    EXPECT_LE(link.b.engine.calls_outstanding(), 2u);
  }
  ExpectNoErrors(link);
  ASSERT_EQ(link.a.completed.size(), 6u);
  ASSERT_EQ(link.b.completed.size(), 6u);
  for (const CompleteCall& c : link.a.completed) {
    EXPECT_EQ(c.reply, ReplyStream(c.xid, c.xid));
  }
  for (const CompleteCall& c : link.b.completed) {
    EXPECT_EQ(c.reply, ReplyStream(c.xid, c.xid + 100));
  }
  EXPECT_EQ(link.a.posted_receives, 4u);
  EXPECT_EQ(link.b.posted_receives, 4u);
  ExpectNoErrors(link);
}

TEST(EngineBackchannel, Rfc8167_4_3_BackwardChunksBothWays) {
  Loopback link(ClientConfig(4, 1), ServerConfig(4, 1));
  link.Connect();
  // A backward call whose argument goes in a read chunk and whose result
  // comes back through a write chunk.
  std::vector<uint8_t> reduced = CallStream(0x77, {3001});
  std::vector<uint8_t> argument(3001);
  for (size_t i = 0; i < argument.size(); ++i) {
    argument[i] = static_cast<uint8_t>(i * 13 + 1);
  }
  std::vector<uint8_t> result(2000, 0);
  Actions out;
  auto id = link.b.engine.StartCall(
      {reduced,
       {{static_cast<uint32_t>(reduced.size()), absl::MakeSpan(argument)}},
       {absl::MakeSpan(result)},
       64},
      out);
  ASSERT_TRUE(id.ok());
  link.b.Take(out);
  link.Run();
  ASSERT_EQ(link.a.delivered.size(), 1u);
  std::vector<uint8_t> full = reduced;
  full.insert(full.end(), argument.begin(), argument.end());
  full.insert(full.end(), 3, uint8_t{0});  // XDR roundup of 3001
  EXPECT_EQ(link.a.delivered[0].message, full);
  EXPECT_EQ(link.a.delivered[0].write_chunk_capacities,
            std::vector<uint64_t>{2000});

  std::vector<uint8_t> data(1500);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<uint8_t>(i * 5 + 2);
  }
  std::vector<uint8_t> reply = Words({0x77, 1, 0, 0, 0, 0, 1500});
  ASSERT_TRUE(link.a
                  .Answer(link.a.delivered[0].call,
                          {reply,
                           {{static_cast<uint32_t>(reply.size()),
                             absl::MakeSpan(data)}}})
                  .ok());
  link.Run();
  ASSERT_EQ(link.b.completed.size(), 1u);
  EXPECT_EQ(link.b.completed[0].reply, reply);
  EXPECT_EQ(link.b.completed[0].result_lengths, std::vector<uint32_t>{1500});
  EXPECT_TRUE(std::equal(data.begin(), data.end(), result.begin()));
  EXPECT_EQ(link.b.exposer.live(), 0u);
  ExpectNoErrors(link);
}

}  // namespace
}  // namespace rpcrdma::engine
