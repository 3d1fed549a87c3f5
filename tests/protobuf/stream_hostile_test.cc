// A hostile client of server streams (protobuf/README.md, "Streams"),
// written by hand on a raw rpcrdma::Channel: it opens streams and never
// reads them, opens more than a connection may hold, and asks for
// messages out of turn or of streams that are not there. The server must
// answer every call (each holds a credit, RFC 8166 §3.3.1), hold bounded
// memory, and drop the streams when the connection goes.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/raw_peer.h"

namespace rpcrdma::test {
namespace {

using protobuf::kDefaultMaxStreamsPerConnection;
using protobuf::kDefaultStreamBuffer;
using protobuf::kStreamCancelProcedure;
using protobuf::kStreamNextProcedure;
using protobuf::ServiceSetOptions;
using protobuf::StreamCounters;

using ::testing::HasSubstr;

constexpr uint32_t kWatch = 1;  // Ticker.Watch, method 0

CallRequest TickerCall(uint32_t xid, uint32_t procedure) {
  return RawServiceCall("rpcrdma_test.Ticker", xid, procedure);
}

// The reply's body after an accepted SUCCESS header, or why there is none.
absl::StatusOr<std::vector<uint8_t>> Body(absl::StatusOr<Reply> reply) {
  if (!reply.ok()) return reply.status();
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  if (!decoded.ok()) return decoded.status();
  if (absl::Status s = ReplyStatus(decoded->header); !s.ok()) return s;
  auto body = reply->xdr.span().subspan(decoded->body_offset);
  return std::vector<uint8_t>(body.begin(), body.end());
}

struct Opened {
  uint32_t code = ~0u;
  std::string message;
  uint64_t stream_id = 0;
};

// Opens a Watch stream of `count` messages: the call body as a unary
// call's, the reply's status, and the stream id when it is OK.
absl::StatusOr<Opened> OpenRaw(::rpcrdma::Channel& raw, uint32_t xid,
                               uint32_t count, uint32_t timeout_ms = 0) {
  CallRequest call = TickerCall(xid, kWatch);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint32("timeout", timeout_ms);
  (void)w.WriteUint32("metadata count", 0);
  rpcrdma_test::WatchRequest request;
  request.set_count(count);
  const std::string message = request.SerializeAsString();
  (void)w.WriteVarOpaque(
      "message",
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(message.data()),
                          message.size()));
  (void)w.WriteUint32("bulk count", 0);
  absl::StatusOr<std::vector<uint8_t>> body =
      Body(raw.BlockingCall(std::move(call)));
  if (!body.ok()) return body.status();
  XdrReader in(*body);
  Opened opened;
  uint32_t metadata = 0;
  if (absl::Status s = in.ReadUint32("code", &opened.code); !s.ok()) return s;
  if (absl::Status s = in.ReadString("message", 65536, &opened.message);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = in.ReadUint32("metadata", &metadata); !s.ok()) return s;
  if (opened.code == 0) {
    if (absl::Status s = in.ReadUint64("stream id", &opened.stream_id);
        !s.ok()) {
      return s;
    }
  }
  return opened;
}

struct Item {
  uint32_t kind = ~0u;  // 0: a message, 1: the end
  uint32_t code = ~0u;  // the end's
  std::string message;
};

absl::StatusOr<Item> NextRaw(::rpcrdma::Channel& raw, uint32_t xid,
                             uint64_t stream_id, uint64_t seq) {
  CallRequest call = TickerCall(xid, kStreamNextProcedure);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint64("stream id", stream_id);
  (void)w.WriteUint64("seq", seq);
  call.max_reply_size = 1 << 20;
  absl::StatusOr<std::vector<uint8_t>> body =
      Body(raw.BlockingCall(std::move(call)));
  if (!body.ok()) return body.status();
  XdrReader in(*body);
  Item item;
  if (absl::Status s = in.ReadUint32("kind", &item.kind); !s.ok()) return s;
  if (item.kind == 1) {
    if (absl::Status s = in.ReadUint32("code", &item.code); !s.ok()) return s;
    if (absl::Status s = in.ReadString("message", 65536, &item.message);
        !s.ok()) {
      return s;
    }
  }
  return item;
}

// Polls `done` for up to 30 s (the server acts on its own threads).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(StreamHostileTest,
     StreamsBeyondTheBoundAreResourceExhaustedAndUnreadOnesHoldBoundedMemory) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  TestServer& server = *peer.server;
  // Each stream would write a million messages; none is ever read.
  for (uint32_t i = 0; i < kDefaultMaxStreamsPerConnection; ++i) {
    absl::StatusOr<Opened> opened = OpenRaw(*peer.raw, 100 + i, 1000000);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_EQ(opened->code, 0u) << i << ": " << opened->message;
  }
  absl::StatusOr<Opened> refused = OpenRaw(*peer.raw, 200, 1000000);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->code,
            static_cast<uint32_t>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(refused->message, HasSubstr("max_streams_per_connection"));

  // Every writer fills its stream's buffer and stops there.
  constexpr int kHeld = kDefaultMaxStreamsPerConnection * kDefaultStreamBuffer;
  ASSERT_TRUE(Eventually([&] { return server.ticker.writes() >= kHeld; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(server.ticker.writes(), kHeld);
  StreamCounters counters = server.services.stream_counters();
  EXPECT_EQ(counters.open, kDefaultMaxStreamsPerConnection);
  EXPECT_EQ(counters.buffered, static_cast<size_t>(kHeld));
  EXPECT_LE(counters.peak_buffered, kDefaultStreamBuffer);
  EXPECT_EQ(counters.refused, 1u);

  // The connection goes: so does every stream, and every handler returns.
  peer.raw.reset();
  EXPECT_TRUE(
      Eventually([&] { return server.services.stream_counters().open == 0; }));
  EXPECT_TRUE(server.ticker.WaitForHandlersEnded(
      kDefaultMaxStreamsPerConnection, std::chrono::seconds(30)));
  EXPECT_EQ(server.ticker.handlers_cancelled(),
            static_cast<int>(kDefaultMaxStreamsPerConnection));
}

// Each stream has a thread: many connections together may not open more
// than the server's bound, however few each opens.
TEST(StreamHostileTest,
     StreamsBeyondTheServersBoundOverAllConnectionsAreRefused) {
  ServiceSetOptions options;
  options.max_streams = 3;
  std::unique_ptr<TestServer> server =
      StartTestServer(TestUri("unix"), options);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<::rpcrdma::Channel>> raws;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::unique_ptr<::rpcrdma::Channel>> raw =
        ::rpcrdma::Channel::Create(server->server->uri(), {});
    ASSERT_TRUE(raw.ok()) << raw.status();
    raws.push_back(*std::move(raw));
  }
  uint32_t xid = 300;
  for (int on : {0, 0, 1}) {
    absl::StatusOr<Opened> opened = OpenRaw(*raws[on], xid++, 1000000);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_EQ(opened->code, 0u) << opened->message;
  }
  absl::StatusOr<Opened> refused = OpenRaw(*raws[1], xid++, 1000000);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->code,
            static_cast<uint32_t>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(refused->message, HasSubstr("ServiceSetOptions::max_streams)"));
  // The first connection's two go with it: the second may open again.
  raws[0].reset();
  ASSERT_TRUE(
      Eventually([&] { return server->services.stream_counters().open == 1; }));
  absl::StatusOr<Opened> again = OpenRaw(*raws[1], xid++, 1000000);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->code, 0u) << again->message;
}

