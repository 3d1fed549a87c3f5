// The conformance suite over the soft fabric (Unix-domain sockets with RDMA
// data through the socket and by cross-memory attach, and TCP), and the
// soft fabric's own behaviour: exact private data, addressing, local
// checks, fault injection, and the negotiation of cross-memory attach.
#include "plugin/fabric/soft/soft_fabric.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fabric/fabric_conformance.h"

namespace rpcrdma::fabric::testing {
namespace {

std::string UniqueName() {
  static std::atomic<int> counter{0};
  return absl::StrCat("rpcrdma-fabric-", getpid(), "-", counter++);
}

std::string UnixAddress() {
  std::string dir = ::testing::TempDir();
  if (dir.empty() || dir.back() != '/') dir += '/';
  std::string path = absl::StrCat(dir, UniqueName(), ".sock");
  // A socket path must fit sun_path (108 octets with its NUL); fall back
  // to a path relative to the working directory.
  if (path.size() > 100) path = absl::StrCat(UniqueName(), ".sock");
  return absl::StrCat("unix:", path);
}

FabricFactory SoftFactory(std::string name,
                          std::function<std::string()> address,
                          SoftFabricOptions options = {}) {
  FabricFactory f;
  f.name = std::move(name);
  f.make_client = [options] { return MakeSoftFabric(options); };
  f.make_server = [options] { return MakeSoftFabric(options); };
  f.listen_address = std::move(address);
  return f;
}

SoftFabricOptions CrossMemory(bool on) {
  SoftFabricOptions options;
  options.cross_memory_attach = on;
  return options;
}

// Cross-memory attach for transfers of every length.
SoftFabricOptions CrossMemoryForAll() {
  SoftFabricOptions options;
  options.cross_memory_min_length = 0;
  return options;
}

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

// Soft-specific tests share the conformance fixture's helpers but build
// their own fabrics.
class SoftFabricTest : public FabricConformanceTest {
 protected:
  void SetUp() override {}
  void Start(SoftFabricOptions client_options,
             SoftFabricOptions server_options = {},
             std::string address = "tcp:127.0.0.1:0") {
    client_fabric_ = MakeSoftFabric(client_options);
    server_fabric_ = MakeSoftFabric(server_options);
    absl::StatusOr<std::unique_ptr<Listener>> l =
        server_fabric_->Listen(address);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
  }
  // Forks an EchoServer and drives it; both sides offer cross-memory
  // attach when `cross_memory`.
  void RunPeersInSeparateProcesses(bool cross_memory);

 public:
  // The fixture's helpers for free functions.
  Memory RegisterFor(Side& side, size_t size, uint32_t seed) {
    return Register(side, size, seed);
  }
  RemoteRegion BindFor(Side& side, const LocalBuffer& buffer, uint32_t access,
                       uint64_t wr_id) {
    return Bind(side, buffer, access, wr_id);
  }
  WorkStatus WaitCompletionFor(Side& side, uint64_t wr_id,
                               std::vector<Side*> others) {
    return WaitCompletion(side, wr_id, std::move(others));
  }
};

std::vector<uint8_t> Seq(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

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
  std::unique_ptr<ConnectRequest> request;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = listener_->PollConnectRequest();
        if (r.ok() && *r != nullptr) request = *std::move(r);
        return request != nullptr;
      },
      {}, listener_.get()));
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
  std::unique_ptr<ConnectRequest> request;
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
            listener_->PollConnectRequest();
        if (r.ok() && *r != nullptr) request = *std::move(r);
        return request != nullptr;
      },
      {&client}, listener_.get()));
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

