// End-to-end tests of what a connection carries besides forward calls
// (api_fixture.h): the backchannel (RFC 8167), the values settled at
// connection set-up (RFC 8797), version negotiation and version two.
#include <chrono>
#include <future>
#include <vector>

#include "gtest/gtest.h"
#include "tests/api/api_fixture.h"

namespace rpcrdma::test {
namespace {

// ---- Backchannel (RFC 8167) -------------------------------------------------

TEST_P(ApiTest, Rfc8167_ServerCallsClientInline) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const ConnectionId connection = ServerSideConnection();
  CallRequest req;
  req.xdr = CallHeader(0xB001, kEcho);
  PutOpaque(req.xdr, Pattern(21, 3));
  req.max_reply_size = 256;
  std::vector<uint8_t> sent = req.xdr;
  auto f = server_->Call(connection, std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0xB001);
  PutOpaque(expected, Pattern(21, 3));
  EXPECT_EQ(r->xdr, expected);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(backward_received_.count(0xB001), 1u);
    EXPECT_EQ(backward_received_.at(0xB001).message, sent);
  }
  Counters server = server_->counters();
  Counters client = channel_->counters();
  EXPECT_EQ(server.backward_calls, 1u) << PrintCounters(server);
  EXPECT_EQ(server.backward_replies, 1u);
  EXPECT_EQ(client.backward_calls, 1u) << PrintCounters(client);
  EXPECT_EQ(client.backward_replies, 1u);
  // Backward traffic is not counted as forward calls.
  EXPECT_EQ(server.calls, 1u);
  EXPECT_EQ(client.calls, 1u);
}

// A backward call on a Channel names the Channel's connection as its log
// records and metrics do (rpcrdma/ids.h): its first connection is 1.
TEST_P(ApiTest, Rfc8167_BackwardCallNamesTheChannelsConnection) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  CallRequest req;
  req.xdr = CallHeader(0xB002, kNull);
  req.max_reply_size = 64;
  auto f = server_->Call(ServerSideConnection(), std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  const Metrics metrics = channel_->metrics();
  ASSERT_EQ(metrics.connections.size(), 1u);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(backward_received_.count(0xB002), 1u);
  EXPECT_EQ(backward_received_.at(0xB002).connection, ConnectionId(1));
  EXPECT_EQ(backward_received_.at(0xB002).connection,
            metrics.connections[0].connection);
}

// RFC 8167 §4.3: chunks in the backward direction; here a read chunk for a
// large argument and a write chunk for a DDP result.
TEST_P(ApiTest, Rfc8167_4_3_BackwardCallWithReadAndWriteChunks) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const ConnectionId connection = ServerSideConnection();

  std::vector<uint8_t> big = Pattern(9000, 7);
  CallRequest echo;
  echo.xdr = CallHeader(0xB101, kEcho);
  AppendWord(echo.xdr, static_cast<uint32_t>(big.size()));
  echo.arguments.push_back({static_cast<uint32_t>(echo.xdr.size()), big});
  echo.max_reply_size = 10000;
  auto f1 = server_->Call(connection, std::move(echo));
  absl::StatusOr<Reply> r1 = Wait(f1);
  ASSERT_TRUE(r1.ok()) << r1.status();
  std::vector<uint8_t> expected = ReplyHeader(0xB101);
  PutOpaque(expected, big);
  EXPECT_EQ(r1->xdr, expected);

  std::vector<uint8_t> result(6000, 0xEE);
  CallRequest ddp;
  ddp.xdr = CallHeader(0xB102, kDdpResult);
  AppendWord(ddp.xdr, 6000);
  AppendWord(ddp.xdr, 11);
  ddp.results.push_back(absl::MakeSpan(result));
  ddp.max_reply_size = 64;
  auto f2 = server_->Call(connection, std::move(ddp));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  ASSERT_EQ(r2->result_lengths, std::vector<uint32_t>{6000});
  EXPECT_EQ(result, Pattern(6000, 11));

  Counters server = server_->counters();
  EXPECT_EQ(server.backward_calls, 2u) << PrintCounters(server);
  EXPECT_EQ(server.backward_replies, 2u);
}

