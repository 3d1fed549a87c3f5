// The conformance suite over the verbs fabric (rdma-core), run on a real
// RDMA device: in the Soft-RoCE VM (interop/vm) both ends use rxe0 at
// $RPCRDMA_TEST_ADDR. Also the verbs fabric's own behaviour: rdma-cm
// private data limits, exact read-depth negotiation, local checks, and the
// mapping of work completion statuses and CM events.
#include "plugin/fabric/verbs/verbs_fabric.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/fabric/verbs/cm_events.h"
#include "plugin/fabric/verbs/verbs_address.h"
#include "tests/fabric/fabric_conformance.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {

namespace verbs = fabric::verbs;
using fabric::Capabilities;
using fabric::Completion;
using fabric::ConnectionEventType;
using fabric::ConnectRequest;
using fabric::Endpoint;
using fabric::EndpointOptions;
using fabric::kRemoteRead;
using fabric::kRemoteWrite;
using fabric::Listener;
using fabric::LocalBuffer;
using fabric::RemoteRegion;
using fabric::VerbsFabricOptions;
using fabric::WindowMode;
using fabric::WorkStatus;
using fabric::WorkType;
using verbs::ClassifyCmEvent;
using verbs::CmAction;
using verbs::MapWcOpcode;
using verbs::MapWcStatus;

namespace {

FabricFactory VerbsFactory(std::string name, WindowMode windows) {
  FabricFactory f;
  f.name = std::move(name);
  VerbsFabricOptions options;
  options.windows = windows;
  f.make_client = [options] { return MakeVerbsFabric(options); };
  f.make_server = [options] { return MakeVerbsFabric(options); };
  f.listen_address = [] { return absl::StrCat(RdmaTestHost(), ":0"); };
  return f;
}

// Memory windows where the device has them (rxe does), and a memory region
// per window, the fallback for devices without.
INSTANTIATE_TEST_SUITE_P(
    Verbs, FabricConformanceTest,
    ::testing::Values(VerbsFactory("VerbsWindows", WindowMode::kAuto),
                      VerbsFactory("VerbsRegistrations",
                                   WindowMode::kRegistrations)),
    FactoryName);

class VerbsFabricTest : public FabricConformanceTest {
 protected:
  void SetUp() override { Start({}); }
  void Start(VerbsFabricOptions options) {
    client_fabric_ = MakeVerbsFabric(options);
    server_fabric_ = MakeVerbsFabric(options);
    absl::StatusOr<std::unique_ptr<Listener>> l =
        server_fabric_->Listen(absl::StrCat(RdmaTestHost(), ":0"));
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
  }
};

std::vector<uint8_t> Seq(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

TEST_F(VerbsFabricTest, ListenerReportsTheChosenPort) {
  const std::string address = listener_->address();
  ASSERT_TRUE(absl::StartsWith(address, RdmaTestHost() + ":")) << address;
  absl::StatusOr<verbs::SocketAddress> parsed = verbs::ParseAddress(address);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_NE(address, RdmaTestHost() + ":0");
}

// RFC 8797 §5.1 carries its message in the CM private data; rdma-cm on
// InfiniBand and RoCE takes 56 octets on connect, 196 on accept and 148 on
// reject, and pads what it delivers.
TEST_F(VerbsFabricTest, PrivateDataAtTheCmLimitsArrivesIntact) {
  Side client, server;
  Connect(client, server, Seq(56), Seq(196));
  EXPECT_EQ(client.events[0].private_data, Seq(196));
}

TEST_F(VerbsFabricTest, ConnectPrivateDataOverTheCmLimitIsInvalidArgument) {
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), Seq(57), {});
  EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument)
      << ep.status();
}