// The peer process of PeersInSeparateProcesses: accepts one connection,
// learns two windows of the client's from its first message, RDMA Reads
// the first, RDMA Writes the octets back into the second, and reports with
// a Send. Returns the process exit status (0 on success).
int EchoServer(const std::string& address, bool cross_memory) {
  std::unique_ptr<Fabric> fabric = MakeSoftFabric(CrossMemory(cross_memory));
  absl::StatusOr<std::unique_ptr<Listener>> listener = fabric->Listen(address);
  if (!listener.ok()) return 2;
  Side server;
  std::unique_ptr<ConnectRequest> request;
  if (!WaitFor(
          [&] {
            absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
                (*listener)->PollConnectRequest();
            if (r.ok() && *r != nullptr) request = *std::move(r);
            return request != nullptr;
          },
          {}, listener->get())) {
    return 3;
  }
  absl::StatusOr<std::unique_ptr<Endpoint>> ep = request->Accept({}, {});
  if (!ep.ok()) return 4;
  server.endpoint = *std::move(ep);
  std::vector<uint8_t> msg(64), data(1 << 20);
  absl::StatusOr<std::unique_ptr<Registration>> msg_reg =
      server.endpoint->Register(absl::MakeSpan(msg));
  absl::StatusOr<std::unique_ptr<Registration>> data_reg =
      server.endpoint->Register(absl::MakeSpan(data));
  if (!msg_reg.ok() || !data_reg.ok()) return 5;
  if (!server.endpoint->PostReceive(1, {msg_reg->get(), 0, 64}).ok()) {
    return 6;
  }
  auto completed = [&](uint64_t id) {
    return WaitFor(
        [&] {
          for (const Completion& c : server.completions) {
            if (c.wr_id == id) return true;
          }
          return false;
        },
        {&server});
  };
  if (!completed(1) ||
      server.completions.back().status != WorkStatus::kSuccess) {
    return 7;
  }
  RemoteRegion from, to;
  std::memcpy(&from, msg.data(), sizeof(from));
  std::memcpy(&to, msg.data() + 32, sizeof(to));
  if (from.length != data.size() || to.length != data.size()) return 8;
  const LocalBuffer all{data_reg->get(), 0, data.size()};
  if (!server.endpoint->PostRdmaRead(2, {&all, 1}, from).ok() ||
      !completed(2)) {
    return 9;
  }
  if (!server.endpoint->PostRdmaWrite(3, {&all, 1}, to).ok()) return 10;
  const LocalBuffer done{msg_reg->get(), 0, 1};
  if (!server.endpoint->PostSend(4, {&done, 1}).ok() || !completed(4)) {
    return 11;
  }
  for (const Completion& c : server.completions) {
    if (c.status != WorkStatus::kSuccess) return 12;
  }
  // The path this side's RDMA took.
  if (SoftUsesCrossMemory(*server.endpoint) != cross_memory ||
      SoftCrossMemoryOperations(*server.endpoint) != (cross_memory ? 2 : 0)) {
    return 14;
  }
  if (!WaitFor(
          [&] { return server.HasEvent(ConnectionEventType::kDisconnected); },
          {&server})) {
    return 13;
  }
  return 0;
}