// RFC 8167 §3.1: the server never has more backward calls outstanding than
// the client's backchannel credits; the rest wait.
TEST_P(ApiTest, Rfc8167_3_1_BackwardCallsStayWithinBackchannelCredits) {
  config::TransportConfig config = Config();
  config.mutable_backchannel()->set_credits(2);
  StartServer(config);
  ConnectWithBackchannel(config);
  const ConnectionId connection = ServerSideConnection();
  // The first backward reply raises the grant from one to two.
  {
    CallRequest req;
    req.xdr = CallHeader(0xB200, kNull);
    req.max_reply_size = 64;
    auto f = server_->Call(connection, std::move(req));
    ASSERT_TRUE(Wait(f).ok());
  }
  std::vector<std::future<absl::StatusOr<Reply>>> futures;
  for (uint32_t i = 0; i < 5; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xB201 + i, kHold);
    req.max_reply_size = 64;
    futures.push_back(server_->Call(connection, std::move(req)));
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20),
                             [&] { return backward_held_.size() >= 2; }));
  }
  // Give a third call every chance to arrive: it must not.
  std::this_thread::sleep_for(milliseconds(200));
  std::vector<Responder> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(backward_held_.size(), 2u);
  }
  // Answer the held calls as they come until all five are done.
  size_t answered = 0;
  while (answered < 5) {
    std::vector<Responder> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20),
                               [&] { return !backward_held_.empty(); }));
      batch = std::move(backward_held_);
      backward_held_.clear();
    }
    for (Responder& r : batch) {
      HandlerReply reply;
      reply.xdr = ReplyHeader(0);  // the XID is the transport's concern
      EXPECT_TRUE(r.Send(std::move(reply)).ok());
      ++answered;
    }
  }
  for (auto& f : futures) EXPECT_TRUE(Wait(f).ok());
  EXPECT_EQ(server_->counters().peak_calls_outstanding, 2u);
  EXPECT_EQ(channel_->counters().backward_calls, 6u);
}

TEST_P(ApiTest,
       Rfc8167_BackwardCallsNeedAnEnabledBackchannelAndALiveConnection) {
  config::TransportConfig off = Config();
  off.mutable_backchannel()->set_enabled(false);
  off.mutable_backchannel()->clear_credits();
  StartServer(off);
  ConnectWithBackchannel(Config());
  const ConnectionId connection = ServerSideConnection();
  CallRequest req;
  req.xdr = CallHeader(0xB301, kNull);
  req.max_reply_size = 64;
  auto f = server_->Call(connection, req);
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition)
      << r.status();

  server_.reset();
  channel_.reset();
  StartServer(Config());
  ConnectWithBackchannel(Config());
  auto g =
      server_->Call(ConnectionId(ServerSideConnection().value() + 100), req);
  r = Wait(g);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

