// End-to-end tests of rpcrdma::Channel and rpcrdma::Server over every
// transport (api_fixture.h): every transfer form of RFC 8166 with exact byte
// checks, counters and credits; the transports the tests run over, and
// Channel::Create's refusals.
#include <chrono>
#include <future>
#include <vector>

#include "gtest/gtest.h"
#include "tests/api/api_fixture.h"

namespace rpcrdma::test {
namespace {

TEST_P(ApiTest, Rfc8166_3_5_1_InlineCall) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x1001, kEcho);
  PutOpaque(req.xdr, Pattern(13, 5));
  req.max_reply_size = 256;
  std::vector<uint8_t> sent = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x1001);
  PutOpaque(expected, Pattern(13, 5));
  EXPECT_EQ(r->xdr, expected);
  EXPECT_TRUE(r->result_lengths.empty());
  EXPECT_EQ(Received(0x1001).message, sent);
  EXPECT_TRUE(Received(0x1001).write_chunk_capacities.empty());
  EXPECT_EQ(Received(0x1001).reply_chunk_capacity, 0u);

  Counters c = channel_->counters();
  EXPECT_EQ(c.calls, 1u);
  EXPECT_EQ(c.replies, 1u);
  EXPECT_EQ(c.inline_calls, 1u);
  EXPECT_EQ(c.read_chunk_calls, 0u);
  EXPECT_EQ(c.long_calls, 0u);
  EXPECT_EQ(c.long_replies, 0u);
  EXPECT_EQ(c.write_chunks, 0u);
  EXPECT_EQ(c.reply_chunks, 0u);
  EXPECT_EQ(c.remote_invalidations, 0u);
  EXPECT_EQ(c.errors_received, 0u);
  EXPECT_EQ(c.credits_granted, 32u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_4_5_DdpArgumentInReadChunk) {
  Start();
  std::vector<uint8_t> arg = Pattern(10001, 9);  // > 4096 inline threshold
  CallRequest req;
  req.xdr = CallHeader(0x2001, kNull);
  AppendWord(req.xdr, static_cast<uint32_t>(arg.size()));
  AppendWord(req.xdr, 0xABCD0123);  // an item after the DDP-eligible one
  req.arguments.push_back({kCallHeaderSize + 4, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0x2001));
  EXPECT_EQ(Received(0x2001).message,
            test::WithXdrItem(reduced, kCallHeaderSize + 4, arg));
  Counters c = channel_->counters();
  EXPECT_EQ(c.read_chunk_calls, 1u);
  EXPECT_EQ(c.read_chunks, 1u);
  EXPECT_EQ(c.inline_calls, 0u);
  EXPECT_EQ(c.long_calls, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_4_DdpArgumentSentInlineWhenItFits) {
  Start();
  std::vector<uint8_t> arg = Pattern(1001, 4);
  CallRequest req;
  req.xdr = CallHeader(0x2101, kNull);
  AppendWord(req.xdr, static_cast<uint32_t>(arg.size()));
  req.arguments.push_back({kCallHeaderSize + 4, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(Received(0x2101).message,
            test::WithXdrItem(reduced, kCallHeaderSize + 4, arg));
  EXPECT_EQ(channel_->counters().inline_calls, 1u);
  EXPECT_EQ(channel_->counters().read_chunk_calls, 0u);
}

TEST_P(ApiTest, Rfc8166_3_5_3_PositionZeroLongCall) {
  Start();
  // The reduced stream alone exceeds the 4096-octet inline threshold.
  std::vector<uint8_t> bulk = Pattern(6000, 2);
  std::vector<uint8_t> arg = Pattern(3001, 3);
  CallRequest req;
  req.xdr = CallHeader(0x3001, kNull);
  PutOpaque(req.xdr, bulk);
  AppendWord(req.xdr, static_cast<uint32_t>(arg.size()));
  uint32_t position = static_cast<uint32_t>(req.xdr.size());
  req.arguments.push_back({position, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0x3001));
  EXPECT_EQ(Received(0x3001).message,
            test::WithXdrItem(reduced, position, arg));
  Counters c = channel_->counters();
  EXPECT_EQ(c.long_calls, 1u);
  EXPECT_EQ(c.inline_calls, 0u);
  EXPECT_EQ(c.read_chunk_calls, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_4_7_WriteChunkLandsInCallerBuffer) {
  Start();
  std::vector<uint8_t> buffer(8192, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x4001, kDdpResult);
  AppendWord(req.xdr, 5003);
  AppendWord(req.xdr, 77);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 256;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x4001);
  AppendWord(expected, 5003);
  EXPECT_EQ(r->xdr, expected);
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{5003});
  std::vector<uint8_t> want = Pattern(5003, 77);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
  // Nothing beyond the result was written.
  for (size_t i = 5003; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], 0xEE) << i;
  }
  EXPECT_EQ(Received(0x4001).write_chunk_capacities,
            std::vector<uint64_t>{8192});
  Counters c = channel_->counters();
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.reply_chunks, 0u);
  EXPECT_EQ(c.long_replies, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_5_4_LongReplyThroughReplyChunk) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x5001, kBulk);
  AppendWord(req.xdr, 10003);
  AppendWord(req.xdr, 11);
  req.max_reply_size = 16384;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x5001);
  PutOpaque(expected, Pattern(10003, 11));
  EXPECT_EQ(r->xdr, expected);
  EXPECT_EQ(Received(0x5001).reply_chunk_capacity, 16384u);
  Counters c = channel_->counters();
  EXPECT_EQ(c.reply_chunks, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(c.inline_calls, 1u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_5_4_WriteListAndReplyChunkTogether) {
  Start();
  std::vector<uint8_t> buffer(7000, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x6001, kDdpAndBulk);
  AppendWord(req.xdr, 6001);
  AppendWord(req.xdr, 21);
  AppendWord(req.xdr, 9001);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 12000;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x6001);
  AppendWord(expected, 6001);
  PutOpaque(expected, Pattern(9001, 22));
  EXPECT_EQ(r->xdr, expected);
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{6001});
  std::vector<uint8_t> want = Pattern(6001, 21);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
  EXPECT_EQ(buffer[6001], 0xEE);
  Counters c = channel_->counters();
  std::printf("%s: channel counters: %s\n", GetParam().name.c_str(),
              PrintCounters(c).c_str());
  std::printf("%s: server counters:  %s\n", GetParam().name.c_str(),
              PrintCounters(server_->counters()).c_str());
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.reply_chunks, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