void SoftFabricTest::RunPeersInSeparateProcesses(bool cross_memory) {
  const std::string address = UnixAddress();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(EchoServer(address, cross_memory));
  std::unique_ptr<Fabric> fabric = MakeSoftFabric(CrossMemory(cross_memory));
  Side client;
  // The child may not be listening yet: retry while unreachable.
  for (int attempt = 0; attempt < 200; ++attempt) {
    client = Side();
    absl::StatusOr<std::unique_ptr<Endpoint>> ep =
        fabric->Connect(address, {}, {});
    ASSERT_TRUE(ep.ok()) << ep.status();
    client.endpoint = *std::move(ep);
    ASSERT_TRUE(WaitFor([&] { return !client.events.empty(); }, {&client}));
    if (client.events[0].type == ConnectionEventType::kEstablished) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(client.events[0].type, ConnectionEventType::kEstablished);
  // The answer to this side's offer arrives with the ACCEPT.
  EXPECT_EQ(SoftUsesCrossMemory(*client.endpoint), cross_memory);
  Memory source = Register(client, 1 << 20, 77);
  Memory sink = Register(client, 1 << 20, 78);
  Memory msg = Register(client, 64);
  Memory rx = Register(client, 64);
  const RemoteRegion from =
      Bind(client, source.Slice(0, 1 << 20), kRemoteRead, 1);
  const RemoteRegion to = Bind(client, sink.Slice(0, 1 << 20), kRemoteWrite, 2);
  ASSERT_NE(source.bytes, sink.bytes);
  std::memcpy(msg.bytes.data(), &from, sizeof(from));
  std::memcpy(msg.bytes.data() + 32, &to, sizeof(to));
  ASSERT_TRUE(client.endpoint->PostReceive(3, rx.Slice(0, 64)).ok());
  const LocalBuffer m = msg.Slice(0, 64);
  ASSERT_TRUE(client.endpoint->PostSend(4, {&m, 1}).ok());
  EXPECT_EQ(WaitCompletion(client, 3, {}), WorkStatus::kSuccess);
  EXPECT_TRUE(sink.bytes == source.bytes);
  client.endpoint->Disconnect();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SoftFabricTest, PeersInSeparateProcesses) {
  RunPeersInSeparateProcesses(false);
}

// The child RDMA Reads 1 MiB out of the parent and RDMA Writes it back
// with process_vm_writev/process_vm_readv between the two processes.
TEST_F(SoftFabricTest, PeersInSeparateProcessesUseCrossMemoryAttach) {
  RunPeersInSeparateProcesses(true);
}

TEST_F(SoftFabricTest, MemoryReleasedDuringAnRdmaReadFailsTheRead) {
  // Over a Unix-domain socket a posted READ_REQ is at the responder as
  // soon as the post returns, and 8 MiB cannot fit the socket buffers, so
  // the responder is mid-transfer when its memory goes away. (Cross-memory
  // attach copies in one step; see WindowReleasedBeforeTheCopyFails...)
  Start(CrossMemory(false), CrossMemory(false), UnixAddress());
  Side client, server;
  Connect(client, server);
  constexpr size_t kSize = 8 * 1024 * 1024;
  Memory remote = Register(server, kSize, 1);
  Memory local = Register(client, kSize, 2);
  Memory rx = Register(client, 64);
  ASSERT_TRUE(client.endpoint->PostReceive(9, rx.Slice(0, 64)).ok());
  const RemoteRegion region =
      Bind(server, remote.Slice(0, kSize), kRemoteRead, 1);
  const LocalBuffer into = local.Slice(0, kSize);
  ASSERT_TRUE(client.endpoint->PostRdmaRead(2, {&into, 1}, region).ok());
  server.Drain();  // starts answering
  remote.registration.reset();
  remote.bytes = std::vector<uint8_t>();
  EXPECT_EQ(WaitCompletion(client, 2, {&server}),
            WorkStatus::kRemoteAccessError);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 2; },
                      {&client, &server}));
  EXPECT_EQ(client.CompletionsOf(9)[0].status, WorkStatus::kFlushed);
  // The responder noticed in the middle of the transfer, not at the start.
  EXPECT_THAT(server.events.back().detail,
              ::testing::HasSubstr("during an RDMA Read"));
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

