// The soft fabric between processes: peers in two processes, memory that
// goes away during a transfer, and the negotiation and use of cross-memory
// attach (the process that asks, the process that exits).
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
using fabric::Fabric;
using fabric::kRemoteRead;
using fabric::kRemoteWrite;
using fabric::Listener;
using fabric::LocalBuffer;
using fabric::Registration;
using fabric::RemoteRegion;
using fabric::SoftFabricOptions;
using fabric::WorkStatus;

namespace {

// The peer process of PeersInSeparateProcesses: accepts one connection,
// learns two windows of the client's from its first message, RDMA Reads
// the first, RDMA Writes the octets back into the second, and reports with
// a Send. Returns the process exit status (0 on success).
int EchoServer(const std::string& address, bool cross_memory) {
  std::unique_ptr<Fabric> fabric = MakeSoftFabric(CrossMemory(cross_memory));
  absl::StatusOr<std::unique_ptr<Listener>> listener = fabric->Listen(address);
  if (!listener.ok()) return 2;
  Side server;
  std::unique_ptr<ConnectRequest> request = NextConnectRequest(**listener);
  if (request == nullptr) return 3;
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

}  // namespace

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

namespace {

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
  std::unique_ptr<ConnectRequest> request = NextConnectRequest(*listener_);
  ASSERT_NE(request, nullptr);
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

}  // namespace
}  // namespace rpcrdma::test