// A reply longer than the inline threshold with no reply chunk offered:
// the responder answers RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.2), which the
// requester reports as INVALID_ARGUMENT; the connection stays usable.
TEST_P(ApiTest, Rfc8166_4_5_2_ReplyTooLongForOfferedChunksIsErrChunk) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x5101, kBulk);
  AppendWord(req.xdr, 10003);
  AppendWord(req.xdr, 11);
  req.max_reply_size = 64;  // no reply chunk
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_EQ(channel_->counters().errors_received, 1u);
  EXPECT_EQ(channel_->counters().replies, 0u);
  EXPECT_EQ(server_->counters().errors_sent, 1u);
  CallRequest next;
  next.xdr = CallHeader(0x5102, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->xdr, ReplyHeader(0x5102));
}

// One write chunk of one segment: every handle of the call is the same, so
// the responder may use Send With Invalidate (RFC 8797 §4.1) when both
// sides set R.
void WriteChunkCall(Channel& channel, uint32_t xid) {
  std::vector<uint8_t> buffer(4096, 0);
  CallRequest req;
  req.xdr = CallHeader(xid, kDdpResult);
  AppendWord(req.xdr, 4000);
  AppendWord(req.xdr, 5);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 256;
  auto f = channel.Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  absl::StatusOr<Reply> r = f.get();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{4000});
  std::vector<uint8_t> want = Pattern(4000, 5);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOn) {
  Start();
  WriteChunkCall(*channel_, 0x7001);
  WriteChunkCall(*channel_, 0x7002);
  EXPECT_EQ(channel_->counters().remote_invalidations, 2u);
  EXPECT_EQ(server_->counters().remote_invalidations, 2u);
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOffAtRequester) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_remote_invalidation(false);
  Connect(client);
  WriteChunkCall(*channel_, 0x7101);
  WriteChunkCall(*channel_, 0x7102);
  EXPECT_EQ(channel_->counters().remote_invalidations, 0u);
  EXPECT_EQ(server_->counters().remote_invalidations, 0u);
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOffAtResponder) {
  config::TransportConfig server = Config();
  server.set_remote_invalidation(false);
  StartServer(server);
  Connect(Config());
  WriteChunkCall(*channel_, 0x7201);
  EXPECT_EQ(channel_->counters().remote_invalidations, 0u);
  EXPECT_EQ(server_->counters().remote_invalidations, 0u);
}