// Cross-memory attach (soft_wire.h). RoundTrip has `initiator` RDMA Write
// `size` octets gathered from three SGEs (one of them empty) into a window
// of `target`'s, then RDMA Read them back into three other SGEs, and
// checks every octet both ways.
void RoundTrip(SoftFabricTest& t, Side& initiator, Side& target, size_t size,
               uint64_t base_id, uint32_t seed) {
  Memory window = t.RegisterFor(target, size + 16, seed);
  Memory out = t.RegisterFor(initiator, size, seed + 1);
  Memory back = t.RegisterFor(initiator, size, seed + 2);
  const RemoteRegion region = t.BindFor(target, window.Slice(8, size),
                                        kRemoteRead | kRemoteWrite, base_id);
  const size_t cut = size / 3;
  const LocalBuffer gather[] = {out.Slice(0, cut), out.Slice(cut, 0),
                                out.Slice(cut, size - cut)};
  ASSERT_TRUE(
      initiator.endpoint->PostRdmaWrite(base_id + 1, gather, region).ok());
  ASSERT_EQ(t.WaitCompletionFor(initiator, base_id + 1, {&target}),
            WorkStatus::kSuccess);
  EXPECT_TRUE(
      std::equal(out.bytes.begin(), out.bytes.end(), window.bytes.begin() + 8));
  const LocalBuffer scatter[] = {back.Slice(0, 1), back.Slice(1, 0),
                                 back.Slice(1, size - 1)};
  ASSERT_TRUE(
      initiator.endpoint->PostRdmaRead(base_id + 2, scatter, region).ok());
  ASSERT_EQ(t.WaitCompletionFor(initiator, base_id + 2, {&target}),
            WorkStatus::kSuccess);
  EXPECT_TRUE(back.bytes == out.bytes);
}

TEST_F(SoftFabricTest, CrossMemoryIsUsedOnlyOverUnixWhenBothSidesOfferIt) {
  struct Case {
    bool client_offers;
    bool server_offers;
    bool unix_socket;
    bool expected;
  };
  for (const Case& c :
       {Case{true, true, true, true}, Case{true, false, true, false},
        Case{false, true, true, false}, Case{false, false, true, false},
        Case{true, true, false, false}}) {
    SCOPED_TRACE(::testing::Message()
                 << c.client_offers << c.server_offers << c.unix_socket);
    Start(CrossMemory(c.client_offers), CrossMemory(c.server_offers),
          c.unix_socket ? UnixAddress() : "tcp:127.0.0.1:0");
    Side client, server;
    Connect(client, server);
    // The answer to the client's offer comes with the ACCEPT.
    EXPECT_EQ(SoftUsesCrossMemory(*client.endpoint), c.expected);
    RoundTrip(*this, client, server, 256 * 1024 + 5, 10, 1);
    // The server's RDMA waited for the answer to its own offer.
    RoundTrip(*this, server, client, 70000, 20, 4);
    EXPECT_EQ(SoftUsesCrossMemory(*server.endpoint), c.expected);
    EXPECT_EQ(SoftUsesCrossMemory(*client.endpoint), c.expected);
    EXPECT_EQ(SoftCrossMemoryOperations(*client.endpoint), c.expected ? 2 : 0);
    EXPECT_EQ(SoftCrossMemoryOperations(*server.endpoint), c.expected ? 2 : 0);
  }
}

TEST_F(SoftFabricTest, FailedProbeFallsBackToTheSocketPath) {
  // The server's probe of the client fails, so the client's RDMA uses the
  // socket; the client's probe of the server works, so the server's RDMA
  // uses cross-memory attach. Then both probes fail.
  SoftFabricOptions failing;
  failing.fail_cross_memory_probe = true;
  Start({}, failing, UnixAddress());
  Side client, server;
  Connect(client, server);
  RoundTrip(*this, client, server, 1 << 20, 10, 1);
  RoundTrip(*this, server, client, 1 << 20, 20, 4);
  EXPECT_FALSE(SoftUsesCrossMemory(*client.endpoint));
  EXPECT_TRUE(SoftUsesCrossMemory(*server.endpoint));
  EXPECT_EQ(SoftCrossMemoryOperations(*client.endpoint), 0u);
  EXPECT_EQ(SoftCrossMemoryOperations(*server.endpoint), 2u);

  Start(failing, failing, UnixAddress());
  Side c2, s2;
  Connect(c2, s2);
  RoundTrip(*this, c2, s2, 100000, 10, 7);
  RoundTrip(*this, s2, c2, 100000, 20, 8);
  EXPECT_FALSE(SoftUsesCrossMemory(*c2.endpoint));
  EXPECT_FALSE(SoftUsesCrossMemory(*s2.endpoint));
  EXPECT_EQ(SoftCrossMemoryOperations(*c2.endpoint), 0u);
  EXPECT_EQ(SoftCrossMemoryOperations(*s2.endpoint), 0u);
}