TEST_F(VerbsFabricTest, AcceptAndRejectPrivateDataOverTheCmLimitAreRefused) {
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  std::unique_ptr<ConnectRequest> request =
      NextConnectRequest(*listener_, {&client});
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->Accept(Seq(197), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(request->Reject(Seq(149)).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(request->Reject(Seq(148)).ok());
  ASSERT_TRUE(
      WaitFor([&] { return client.HasEvent(ConnectionEventType::kRejected); },
              {&client}));
  EXPECT_EQ(client.events[0].private_data, Seq(148));
}

TEST_F(VerbsFabricTest, ConnectToAPortWithoutListenerIsUnreachable) {
  const std::string address = listener_->address();
  listener_.reset();
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(address, {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  ASSERT_TRUE(WaitFor([&] { return !client.events.empty(); }, {&client}));
  EXPECT_EQ(client.events[0].type, ConnectionEventType::kUnreachable)
      << client.events[0].detail;
}

TEST_F(VerbsFabricTest, ReadDepthsAreNegotiatedExactly) {
  Side client, server;
  EndpointOptions client_options;
  client_options.initiator_depth = 3;
  client_options.responder_resources = 5;
  EndpointOptions server_options;
  server_options.initiator_depth = 4;
  server_options.responder_resources = 16;
  Connect(client, server, {}, {}, client_options, server_options);
  // Client ORD = min(3, server IRD 16); client IRD = min(5, server ORD 4).
  EXPECT_EQ(client.endpoint->capabilities().initiator_depth, 3u);
  EXPECT_EQ(client.endpoint->capabilities().responder_resources, 4u);
  EXPECT_EQ(server.endpoint->capabilities().initiator_depth, 4u);
  EXPECT_EQ(server.endpoint->capabilities().responder_resources, 3u);
}

TEST_F(VerbsFabricTest, CapabilitiesComeFromTheDevice) {
  Side client, server;
  Connect(client, server);
  const Capabilities& caps = client.endpoint->capabilities();
  EXPECT_EQ(caps.device_name, server.endpoint->capabilities().device_name);
  // Devices may round the queue pair's limits up (rxe does).
  EXPECT_GE(caps.max_send_sge, EndpointOptions{}.max_send_sge);
  EXPECT_GE(caps.max_recv_queue, EndpointOptions{}.recv_queue_depth);
  EXPECT_GE(caps.max_rdma_read_sge, 1u);
  EXPECT_LE(caps.max_rdma_read_sge, caps.max_send_sge);
}

TEST_F(VerbsFabricTest, RegistrationsOutsideTheirEndpointAreInvalidArgument) {
  Side client, server;
  Connect(client, server);
  Memory mine = Register(client, 64);
  Memory theirs = Register(server, 64);
  EXPECT_EQ(client.endpoint->PostReceive(1, theirs.Slice(0, 64)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.endpoint->PostReceive(2, mine.Slice(1, 64)).code(),
            absl::StatusCode::kInvalidArgument);
  const LocalBuffer g = mine.Slice(0, 8);
  const RemoteRegion wrong_length{1, 0, 9};
  EXPECT_EQ(client.endpoint->PostRdmaRead(3, {&g, 1}, wrong_length).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.endpoint->InvalidateWindow(4, 0x1234).code(),
            absl::StatusCode::kNotFound);
  // Nothing was posted, so nothing completes.
  WaitFor([] { return false; }, {&client, &server}, nullptr,
          std::chrono::milliseconds(100));
  EXPECT_TRUE(client.completions.empty());
}

TEST_F(VerbsFabricTest, SendBeforeEstablishedIsFailedPrecondition) {
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  Memory m = Register(client, 64);
  const LocalBuffer g = m.Slice(0, 8);
  EXPECT_EQ(client.endpoint->PostSend(1, {&g, 1}).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(VerbsFabricTest, ARequestNeitherAcceptedNorRejectedIsRejected) {
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), Seq(8), {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  std::unique_ptr<ConnectRequest> request =
      NextConnectRequest(*listener_, {&client});
  ASSERT_NE(request, nullptr);
  request.reset();
  ASSERT_TRUE(WaitFor([&] { return !client.events.empty(); }, {&client}));
  EXPECT_EQ(client.events[0].type, ConnectionEventType::kRejected);
}

TEST_F(VerbsFabricTest, ARequestOutlivesItsListener) {
  Side client, server;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  std::unique_ptr<ConnectRequest> request =
      NextConnectRequest(*listener_, {&client});
  ASSERT_NE(request, nullptr);
  listener_.reset();
  absl::StatusOr<std::unique_ptr<Endpoint>> accepted =
      request->Accept(Seq(3), {});
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  server.endpoint = *std::move(accepted);
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.HasEvent(ConnectionEventType::kEstablished) &&
               server.HasEvent(ConnectionEventType::kEstablished);
      },
      {&client, &server}));
}

TEST_F(VerbsFabricTest, ConnectToAnUnroutableAddressIsUnreachable) {
  // 198.51.100.0/24 (TEST-NET-2) has no route from the test machine.
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect("198.51.100.1:20049", {}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  ASSERT_TRUE(WaitFor([&] { return !client.events.empty(); }, {&client}));
  EXPECT_EQ(client.events[0].type, ConnectionEventType::kUnreachable);
  Memory m;
  m.bytes.resize(16);
  EXPECT_EQ(client.endpoint->Register(absl::MakeSpan(m.bytes)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Windows left bound when their registration goes away die with it; the
// connection carries on.
TEST_F(VerbsFabricTest, ARegistrationTakesItsWindowsAlong) {
  Side client, server;
  Connect(client, server);
  RemoteRegion region;
  {
    Memory doomed = Register(server, 4096);
    region = Bind(server, doomed.Slice(0, 4096), kRemoteRead, 1);
  }
  EXPECT_EQ(server.endpoint->InvalidateWindow(2, region.handle).code(),
            absl::StatusCode::kNotFound);
  Memory rx = Register(server, 64);
  Memory tx = Register(client, 64, 7);
  ASSERT_TRUE(server.endpoint->PostReceive(3, rx.Slice(0, 64)).ok());
  const LocalBuffer g = tx.Slice(0, 64);
  ASSERT_TRUE(client.endpoint->PostSend(4, {&g, 1}).ok());
  EXPECT_EQ(WaitCompletion(server, 3, {&client}), WorkStatus::kSuccess);
  EXPECT_TRUE(rx.bytes == tx.bytes);
}

TEST_F(VerbsFabricTest, ARegistrationOutlivesItsEndpoint) {
  Side client, server;
  Connect(client, server);
  Memory m = Register(client, 4096);
  Bind(client, m.Slice(0, 4096), kRemoteWrite, 1);
  client.endpoint.reset();
  ASSERT_TRUE(WaitFor(
      [&] { return server.HasEvent(ConnectionEventType::kDisconnected); },
      {&server}));
  EXPECT_EQ(m.registration->memory().size(), 4096u);
}

// A post the device refuses reports the verb and its errno text.
TEST_F(VerbsFabricTest, AFullReceiveQueueIsResourceExhaustedNamingTheVerb) {
  Side client, server;
  EndpointOptions options;
  options.recv_queue_depth = 4;
  Connect(client, server, {}, {}, options);
  const uint32_t depth = client.endpoint->capabilities().max_recv_queue;
  ASSERT_GE(depth, 4u);
  ASSERT_LE(depth, 4096u);
  Memory m = Register(client, 16);
  for (uint32_t i = 0; i < depth; ++i) {
    ASSERT_TRUE(client.endpoint->PostReceive(i, m.Slice(0, 16)).ok()) << i;
  }
  const absl::Status full = client.endpoint->PostReceive(depth, m.Slice(0, 16));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_TRUE(absl::StartsWith(full.message(), "ibv_post_recv: ")) << full;
  // The refused receive never completes; the others flush exactly once.
  client.endpoint->Disconnect();
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == depth; },
                      {&client, &server}));
  WaitFor([] { return false; }, {&client, &server}, nullptr,
          std::chrono::milliseconds(100));
  EXPECT_EQ(client.completions.size(), depth);
  for (const Completion& c : client.completions) {
    EXPECT_EQ(c.type, WorkType::kReceive);
    EXPECT_EQ(c.status, WorkStatus::kFlushed);
    EXPECT_LT(c.wr_id, depth);
  }
}

TEST(VerbsMapping, WorkCompletionStatuses) {
  using verbs::MapWcStatus;
  EXPECT_EQ(MapWcStatus(IBV_WC_SUCCESS), WorkStatus::kSuccess);
  EXPECT_EQ(MapWcStatus(IBV_WC_WR_FLUSH_ERR), WorkStatus::kFlushed);
  EXPECT_EQ(MapWcStatus(IBV_WC_LOC_LEN_ERR), WorkStatus::kLocalLengthError);
  EXPECT_EQ(MapWcStatus(IBV_WC_LOC_PROT_ERR),
            WorkStatus::kLocalProtectionError);
  EXPECT_EQ(MapWcStatus(IBV_WC_REM_ACCESS_ERR), WorkStatus::kRemoteAccessError);
  EXPECT_EQ(MapWcStatus(IBV_WC_REM_INV_REQ_ERR),
            WorkStatus::kRemoteInvalidRequest);
  EXPECT_EQ(MapWcStatus(IBV_WC_RNR_RETRY_EXC_ERR),
            WorkStatus::kReceiverNotReady);
  EXPECT_EQ(MapWcStatus(IBV_WC_RETRY_EXC_ERR), WorkStatus::kTransportError);
  EXPECT_EQ(MapWcStatus(IBV_WC_LOC_QP_OP_ERR), WorkStatus::kTransportError);
  EXPECT_EQ(MapWcStatus(IBV_WC_MW_BIND_ERR), WorkStatus::kTransportError);
}

TEST(VerbsMapping, WorkCompletionOpcodes) {
  using verbs::MapWcOpcode;
  EXPECT_EQ(MapWcOpcode(IBV_WC_RECV), WorkType::kReceive);
  EXPECT_EQ(MapWcOpcode(IBV_WC_SEND), WorkType::kSend);
  EXPECT_EQ(MapWcOpcode(IBV_WC_RDMA_READ), WorkType::kRdmaRead);
  EXPECT_EQ(MapWcOpcode(IBV_WC_RDMA_WRITE), WorkType::kRdmaWrite);
  EXPECT_EQ(MapWcOpcode(IBV_WC_BIND_MW), WorkType::kBindWindow);
  EXPECT_EQ(MapWcOpcode(IBV_WC_LOCAL_INV), WorkType::kLocalInvalidate);
  EXPECT_EQ(MapWcOpcode(IBV_WC_COMP_SWAP), std::nullopt);
}

TEST(VerbsMapping, CmEvents) {
  using verbs::ClassifyCmEvent;
  using verbs::CmAction;
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_ESTABLISHED, 0),
            CmAction::kEstablished);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_REJECTED, 28), CmAction::kRejected);
  // IB CM reject reason 8: invalid service ID (nobody listens there).
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_REJECTED, 8), CmAction::kUnreachable);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_ADDR_ERROR, -110),
            CmAction::kUnreachable);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_ROUTE_ERROR, -110),
            CmAction::kUnreachable);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_CONNECT_ERROR, -110),
            CmAction::kUnreachable);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_UNREACHABLE, -110),
            CmAction::kUnreachable);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_DISCONNECTED, 0),
            CmAction::kDisconnected);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_DEVICE_REMOVAL, 0),
            CmAction::kDeviceRemoved);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_ADDR_CHANGE, 0),
            CmAction::kAddressChanged);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_TIMEWAIT_EXIT, 0), CmAction::kIgnore);
  EXPECT_EQ(ClassifyCmEvent(RDMA_CM_EVENT_ADDR_RESOLVED, 0), CmAction::kIgnore);
}

