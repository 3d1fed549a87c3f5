// The conformance suite over the soft fabric (Unix-domain sockets with RDMA
// data through the socket and by cross-memory attach, and TCP), and the
// soft fabric's own behaviour: exact private data, addressing, local
// checks, fault injection, sizes, and flushes.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fabric/soft_fabric_fixture.h"

namespace rpcrdma::test {

using fabric::Completion;
using fabric::ConnectionEventType;
using fabric::ConnectRequest;
using fabric::Endpoint;
using fabric::EndpointOptions;
using fabric::Fabric;
using fabric::kRemoteRead;
using fabric::kRemoteWrite;
using fabric::LocalBuffer;
using fabric::MakeSoftFabric;
using fabric::RemoteRegion;
using fabric::SoftFabricOptions;
using fabric::WorkStatus;
using fabric::WorkType;

namespace {

INSTANTIATE_TEST_SUITE_P(
    Soft, FabricConformanceTest,
    ::testing::Values(
        SoftFactory("SoftUnix", UnixAddress),
        SoftFactory("SoftUnixAbstract",
                    [] { return absl::StrCat("unix:@", UniqueName()); }),
        SoftFactory("SoftUnixSocketPath", UnixAddress, CrossMemory(false)),
        SoftFactory("SoftUnixCrossMemory", UnixAddress, CrossMemoryForAll()),
        SoftFactory("SoftTcp", [] { return std::string("tcp:127.0.0.1:0"); })),
    FactoryName);

TEST_F(SoftFabricTest, PrivateDataIsDeliveredExactlyNotPadded) {
  // RFC 8797 §5.2 has receivers search padded data; soft does not pad.
  for (size_t n : {0u, 1u, 55u, 56u}) {
    Start({});
    Side client, server;
    Connect(client, server, Seq(n), Seq(196 - n));
    EXPECT_EQ(client.events[0].private_data, Seq(196 - n));
    EXPECT_EQ(client.endpoint->capabilities().device_name, "soft");
    EXPECT_TRUE(client.endpoint->capabilities().remote_invalidation);
    EXPECT_TRUE(server.events[0].private_data.empty());
  }
}

// The soft fabric carries exactly what rdma-cm carries on InfiniBand and
// RoCE: 56 octets with a connect request, 196 with an accept, 148 with a
// reject.
TEST_F(SoftFabricTest, PrivateDataBeyondTheCmLimitsIsRefused) {
  Start({});
  EXPECT_EQ(client_fabric_->Connect(listener_->address(), Seq(57), {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto client = client_fabric_->Connect(listener_->address(), Seq(56), {});
  ASSERT_TRUE(client.ok()) << client.status();
  std::unique_ptr<ConnectRequest> request = NextConnectRequest(*listener_);
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->Accept(Seq(197), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(request->Reject(Seq(149)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(request->Reject(Seq(148)).ok());
}

TEST_F(SoftFabricTest, TcpPortZeroReportsTheChosenPort) {
  Start({});
  const std::string address = listener_->address();
  ASSERT_TRUE(absl::StartsWith(address, "tcp:127.0.0.1:")) << address;
  EXPECT_NE(address, "tcp:127.0.0.1:0");
}

TEST_F(SoftFabricTest, UnixListenerReportsItsPathAndRemovesIt) {
  const std::string address = UnixAddress();
  Start({}, {}, address);
  EXPECT_EQ(listener_->address(), address);
  const std::string path = address.substr(5);
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  listener_.reset();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST_F(SoftFabricTest, MalformedAddressesAreInvalidArgument) {
  std::unique_ptr<Fabric> fabric = MakeSoftFabric();
  // sun_path holds 108 octets including the terminating NUL.
  const std::string too_long = "unix:/" + std::string(107, 'x');
  for (const std::string& bad :
       {std::string(""), std::string("udp:1.2.3.4:5"),
        std::string("tcp:127.0.0.1"), std::string("tcp:127.0.0.1:65536"),
        std::string("tcp:127.0.0.1:x"), std::string("tcp:bad host:1"),
        std::string("tcp:[::1:1"), std::string("unix:"), std::string("unix:@"),
        too_long}) {
    EXPECT_EQ(fabric->Listen(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_EQ(fabric->Connect(bad, {}, {}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST_F(SoftFabricTest, ConnectToNothingIsUnreachable) {
  std::unique_ptr<Fabric> fabric = MakeSoftFabric();
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      fabric->Connect(UnixAddress(), {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  ASSERT_TRUE(WaitFor(
      [&] { return client.HasEvent(ConnectionEventType::kUnreachable); },
      {&client}));
}

TEST_F(SoftFabricTest, ListenerRejectsAutomaticallyWhenConfigured) {
  SoftFabricOptions server;
  server.reject_all = Seq(9);
  Start({}, server);
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), Seq(3), {});
  ASSERT_TRUE(ep.ok());
  client.endpoint = *std::move(ep);
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
            listener_->PollConnectRequest();
        EXPECT_TRUE(r.ok() && *r == nullptr);
        return client.HasEvent(ConnectionEventType::kRejected);
      },
      {&client}, listener_.get()));
  EXPECT_EQ(client.events[0].private_data, Seq(9));
}

TEST_F(SoftFabricTest, UnansweredConnectRequestIsRejected) {
  Start({});
  Side client;
  client.endpoint = *client_fabric_->Connect(listener_->address(), {}, {});
  std::unique_ptr<ConnectRequest> request =
      NextConnectRequest(*listener_, {&client});
  ASSERT_NE(request, nullptr);
  request.reset();
  ASSERT_TRUE(
      WaitFor([&] { return client.HasEvent(ConnectionEventType::kRejected); },
              {&client}));
  EXPECT_TRUE(client.events[0].private_data.empty());
}

TEST_F(SoftFabricTest, SendBeforeEstablishedIsFailedPrecondition) {
  Start({});
  Side client;
  client.endpoint = *client_fabric_->Connect(listener_->address(), {}, {});
  Memory m = Register(client, 16);
  const LocalBuffer g = m.Slice(0, 16);
  EXPECT_EQ(client.endpoint->PostSend(1, {&g, 1}).code(),
            absl::StatusCode::kFailedPrecondition);
  // Receives may be posted before the connection is up.
  EXPECT_TRUE(client.endpoint->PostReceive(2, g).ok());
}

TEST_F(SoftFabricTest, LocalBufferOutsideItsRegistrationIsInvalidArgument) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory m = Register(client, 100);
  Memory other = Register(server, 100);
  const RemoteRegion region =
      Bind(server, other.Slice(0, 100), kRemoteRead | kRemoteWrite, 1);
  const LocalBuffer bad[] = {
      m.Slice(0, 101),           m.Slice(100, 1),
      m.Slice(101, 0),           m.Slice(std::numeric_limits<size_t>::max(), 2),
      other.Slice(0, 10),  // another endpoint's registration
      LocalBuffer{nullptr, 0, 0}};
  for (const LocalBuffer& b : bad) {
    EXPECT_EQ(client.endpoint->PostReceive(2, b).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client.endpoint->PostSend(3, {&b, 1}).code(),
              absl::StatusCode::kInvalidArgument);
    RemoteRegion r = region;
    r.length = static_cast<uint32_t>(b.length);
    EXPECT_EQ(client.endpoint->PostRdmaRead(4, {&b, 1}, r).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client.endpoint->PostRdmaWrite(5, {&b, 1}, r).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client.endpoint->BindWindow(6, b, kRemoteRead).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // A scatter list that does not match the region's length.
  const LocalBuffer ten = m.Slice(0, 10);
  EXPECT_EQ(client.endpoint->PostRdmaRead(7, {&ten, 1}, region).code(),
            absl::StatusCode::kInvalidArgument);
  // Too many elements.
  std::vector<LocalBuffer> many(
      client.endpoint->capabilities().max_send_sge + 1, m.Slice(0, 1));
  EXPECT_EQ(client.endpoint->PostSend(8, many).code(),
            absl::StatusCode::kInvalidArgument);
  // Nothing was posted, so nothing completes and the connection is fine.
  WaitFor([] { return false; }, {&client, &server}, nullptr,
          std::chrono::milliseconds(50));
  EXPECT_TRUE(client.completions.empty());
  EXPECT_EQ(client.events.size(), 1u);
}

TEST_F(SoftFabricTest, InvalidatingAnUnknownWindowIsInvalidArgument) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory m = Register(client, 100);
  const RemoteRegion r = Bind(client, m.Slice(0, 10), kRemoteRead, 1);
  EXPECT_NE(r.handle, 0u);
  EXPECT_EQ(r.offset, reinterpret_cast<uintptr_t>(m.bytes.data()));
  ASSERT_TRUE(client.endpoint->InvalidateWindow(2, r.handle).ok());
  EXPECT_EQ(client.endpoint->InvalidateWindow(3, r.handle).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.endpoint->InvalidateWindow(4, 0).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SoftFabricTest, QueueDepthsAreEnforced) {
  Start({});
  Side client, server;
  EndpointOptions options;
  options.recv_queue_depth = 2;
  Connect(client, server, {}, {}, options);
  Memory m = Register(client, 100);
  EXPECT_TRUE(client.endpoint->PostReceive(1, m.Slice(0, 10)).ok());
  EXPECT_TRUE(client.endpoint->PostReceive(2, m.Slice(0, 10)).ok());
  EXPECT_EQ(client.endpoint->PostReceive(3, m.Slice(0, 10)).code(),
            absl::StatusCode::kResourceExhausted);
  EndpointOptions too_deep;
  too_deep.send_queue_depth = 1 << 20;
  EXPECT_EQ(client_fabric_->Connect(listener_->address(), {}, too_deep)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SoftFabricTest, PostsAfterDisconnectCompleteFlushed) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory m = Register(client, 100);
  const LocalBuffer g = m.Slice(0, 10);
  const RemoteRegion r = Bind(client, g, kRemoteRead, 1);
  client.endpoint->Disconnect();
  client.endpoint->Disconnect();  // a second call changes nothing
  ExpectBroken(client, server);
  ASSERT_TRUE(client.endpoint->PostReceive(2, g).ok());
  ASSERT_TRUE(client.endpoint->PostSend(3, {&g, 1}).ok());
  ASSERT_TRUE(client.endpoint->InvalidateWindow(4, r.handle).ok());
  EXPECT_EQ(client.endpoint->BindWindow(5, g, kRemoteRead).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(
      WaitFor([&] { return client.completions.size() == 4; }, {&client}));
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(client.completions[i].wr_id, i + 1);
    EXPECT_EQ(client.completions[i].status, WorkStatus::kFlushed);
  }
  EXPECT_EQ(client.events.size(), 2u);  // established, disconnected
}

TEST_F(SoftFabricTest, FaultInjectionBreaksAtTheNthOperation) {
  SoftFabricOptions client_options;
  client_options.break_at_operation = 3;
  Start(client_options);
  Side client, server;
  Connect(client, server);
  Memory tx = Register(client, 64);
  Memory rx = Register(server, 64);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(server.endpoint->PostReceive(10 + i, rx.Slice(0, 64)).ok());
  }
  const LocalBuffer g = tx.Slice(0, 8);
  ASSERT_TRUE(client.endpoint->PostSend(1, {&g, 1}).ok());
  ASSERT_TRUE(client.endpoint->PostSend(2, {&g, 1}).ok());
  ASSERT_TRUE(client.endpoint->PostSend(3, {&g, 1}).ok());
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.completions.size() == 3 && server.completions.size() == 4;
      },
      {&client, &server}));
  EXPECT_EQ(client.completions[0].wr_id, 3u);
  EXPECT_EQ(client.completions[0].status, WorkStatus::kTransportError);
  EXPECT_EQ(client.CompletionsOf(1)[0].status, WorkStatus::kFlushed);
  EXPECT_EQ(client.CompletionsOf(2)[0].status, WorkStatus::kFlushed);
  // The server's receives each complete once, whatever got through.
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(server.CompletionsOf(10 + i).size(), 1u);
  }
}

TEST_F(SoftFabricTest, FaultInjectionDelaysCompletions) {
  SoftFabricOptions client_options;
  client_options.completion_delay_polls = 3;
  Start(client_options);
  Side client, server;
  Connect(client, server);
  Memory m = Register(client, 64);
  ASSERT_TRUE(client.endpoint->BindWindow(1, m.Slice(0, 8), kRemoteRead).ok());
  Completion c;
  for (int i = 0; i < 3; ++i) {
    pollfd p{client.endpoint->event_fd(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 0), 1) << "event_fd must stay readable";
    EXPECT_EQ(client.endpoint->PollCompletions({&c, 1}), 0u) << "poll " << i;
  }
  ASSERT_EQ(client.endpoint->PollCompletions({&c, 1}), 1u);
  EXPECT_EQ(c.wr_id, 1u);
  EXPECT_EQ(c.type, WorkType::kBindWindow);
  pollfd p{client.endpoint->event_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "nothing left to report";
}

TEST_F(SoftFabricTest, ReleasingARegistrationKillsItsWindows) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory remote = Register(server, 64);
  Memory local = Register(client, 64);
  const RemoteRegion r = Bind(server, remote.Slice(0, 64), kRemoteRead, 1);
  remote.registration.reset();
  const LocalBuffer into = local.Slice(0, 64);
  ASSERT_TRUE(client.endpoint->PostRdmaRead(2, {&into, 1}, r).ok());
  EXPECT_EQ(WaitCompletion(client, 2, {&server}),
            WorkStatus::kRemoteAccessError);
  ExpectBroken(client, server);
}

TEST_F(SoftFabricTest, TcpOverIpv6Loopback) {
  std::unique_ptr<Fabric> probe = MakeSoftFabric();
  if (!probe->Listen("tcp:[::1]:0").ok()) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  Start({}, {}, "tcp:[::1]:0");
  ASSERT_TRUE(absl::StartsWith(listener_->address(), "tcp:[::1]:"));
  Side client, server;
  Connect(client, server, Seq(4), Seq(5));
  EXPECT_EQ(client.events[0].private_data, Seq(5));
}

TEST_F(SoftFabricTest, SendsUpToTheMaximumMessageSize) {
  Start({});
  Side client, server;
  Connect(client, server);
  const uint32_t max = client.endpoint->capabilities().max_message_size;
  ASSERT_EQ(max, 1024u * 1024u);
  Memory tx = Register(client, max + 1, 3);
  Memory rx = Register(server, max);
  ASSERT_TRUE(server.endpoint->PostReceive(1, rx.Slice(0, max)).ok());
  const LocalBuffer too_big = tx.Slice(0, max + 1);
  EXPECT_EQ(client.endpoint->PostSend(2, {&too_big, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  const LocalBuffer all = tx.Slice(1, max);
  ASSERT_TRUE(client.endpoint->PostSend(3, {&all, 1}).ok());
  ASSERT_EQ(WaitCompletion(server, 1, {&client}), WorkStatus::kSuccess);
  EXPECT_EQ(server.completions[0].byte_length, max);
  EXPECT_TRUE(
      std::equal(rx.bytes.begin(), rx.bytes.end(), tx.bytes.begin() + 1));
  EXPECT_EQ(WaitCompletion(client, 3, {&server}), WorkStatus::kSuccess);
}

TEST_F(SoftFabricTest, ZeroLengthTransfersSucceed) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory remote = Register(server, 16);
  Memory local = Register(client, 16);
  const RemoteRegion region =
      Bind(server, remote.Slice(8, 0), kRemoteRead | kRemoteWrite, 1);
  EXPECT_EQ(region.length, 0u);
  const LocalBuffer none = local.Slice(16, 0);
  ASSERT_TRUE(client.endpoint->PostRdmaRead(2, {&none, 1}, region).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(3, {&none, 1}, region).ok());
  EXPECT_EQ(WaitCompletion(client, 2, {&server}), WorkStatus::kSuccess);
  EXPECT_EQ(WaitCompletion(client, 3, {&server}), WorkStatus::kSuccess);
  Memory rx = Register(server, 16);
  ASSERT_TRUE(server.endpoint->PostReceive(4, rx.Slice(0, 0)).ok());
  ASSERT_TRUE(client.endpoint->PostSend(5, {}).ok());
  EXPECT_EQ(WaitCompletion(server, 4, {&client}), WorkStatus::kSuccess);
  EXPECT_EQ(server.CompletionsOf(4)[0].byte_length, 0u);
  EXPECT_EQ(WaitCompletion(client, 5, {&server}), WorkStatus::kSuccess);
}

TEST_F(SoftFabricTest, DisconnectRightAfterPostingFlushesEverything) {
  Start({});
  Side client, server;
  Connect(client, server);
  Memory remote = Register(server, 4096);
  Memory local = Register(client, 4096);
  const RemoteRegion region =
      Bind(server, remote.Slice(0, 4096), kRemoteRead | kRemoteWrite, 1);
  const LocalBuffer buf = local.Slice(0, 4096);
  ASSERT_TRUE(client.endpoint->PostReceive(1, buf).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaRead(2, {&buf, 1}, region).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(3, {&buf, 1}, region).ok());
  ASSERT_TRUE(client.endpoint->PostSend(4, {&buf, 1}).ok());
  client.endpoint->Disconnect();
  ASSERT_TRUE(
      WaitFor([&] { return client.completions.size() == 4; }, {&client}));
  // Send-queue work flushes in posting order, then the receives.
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(client.completions[i].wr_id, i < 3 ? i + 2 : 1);
    EXPECT_EQ(client.completions[i].status, WorkStatus::kFlushed);
  }
  ExpectBroken(client, server);
  EXPECT_EQ(client.events.back().detail, "disconnected locally");
}

TEST_F(SoftFabricTest, NamesOfEnumerators) {
  EXPECT_EQ(WorkTypeName(WorkType::kSendWithInvalidate), "SEND_WITH_INV");
  EXPECT_EQ(WorkStatusName(WorkStatus::kFlushed), "WR_FLUSH_ERR");
  EXPECT_EQ(WorkStatusName(WorkStatus::kRemoteAccessError), "REM_ACCESS_ERR");
  EXPECT_EQ(ConnectionEventTypeName(ConnectionEventType::kRejected),
            "REJECTED");
  EXPECT_EQ(MakeSoftFabric()->name(), "soft");
}

}  // namespace
}  // namespace rpcrdma::test