TEST_F(SoftFabricTest, CrossMemoryWriteIsPlacedBeforeALaterSendArrives) {
  Start({}, {}, UnixAddress());
  Side client, server;
  Connect(client, server);
  ASSERT_TRUE(SoftUsesCrossMemory(*client.endpoint));
  constexpr size_t kSize = 4 * 1024 * 1024;
  Memory window = Register(server, kSize, 1);
  Memory rx = Register(server, 64);
  Memory tx = Register(client, kSize, 2);
  Memory back = Register(client, kSize, 3);
  const RemoteRegion region =
      Bind(server, window.Slice(0, kSize), kRemoteRead | kRemoteWrite, 1);
  ASSERT_TRUE(server.endpoint->PostReceive(2, rx.Slice(0, 64)).ok());
  const LocalBuffer all = tx.Slice(0, kSize);
  const LocalBuffer none = tx.Slice(0, 0);
  const LocalBuffer into = back.Slice(0, kSize);
  const LocalBuffer note = tx.Slice(0, 8);
  const RemoteRegion empty{region.handle, region.offset, 0};
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(3, {&all, 1}, region).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(4, {&none, 1}, empty).ok());
  ASSERT_TRUE(client.endpoint->PostSend(5, {&note, 1}).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaRead(6, {&into, 1}, region).ok());
  ASSERT_EQ(WaitCompletion(server, 2, {&client}), WorkStatus::kSuccess);
  // When the Send's receive completes, the Write before it is in place.
  EXPECT_TRUE(window.bytes == tx.bytes);
  ASSERT_EQ(WaitCompletion(client, 6, {&server}), WorkStatus::kSuccess);
  EXPECT_TRUE(back.bytes == tx.bytes);
  // Completions in posting order.
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 4; },
                      {&client, &server}));
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(client.completions[i].wr_id, i + 3);
    EXPECT_EQ(client.completions[i].status, WorkStatus::kSuccess);
  }
}

TEST_F(SoftFabricTest, WindowInvalidatedBeforeTheCrossMemoryCopyFails) {
  // The request is at the responder, not yet handled, when the window
  // dies: the responder re-checks its window table right before copying.
  for (bool read : {true, false}) {
    SCOPED_TRACE(read ? "read" : "write");
    Start(CrossMemoryForAll(), CrossMemoryForAll(), UnixAddress());
    Side client, server;
    Connect(client, server);
    ASSERT_TRUE(SoftUsesCrossMemory(*client.endpoint));
    Memory window = Register(server, 4096, 1);
    Memory local = Register(client, 4096, 2);
    const std::vector<uint8_t> window_before = window.bytes;
    const std::vector<uint8_t> local_before = local.bytes;
    const RemoteRegion region =
        Bind(server, window.Slice(0, 4096), kRemoteRead | kRemoteWrite, 1);
    const LocalBuffer buf = local.Slice(0, 4096);
    ASSERT_TRUE((read ? client.endpoint->PostRdmaRead(2, {&buf, 1}, region)
                      : client.endpoint->PostRdmaWrite(2, {&buf, 1}, region))
                    .ok());
    ASSERT_TRUE(server.endpoint->InvalidateWindow(3, region.handle).ok());
    EXPECT_EQ(WaitCompletion(client, 2, {&server}),
              WorkStatus::kRemoteAccessError);
    ExpectBroken(client, server);
    EXPECT_TRUE(window.bytes == window_before);
    EXPECT_TRUE(local.bytes == local_before);
    EXPECT_THAT(server.events.back().detail,
                ::testing::HasSubstr("remote access error"));
    EXPECT_EQ(SoftCrossMemoryOperations(*client.endpoint), 1u);
  }
}