// A client without a backward handler drops backward calls (as the Linux
// client does without a backchannel service): the server's call ends at
// its deadline.
TEST_P(ApiTest, Rfc8167_ClientWithoutHandlerDropsBackwardCalls) {
  Start();
  const ConnectionId connection = ServerSideConnection();
  CallRequest req;
  req.xdr = CallHeader(0xB401, kNull);
  req.max_reply_size = 64;
  req.deadline = Clock::now() + milliseconds(300);
  auto f = server_->Call(connection, std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  // The forward direction is unharmed.
  EXPECT_EQ(ServerSideConnection(), connection);
}

// ---- Connection set-up: RFC 8797 and version negotiation --------------------

TEST_P(ApiTest, Rfc8797_4_2_ConnectionInfoReportsNegotiatedThresholds) {
  config::TransportConfig server = Config();
  server.mutable_inline_threshold()->set_send(8192);
  server.mutable_inline_threshold()->set_receive(2048);
  StartServer(server);
  Connect(Config());
  ConnectionInfo info = channel_->connection_info();
  EXPECT_TRUE(info.peer_private_data);
  EXPECT_EQ(info.peer_send_size, 8192u);
  EXPECT_EQ(info.peer_receive_size, 2048u);
  // Ours are 4096 each: send min(4096, 2048), receive min(4096, 8192).
  EXPECT_EQ(info.send_threshold, 2048u);
  EXPECT_EQ(info.receive_threshold, 4096u);
  EXPECT_EQ(info.offered_version, 1u);
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(info.peer_version_low, 0u);
}

// RFC 8166 §3.4: a chunk is cut into segments no longer than the
// connection's max_segment_size (the device's largest RDMA Read or Write),
// each taking a place in the transport header.
TEST_P(ApiTest, Rfc8166_3_4_ConnectionInfoReportsTheSegmentSize) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.mutable_limits()->set_max_header_segments(2);
  Connect(client);
  const uint32_t segment = channel_->connection_info().max_segment_size;
#ifndef RPCRDMA_API_TEST_VERBS
  EXPECT_EQ(segment, 1u << 30);  // the soft fabric moves up to 2 GiB
#else
  EXPECT_GT(segment, 0u);
#endif
  if (segment > (32u << 20)) return;  // too large to fill here
  // Two segments fit the header, three do not.
  for (size_t size : {size_t{segment} * 2, size_t{segment} * 2 + 1}) {
    std::vector<uint8_t> arg(size, 7);
    CallRequest req;
    req.xdr = CallHeader(static_cast<uint32_t>(0x5200 + size % 2), kEcho);
    AppendWord(req.xdr, static_cast<uint32_t>(size));
    req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
    req.max_reply_size = 64;
    auto f = channel_->Call(std::move(req));
    absl::Status status = Wait(f).status();
    if (size % 2 == 0) {
      EXPECT_NE(status.code(), absl::StatusCode::kResourceExhausted) << status;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    }
  }
}

TEST_P(ApiTest, Rfc8797_5_1_WithoutPrivateDataBothSidesUse1024) {
  config::TransportConfig off = Config();
  off.set_cm_private_data(false);
  StartServer(off);
  Connect(off);
  ConnectionInfo info = channel_->connection_info();
  EXPECT_FALSE(info.peer_private_data);
  EXPECT_EQ(info.send_threshold, 1024u);
  EXPECT_EQ(info.receive_threshold, 1024u);
  EXPECT_FALSE(info.remote_invalidation);
  // A call of 2000 octets no longer fits inline: a read chunk carries it.
  CallRequest req;
  std::vector<uint8_t> arg = Pattern(2000, 9);
  req.xdr = CallHeader(0x5101, kEcho);
  AppendWord(req.xdr, 2000);
  req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
  req.max_reply_size = 4096;
  auto f = channel_->Call(std::move(req));
  ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(channel_->counters().read_chunk_calls, 1u);
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §7.2: our version-one Server
// answers the version-two probe with ERR_VERS 1..1; the client falls back.
TEST_P(ApiTest, V2Draft_7_2_FallbackToVersionOneOnErrVers) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_version_policy(config::TransportConfig::V2_WITH_FALLBACK);
  Connect(client);
  ConnectionInfo info = channel_->connection_info();
  EXPECT_EQ(info.offered_version, 2u);
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(info.peer_version_low, 1u);
  EXPECT_EQ(info.peer_version_high, 1u);
  EXPECT_EQ(server_->counters().errors_sent, 1u);
  EXPECT_EQ(channel_->counters().errors_received, 1u);
  Prime();
  EXPECT_EQ(channel_->counters().credits_granted, 32u);
}

TEST_P(ApiTest, V2Draft_7_2_VersionTwoOnlyFailsAgainstVersionOnePeer) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_version_policy(config::TransportConfig::V2);
  auto channel = Channel::Create(server_->uri(), client);
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(channel.status().message()).find("versions 1 to 1"),
            std::string::npos)
      << channel.status();
}

config::TransportConfig Version(config::TransportConfig::VersionPolicy p) {
  config::TransportConfig c = Config();
  c.set_version_policy(p);
  return c;
}