// A client that opens streams with a deadline and never reads them, on a
// connection it keeps: the server frees them at the deadline itself.
TEST(StreamHostileTest,
     UnreadStreamsEndAtTheirDeadlineWhileTheConnectionStays) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  for (uint32_t i = 0; i < 4; ++i) {
    absl::StatusOr<Opened> opened = OpenRaw(*peer.raw, 600 + i, 1000000, 200);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_EQ(opened->code, 0u) << opened->message;
  }
  EXPECT_TRUE(
      peer.server->ticker.WaitForHandlersEnded(4, std::chrono::seconds(30)));
  EXPECT_EQ(peer.server->ticker.handlers_cancelled(), 4);
  EXPECT_TRUE(Eventually(
      [&] { return peer.server->services.stream_counters().open == 0; }));
  EXPECT_TRUE(peer.raw->connected());
}

TEST(StreamHostileTest, NextOutOfTurnIsAnsweredAtOnceAndTheStreamGoesOn) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  absl::StatusOr<Opened> opened = OpenRaw(*peer.raw, 300, 3);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->code, 0u) << opened->message;
  const uint64_t id = opened->stream_id;

  // Far beyond the window a client may keep: refused, not held.
  absl::StatusOr<Item> ahead = NextRaw(*peer.raw, 301, id, 1000);
  ASSERT_TRUE(ahead.ok()) << ahead.status();
  EXPECT_EQ(ahead->kind, 1u);
  EXPECT_EQ(ahead->code,
            static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ahead->message, HasSubstr("may be asked for"));

  // A stream that is not there, or not this connection's.
  absl::StatusOr<Item> unknown = NextRaw(*peer.raw, 302, id + 12345, 0);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->kind, 1u);
  EXPECT_EQ(unknown->code,
            static_cast<uint32_t>(absl::StatusCode::kUnavailable));

  // The stream itself is untouched: its three messages, then its end.
  for (uint32_t seq = 0; seq < 3; ++seq) {
    absl::StatusOr<Item> item = NextRaw(*peer.raw, 310 + seq, id, seq);
    ASSERT_TRUE(item.ok()) << item.status();
    EXPECT_EQ(item->kind, 0u) << seq;
  }
  // A message asked for again once sent.
  absl::StatusOr<Item> again = NextRaw(*peer.raw, 320, id, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->code,
            static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<Item> end = NextRaw(*peer.raw, 321, id, 3);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->kind, 1u);
  EXPECT_EQ(end->code, 0u) << end->message;
  EXPECT_TRUE(Eventually(
      [&] { return peer.server->services.stream_counters().open == 0; }));
}