TEST_F(SoftFabricTest, InitiatorMemoryGoneFailsOnlyTheInitiator) {
  // The initiator unmaps the memory of a posted RDMA Write (breaking its
  // contract); the responder's copy faults on the initiator's side only,
  // the Write fails with kLocalProtectionError and the window is intact.
  Start(CrossMemoryForAll(), CrossMemoryForAll(), UnixAddress());
  Side client, server;
  Connect(client, server);
  ASSERT_TRUE(SoftUsesCrossMemory(*client.endpoint));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mapped = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  absl::Span<uint8_t> bytes(static_cast<uint8_t*>(mapped), 2 * page);
  std::fill(bytes.begin(), bytes.end(), 0x5a);
  absl::StatusOr<std::unique_ptr<Registration>> reg =
      client.endpoint->Register(bytes);
  ASSERT_TRUE(reg.ok()) << reg.status();
  Memory window = Register(server, 2 * page, 1);
  const std::vector<uint8_t> window_before = window.bytes;
  const RemoteRegion region =
      Bind(server, window.Slice(0, 2 * page), kRemoteWrite, 1);
  const LocalBuffer from{reg->get(), 0, 2 * page};
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(2, {&from, 1}, region).ok());
  ASSERT_EQ(munmap(mapped, 2 * page), 0);
  EXPECT_EQ(WaitCompletion(client, 2, {&server}),
            WorkStatus::kLocalProtectionError);
  ExpectBroken(client, server);
  EXPECT_TRUE(window.bytes == window_before);
  EXPECT_THAT(server.events.back().detail,
              ::testing::HasSubstr("cross-memory copy failed"));
}

// The client of RequestOfAnExitedProcessIsNotCopied: learns a window from
// the server's Send, posts an RDMA Write into it and exits at once.
int WriteAndExit(const std::string& address) {
  std::unique_ptr<Fabric> fabric = MakeSoftFabric(CrossMemoryForAll());
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      fabric->Connect(address, {}, {});
  if (!ep.ok()) return 2;
  client.endpoint = *std::move(ep);
  // The receive is posted before the server can send.
  std::vector<uint8_t> msg(64), data(4096, 0xee);
  absl::StatusOr<std::unique_ptr<Registration>> msg_reg =
      client.endpoint->Register(absl::MakeSpan(msg));
  absl::StatusOr<std::unique_ptr<Registration>> data_reg =
      client.endpoint->Register(absl::MakeSpan(data));
  if (!msg_reg.ok() || !data_reg.ok()) return 5;
  if (!client.endpoint->PostReceive(1, {msg_reg->get(), 0, 64}).ok()) return 6;
  if (!WaitFor([&] { return !client.events.empty(); }, {&client}) ||
      client.events[0].type != ConnectionEventType::kEstablished) {
    return 3;
  }
  if (!SoftUsesCrossMemory(*client.endpoint)) return 4;
  if (!WaitFor([&] { return !client.completions.empty(); }, {&client}) ||
      client.completions[0].status != WorkStatus::kSuccess) {
    return 7;
  }
  RemoteRegion to;
  std::memcpy(&to, msg.data(), sizeof(to));
  const LocalBuffer all{data_reg->get(), 0, data.size()};
  if (!client.endpoint->PostRdmaWrite(2, {&all, 1}, to).ok()) return 8;
  return SoftCrossMemoryOperations(*client.endpoint) == 1 ? 0 : 9;
}