// draft-cel-nfsv4-rpcrdma-version-two-04 end to end: a version-two Server
// answers the probe with its CONNPROP and every chunk form then travels in
// version two (§4.2), forward and backward (RFC 8167 semantics).
TEST_P(ApiTest, V2Draft_4_2_EveryChunkFormInVersionTwo) {
  StartServer(Version(config::TransportConfig::V2));
  ConnectWithBackchannel(Version(config::TransportConfig::V2));
  ConnectionInfo info = channel_->connection_info();
  EXPECT_EQ(info.version, 2u);
  EXPECT_EQ(info.send_threshold, 4096u);  // §2: the server's receives

  // A read chunk, a long call and a write chunk, each echoed back.
  std::vector<uint8_t> arg = Pattern(100000, 3);
  CallRequest read;
  read.xdr = CallHeader(0x7201, kEcho);
  AppendWord(read.xdr, static_cast<uint32_t>(arg.size()));
  read.arguments.push_back({static_cast<uint32_t>(read.xdr.size()), arg});
  read.max_reply_size = 200000;  // a reply chunk for the long reply
  auto f1 = channel_->Call(std::move(read));
  absl::StatusOr<Reply> r1 = Wait(f1);
  ASSERT_TRUE(r1.ok()) << r1.status();
  std::vector<uint8_t> expected = ReplyHeader(0x7201);
  PutOpaque(expected, arg);
  EXPECT_EQ(r1->xdr, expected);

  CallRequest long_call;
  long_call.xdr = CallHeader(0x7202, kNull);
  PutOpaque(long_call.xdr, Pattern(6000, 4));
  long_call.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(long_call));
  ASSERT_TRUE(Wait(f2).ok());

  std::vector<uint8_t> buffer(8192, 0xEE);
  CallRequest write;
  write.xdr = CallHeader(0x7203, kDdpResult);
  AppendWord(write.xdr, 5003);
  AppendWord(write.xdr, 77);
  write.results.push_back(absl::MakeSpan(buffer));
  write.max_reply_size = 256;
  auto f3 = channel_->Call(std::move(write));
  absl::StatusOr<Reply> r3 = Wait(f3);
  ASSERT_TRUE(r3.ok()) << r3.status();
  ASSERT_EQ(r3->result_lengths, std::vector<uint32_t>{5003});
  std::vector<uint8_t> want = Pattern(5003, 77);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));

  // A backward call with a read chunk, in version two.
  const ConnectionId connection = ServerSideConnection();
  std::vector<uint8_t> big = Pattern(9000, 7);
  CallRequest back;
  back.xdr = CallHeader(0x7204, kEcho);
  AppendWord(back.xdr, static_cast<uint32_t>(big.size()));
  back.arguments.push_back({static_cast<uint32_t>(back.xdr.size()), big});
  back.max_reply_size = 10000;
  auto f4 = server_->Call(connection, std::move(back));
  ASSERT_TRUE(Wait(f4).ok());

  Counters c = channel_->counters();
  EXPECT_EQ(c.read_chunk_calls, 1u) << PrintCounters(c);
  EXPECT_EQ(c.long_calls, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.errors_received, 0u);
  // §6.2.3: each call with chunks named a handle its responder invalidated:
  // the three forward replies received, the backward reply sent (§3.1).
  EXPECT_EQ(c.remote_invalidations, 4u);
  EXPECT_EQ(server_->counters().backward_calls, 1u);
}

// §7: one V2_WITH_FALLBACK Server serves a version-one and a version-two
// client at once, each in its own version.
TEST_P(ApiTest, V2Draft_7_VersionOneAndTwoClientsOnOneServer) {
  StartServer(Version(config::TransportConfig::V2_WITH_FALLBACK));
  auto v1 = Channel::Create(server_->uri(), Config());
  auto v2 =
      Channel::Create(server_->uri(), Version(config::TransportConfig::V2));
  ASSERT_TRUE(v1.ok()) << v1.status();
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ((*v1)->connection_info().version, 1u);
  EXPECT_EQ((*v2)->connection_info().version, 2u);
  for (auto* ch : {v1->get(), v2->get()}) {
    for (uint32_t i = 0; i < 20; ++i) {
      CallRequest req;
      req.xdr = CallHeader(0x7300 + i, kNull);
      req.max_reply_size = 64;
      auto f = ch->Call(std::move(req));
      ASSERT_TRUE(Wait(f).ok());
    }
  }
}