// A client's NEXT calls are served on several threads and may reach the
// stream in any order: the end, asked for before the messages ahead of it,
// must not take the stream's state (and those messages) with it.
TEST(StreamHostileTest, EndAskedForBeforeItsMessagesLeavesThemToBeAsked) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  absl::StatusOr<Opened> opened = OpenRaw(*peer.raw, 500, 3);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->code, 0u) << opened->message;
  const uint64_t id = opened->stream_id;
  // The handler wrote its three messages into the buffer and returned.
  ASSERT_TRUE(
      peer.server->ticker.WaitForHandlersEnded(1, std::chrono::seconds(30)));
  absl::StatusOr<Item> end = NextRaw(*peer.raw, 501, id, 3);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->kind, 1u);
  EXPECT_EQ(end->code, 0u) << end->message;
  for (uint32_t seq = 0; seq < 3; ++seq) {
    absl::StatusOr<Item> item = NextRaw(*peer.raw, 510 + seq, id, seq);
    ASSERT_TRUE(item.ok()) << item.status();
    EXPECT_EQ(item->kind, 0u) << seq << ": " << item->message;
  }
  EXPECT_TRUE(Eventually(
      [&] { return peer.server->services.stream_counters().open == 0; }));
}

// The same, by a client that never asks for the messages ahead of the end:
// the stream's state goes with its connection all the same.
TEST(StreamHostileTest, EndAskedForAloneIsFreedWithTheConnection) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  absl::StatusOr<Opened> opened = OpenRaw(*peer.raw, 700, 3);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->code, 0u) << opened->message;
  ASSERT_TRUE(
      peer.server->ticker.WaitForHandlersEnded(1, std::chrono::seconds(30)));
  absl::StatusOr<Item> end = NextRaw(*peer.raw, 701, opened->stream_id, 3);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->kind, 1u);
  EXPECT_EQ(peer.server->services.stream_counters().open, 1u);
  peer.raw.reset();
  EXPECT_TRUE(Eventually(
      [&] { return peer.server->services.stream_counters().open == 0; }));
}

TEST(StreamHostileTest, Rfc5531_9_MalformedNextIsGarbageArgs) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  for (uint32_t procedure : {kStreamNextProcedure, kStreamCancelProcedure}) {
    CallRequest call = TickerCall(400 + procedure % 2, procedure);
    XdrWriter w(&call.xdr);
    (void)w.WriteUint32("half a stream id", 7);
    absl::StatusOr<Reply> reply = peer.raw->BlockingCall(std::move(call));
    ASSERT_TRUE(reply.ok()) << reply.status();
    absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->header.accept_stat, AcceptStat::kGarbageArgs)
        << procedure;
  }
}

}  // namespace
}  // namespace rpcrdma::test