TEST_F(SoftFabricTest, RequestOfAnExitedProcessIsNotCopied) {
  // The responder handles a WRITE_CMA only after its initiator has exited
  // (its pid could name another process by then): nothing is copied and
  // the connection breaks.
  Start({}, {}, UnixAddress());
  const std::string address = listener_->address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(WriteAndExit(address));
  Side server;
  std::unique_ptr<ConnectRequest> request;
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
            listener_->PollConnectRequest();
        if (r.ok() && *r != nullptr) request = *std::move(r);
        return request != nullptr;
      },
      {}, listener_.get()));
  absl::StatusOr<std::unique_ptr<Endpoint>> ep = request->Accept({}, {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  server.endpoint = *std::move(ep);
  Memory window = Register(server, 4096, 1);
  Memory msg = Register(server, 64);
  const std::vector<uint8_t> window_before = window.bytes;
  const RemoteRegion region =
      Bind(server, window.Slice(0, 4096), kRemoteWrite, 1);
  std::memcpy(msg.bytes.data(), &region, sizeof(region));
  const LocalBuffer m = msg.Slice(0, 64);
  ASSERT_TRUE(server.endpoint->PostSend(2, {&m, 1}).ok());
  // The server reads nothing more until the client has exited.
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(WaitFor(
      [&] { return server.HasEvent(ConnectionEventType::kDisconnected); },
      {&server}));
  EXPECT_THAT(server.events.back().detail, ::testing::HasSubstr("exited"));
  EXPECT_TRUE(window.bytes == window_before);
}

TEST_F(SoftFabricTest, ShortTransfersStayOnTheSocketPath) {
  // Below cross_memory_min_length (8 KiB by default) RDMA goes through the
  // socket even when cross-memory attach is in use.
  SoftFabricOptions defaults;
  ASSERT_EQ(defaults.cross_memory_min_length, 8192u);
  Start({}, {}, UnixAddress());
  Side client, server;
  Connect(client, server);
  ASSERT_TRUE(SoftUsesCrossMemory(*client.endpoint));
  Memory window = Register(server, 8192, 1);
  Memory local = Register(client, 8192, 2);
  const RemoteRegion region =
      Bind(server, window.Slice(0, 8192), kRemoteRead | kRemoteWrite, 1);
  ASSERT_NE(window.bytes, local.bytes);
  const LocalBuffer short_buf = local.Slice(0, 8191);
  const RemoteRegion short_region{region.handle, region.offset, 8191};
  ASSERT_TRUE(
      client.endpoint->PostRdmaWrite(2, {&short_buf, 1}, short_region).ok());
  ASSERT_EQ(WaitCompletion(client, 2, {&server}), WorkStatus::kSuccess);
  ASSERT_TRUE(
      client.endpoint->PostRdmaRead(3, {&short_buf, 1}, short_region).ok());
  ASSERT_EQ(WaitCompletion(client, 3, {&server}), WorkStatus::kSuccess);
  EXPECT_EQ(SoftCrossMemoryOperations(*client.endpoint), 0u);
  const LocalBuffer full = local.Slice(0, 8192);
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(4, {&full, 1}, region).ok());
  ASSERT_EQ(WaitCompletion(client, 4, {&server}), WorkStatus::kSuccess);
  EXPECT_EQ(SoftCrossMemoryOperations(*client.endpoint), 1u);
  EXPECT_TRUE(window.bytes == local.bytes);
  // With no minimum, a single octet goes by cross-memory attach.
  Start(CrossMemoryForAll(), CrossMemoryForAll(), UnixAddress());
  Side c2, s2;
  Connect(c2, s2);
  Memory w2 = Register(s2, 1, 3);
  Memory l2 = Register(c2, 1, 4);
  const RemoteRegion r2 = Bind(s2, w2.Slice(0, 1), kRemoteRead, 1);
  ASSERT_NE(l2.bytes, w2.bytes);
  const LocalBuffer one = l2.Slice(0, 1);
  ASSERT_TRUE(c2.endpoint->PostRdmaRead(2, {&one, 1}, r2).ok());
  ASSERT_EQ(WaitCompletion(c2, 2, {&s2}), WorkStatus::kSuccess);
  EXPECT_EQ(SoftCrossMemoryOperations(*c2.endpoint), 1u);
  EXPECT_EQ(l2.bytes, w2.bytes);
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
}  // namespace rpcrdma::fabric::testing