// §7.2: a version-two-only Server answers a version-one client's calls
// ERR_VERS 2..2, which the caller sees with the range.
TEST_P(ApiTest, V2Draft_7_2_VersionTwoServerRefusesVersionOneClient) {
  StartServer(Version(config::TransportConfig::V2));
  Connect(Config());
  CallRequest req;
  req.xdr = CallHeader(0x7401, kNull);
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(r.status().message()).find("versions 2 to 2"),
            std::string::npos)
      << r.status();
}

// §5.3: a Channel asks its Server for larger receive buffers on the live
// connection, under load; calls of 10000 octets go inline once granted,
// and none is lost. Beyond what the Server grants, the request is declined.
TEST_P(ApiTest, V2Draft_5_3_ReceiveBufferChangeOnALiveConnection) {
  config::TransportConfig server = Version(config::TransportConfig::V2);
  server.mutable_inline_threshold()->set_receive_grantable(16384);
  StartServer(server);
  config::TransportConfig client = Version(config::TransportConfig::V2);
  client.mutable_inline_threshold()->set_send(32768);
  Connect(client);
  Prime();
  ASSERT_EQ(channel_->connection_info().send_threshold, 4096u);

  auto call_10000 = [this](uint32_t xid) {
    CallRequest req;
    req.xdr = CallHeader(xid, kNull);
    PutOpaque(req.xdr, Pattern(10000, xid));
    req.max_reply_size = 64;
    return channel_->Call(std::move(req));
  };
  // Load while the request travels: every call must complete.
  std::vector<std::future<absl::StatusOr<Reply>>> load;
  for (uint32_t i = 0; i < 16; ++i) load.push_back(call_10000(0x7500 + i));
  EXPECT_TRUE(channel_->RequestPeerReceiveSize(16384).ok());
  for (uint32_t i = 16; i < 32; ++i) load.push_back(call_10000(0x7500 + i));
  for (auto& f : load) ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(channel_->connection_info().send_threshold, 16384u);

  const Counters before = channel_->counters();
  auto f = call_10000(0x7600);
  ASSERT_TRUE(Wait(f).ok());
  const Counters after = channel_->counters();
  EXPECT_EQ(after.inline_calls, before.inline_calls + 1);
  EXPECT_EQ(after.long_calls, before.long_calls);

  absl::Status declined = channel_->RequestPeerReceiveSize(32768);
  EXPECT_EQ(declined.code(), absl::StatusCode::kFailedPrecondition) << declined;
  EXPECT_EQ(channel_->connection_info().send_threshold, 16384u);
}

TEST_P(ApiTest, V2Draft_5_3_VersionOneHasNoPropertyChanges) {
  Start();
  absl::Status s = channel_->RequestPeerReceiveSize(16384);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// limits.max_call_size bounds what a responder reassembles (RFC 8166
// §4.5.2: ERR_CHUNK for chunks it cannot accept).
TEST_P(ApiTest, Rfc8166_4_5_2_CallOverMaxCallSizeIsErrChunk) {
  config::TransportConfig server = Config();
  server.mutable_limits()->set_max_call_size(4096);
  StartServer(server);
  Connect(Config());
  std::vector<uint8_t> arg = Pattern(5000, 1);
  CallRequest req;
  req.xdr = CallHeader(0x6101, kEcho);
  AppendWord(req.xdr, 5000);
  req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
  req.max_reply_size = 8192;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_EQ(server_->counters().errors_sent, 1u);
}

}  // namespace
}  // namespace rpcrdma::test