TEST(VerbsAddress, ParsesIpv4AndBracketedIpv6) {
  absl::StatusOr<verbs::SocketAddress> v4 =
      verbs::ParseAddress("192.0.2.1:20049");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->storage.ss_family, AF_INET);
  EXPECT_EQ(v4->host, "192.0.2.1");
  absl::StatusOr<verbs::SocketAddress> v6 = verbs::ParseAddress("[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->storage.ss_family, AF_INET6);
  EXPECT_EQ(verbs::FormatAddress("::1", 7), "[::1]:7");
  EXPECT_EQ(verbs::FormatAddress("192.0.2.1", 7), "192.0.2.1:7");
  // Names resolve (rdma-cm then maps the address to a device).
  absl::StatusOr<verbs::SocketAddress> named =
      verbs::ParseAddress("localhost:0");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_TRUE(named->host == "127.0.0.1" || named->host == "::1")
      << named->host;
}

TEST(VerbsAddress, RejectsMalformedAddresses) {
  for (const char* bad :
       {"192.0.2.1", "192.0.2.1:", "192.0.2.1:65536", "192.0.2.1:-1",
        "192.0.2.1:+5", "::1:80", "bad host:80", "192.0.2.1:8x"}) {
    EXPECT_EQ(verbs::ParseAddress(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

// Conformance tests whose expectations the verbs fabric cannot meet. Each
// entry is a gtest negative pattern and the reason.
struct KnownDeviation {
  const char* pattern;
  const char* reason;
};

// Soft-RoCE (rxe, Linux 6.1) only; hardware behaves as the suite expects.
constexpr KnownDeviation kSoftRoce[] = {
    // rxe fails a receive too small for the Send with LOC_QP_OP_ERR and
    // NAKs with Remote Operational Error (the sender sees REM_OP_ERR):
    // kTransportError on both sides instead of LOC_LEN_ERR at the receiver
    // and REM_INV_REQ_ERR at the sender.
    {"*SendLargerThanReceiveBreaksTheConnection/Verbs*",
     "rxe reports LOC_QP_OP_ERR / REM_OP_ERR for a receive overrun"},
    // rxe checks an access through a memory window against the bounds of
    // the memory region under it, not of the window: a Read or Write a few
    // octets outside the window but inside the region succeeds.
    {"*ReadPastTheEndIsRemoteAccessError/VerbsWindows",
     "rxe does not check memory window bounds"},
    {"*WritePastTheEndIsRemoteAccessError/VerbsWindows",
     "rxe does not check memory window bounds"},
    {"*ReadBeforeTheStartIsRemoteAccessError/VerbsWindows",
     "rxe does not check memory window bounds"},
    // rxe acknowledges a Send With Invalidate before it invalidates: with
    // an unknown rkey the sender's Send completes successfully, the
    // receive fails with REM_INV_REQ_ERR and the connection breaks.
    {"*SendWithInvalidateOfUnknownHandleFails/Verbs*",
     "rxe acknowledges the Send before the invalidation fails"},
};

// Without an explicit --gtest_filter, leaves out the known deviations (and
// says so); with one, runs what was asked.
void ExcludeKnownDeviations(const std::string& device) {
  if (::testing::GTEST_FLAG(filter) != "*") return;
  std::vector<KnownDeviation> skip;
  if (absl::StartsWith(device, "rxe")) {
    skip.assign(std::begin(kSoftRoce), std::end(kSoftRoce));
  }
  std::string filter = "-";
  for (const KnownDeviation& d : skip) {
    std::printf("not run: %s: %s\n", d.pattern, d.reason);
    if (filter.size() > 1) filter += ':';
    filter += d.pattern;
  }
  ::testing::GTEST_FLAG(filter) = filter;
}

}  // namespace
}  // namespace rpcrdma::test

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  using rpcrdma::test::ExcludeKnownDeviations;
  ExcludeKnownDeviations(rpcrdma::test::ProbeVerbsDevice());
  ::testing::AddGlobalTestEnvironment(new rpcrdma::test::RdmaLeakCheck);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