TEST_P(ApiTest, Rfc8166_3_3_1_ThousandCallsFromFourThreadsWithFourCredits) {
  Start(Config(4));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<uint8_t>> args(kPerThread);
      std::vector<std::vector<uint8_t>> results(kPerThread);
      std::vector<std::future<absl::StatusOr<Reply>>> futures;
      std::vector<uint32_t> xids;
      for (int i = 0; i < kPerThread; ++i) {
        uint32_t xid =
            0x10000u * static_cast<uint32_t>(t + 1) + static_cast<uint32_t>(i);
        CallRequest req;
        // A third carry a read chunk; every other one is answered later
        // from another thread.
        uint32_t proc = i % 2 == 0 ? kEcho : kEchoLater;
        req.xdr = CallHeader(xid, proc);
        args[static_cast<size_t>(i)] = Pattern(i % 3 == 0 ? 5000 : 40, xid);
        const std::vector<uint8_t>& arg = args[static_cast<size_t>(i)];
        AppendWord(req.xdr, static_cast<uint32_t>(arg.size()));
        req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
        req.max_reply_size = 8192;
        xids.push_back(xid);
        futures.push_back(channel_->Call(std::move(req)));
      }
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<Reply> r = Wait(futures[static_cast<size_t>(i)]);
        ASSERT_TRUE(r.ok()) << r.status();
        std::vector<uint8_t> expected =
            ReplyHeader(xids[static_cast<size_t>(i)]);
        PutOpaque(expected, args[static_cast<size_t>(i)]);
        ASSERT_EQ(r->xdr, expected) << "xid " << xids[static_cast<size_t>(i)];
        ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), kThreads * kPerThread);
  Counters c = channel_->counters();
  EXPECT_EQ(c.calls, 1000u);
  EXPECT_EQ(c.replies, 1000u);
  // 84 of each thread's 250 calls carry 5000 octets: read chunks.
  EXPECT_EQ(c.read_chunk_calls, 4u * 84u);
  EXPECT_EQ(c.inline_calls, 1000u - 4u * 84u);
  // Those replies echo 5000 octets: through the reply chunk.
  EXPECT_EQ(c.long_replies, 4u * 84u);
  EXPECT_EQ(c.credits_granted, 4u);
  // RFC 8166 §3.3.1: never more outstanding than granted, and the grant
  // was used.
  EXPECT_EQ(c.peak_calls_outstanding, 4u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_GE(max_in_flight_, 1);
  EXPECT_LE(max_in_flight_, 4);
}

#ifndef RPCRDMA_API_TEST_VERBS

INSTANTIATE_TEST_SUITE_P(
    Api, ApiTest,
    ::testing::Values(Transport{"SoftUnix", [] { return UniqueUri(); }},
                      Transport{"SoftTcp",
                                [] {
                                  return std::string("soft+tcp://127.0.0.1:0");
                                }}),
    TransportName);

TEST(ApiCreate, RejectsBadUris) {
  config::TransportConfig c;
  auto bad = Channel::Create("tcp://1.2.3.4:5", c);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "uri \"tcp://1.2.3.4:5\": unknown scheme (expected soft+unix://, "
            "soft+tcp:// or rdma://)");
  auto relative = Channel::Create("soft+unix://sock", c);
  EXPECT_EQ(relative.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_port = Server::Create("soft+tcp://127.0.0.1", c, nullptr);
  EXPECT_EQ(no_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_port.status().message(),
            "uri \"soft+tcp://127.0.0.1\": address \"127.0.0.1\": has no "
            "port (expected host:port)");
}

TEST(ApiCreate, RejectsFabricThatContradictsScheme) {
  config::TransportConfig c;
  c.set_fabric(config::TransportConfig::VERBS);
  auto r = Channel::Create("soft+unix://@x", c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "config: fabric: VERBS does not match the uri scheme (SOFT_UNIX)");
}

TEST(ApiCreate, RejectsInvalidConfig) {
  config::TransportConfig c;
  c.mutable_credits()->set_max_requests(0);
  auto r = Channel::Create("soft+unix://@x", c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("credits.max_requests"),
            std::string::npos)
      << r.status();
}

TEST(ApiCreate, NoListenerIsUnavailable) {
  config::TransportConfig c;
  auto r = Channel::Create(UniqueUri(), c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST(ApiCreate, SoftTcpRoundTrip) {
  config::TransportConfig c;
  auto server = Server::Create("soft+tcp://127.0.0.1:0", c,
                               [](IncomingCall call, Responder r) {
                                 EXPECT_TRUE(r.Send(Answer(call)).ok());
                               });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->uri().rfind("soft+tcp://127.0.0.1:", 0), 0u)
      << (*server)->uri();
  auto channel = Channel::Create((*server)->uri(), c);
  ASSERT_TRUE(channel.ok()) << channel.status();
  CallRequest req;
  req.xdr = CallHeader(0xE001, kEcho);
  AppendWord(req.xdr, 0x01020304);
  req.max_reply_size = 64;
  auto f = (*channel)->Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  absl::StatusOr<Reply> r = f.get();
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0xE001);
  AppendWord(expected, 0x01020304);
  EXPECT_EQ(r->xdr, expected);
  EXPECT_EQ((*server)->connections(), 1u);
}

#else  // RPCRDMA_API_TEST_VERBS

// rdma-cm cannot resolve a route to 127.0.0.1 over Soft-RoCE: server and
// client both use the device's address.
INSTANTIATE_TEST_SUITE_P(
    Api, ApiTest,
    ::testing::Values(Transport{
        "Rdma",
        [] { return absl::StrCat("rdma://", test::RdmaTestHost(), ":0"); }}),
    TransportName);

#endif  // RPCRDMA_API_TEST_VERBS

}  // namespace
}  // namespace rpcrdma::test

#ifdef RPCRDMA_API_TEST_VERBS
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Every test of this file passes on Soft-RoCE (rxe, Linux 6.1) as on
  // hardware: no test is left out for a device deviation.
  if (rpcrdma::test::ProbeVerbsDevice().empty()) return 1;
  ::testing::AddGlobalTestEnvironment(new rpcrdma::test::RdmaLeakCheck);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
#endif
