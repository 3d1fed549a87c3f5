#include "tests/fabric/fabric_conformance.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "gmock/gmock.h"

namespace rpcrdma::test {

using fabric::Capabilities;
using fabric::Completion;
using fabric::ConnectionEvent;
using fabric::ConnectionEventType;
using fabric::ConnectRequest;
using fabric::Endpoint;
using fabric::EndpointOptions;
using fabric::kRemoteRead;
using fabric::kRemoteWrite;
using fabric::Listener;
using fabric::LocalBuffer;
using fabric::Registration;
using fabric::RemoteRegion;
using fabric::WorkStatus;
using fabric::WorkType;

void Side::Drain() {
  if (endpoint == nullptr) return;
  std::array<Completion, 32> batch;
  while (true) {
    const size_t n = endpoint->PollCompletions(absl::MakeSpan(batch));
    completions.insert(completions.end(), batch.begin(),
                       batch.begin() + static_cast<ptrdiff_t>(n));
    if (n < batch.size()) break;
  }
  while (std::optional<ConnectionEvent> ev = endpoint->PollConnectionEvent()) {
    events.push_back(*std::move(ev));
  }
}

bool Side::HasEvent(ConnectionEventType type) const {
  return std::any_of(
      events.begin(), events.end(),
      [type](const ConnectionEvent& e) { return e.type == type; });
}

std::vector<Completion> Side::CompletionsOf(uint64_t wr_id) const {
  std::vector<Completion> out;
  for (const Completion& c : completions) {
    if (c.wr_id == wr_id) out.push_back(c);
  }
  return out;
}

bool WaitFor(const std::function<bool()>& done, std::vector<Side*> sides,
             Listener* listener, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (Side* s : sides) s->Drain();
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::vector<pollfd> fds;
    for (Side* s : sides) {
      if (s->endpoint != nullptr) {
        fds.push_back(pollfd{s->endpoint->event_fd(), POLLIN, 0});
      }
    }
    if (listener != nullptr) {
      fds.push_back(pollfd{listener->event_fd(), POLLIN, 0});
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int slice = static_cast<int>(std::min<int64_t>(left.count(), 100));
    poll(fds.data(), fds.size(), std::max(slice, 1));
  }
}

std::unique_ptr<ConnectRequest> NextConnectRequest(Listener& listener,
                                                   std::vector<Side*> sides) {
  std::unique_ptr<ConnectRequest> request;
  WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
            listener.PollConnectRequest();
        if (r.ok() && *r != nullptr) request = *std::move(r);
        return request != nullptr;
      },
      std::move(sides), &listener);
  return request;
}

void FillPattern(absl::Span<uint8_t> bytes, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (uint8_t& b : bytes) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
}

void PrintTo(const FabricFactory& factory, std::ostream* os) {
  *os << factory.name;
}

std::string FactoryName(const ::testing::TestParamInfo<FabricFactory>& info) {
  return info.param.name;
}

void FabricConformanceTest::SetUp() {
  client_fabric_ = GetParam().make_client();
  server_fabric_ = GetParam().make_server();
  ASSERT_NE(client_fabric_, nullptr);
  ASSERT_NE(server_fabric_, nullptr);
  absl::StatusOr<std::unique_ptr<Listener>> listener =
      server_fabric_->Listen(GetParam().listen_address());
  ASSERT_TRUE(listener.ok()) << listener.status();
  listener_ = *std::move(listener);
}

void FabricConformanceTest::Connect(
    Side& client, Side& server, std::vector<uint8_t> connect_data,
    std::vector<uint8_t> accept_data, const EndpointOptions& options,
    std::optional<EndpointOptions> server_options) {
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), connect_data, options);
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  std::unique_ptr<ConnectRequest> request;
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
            listener_->PollConnectRequest();
        EXPECT_TRUE(r.ok()) << r.status();
        if (r.ok() && *r != nullptr) request = *std::move(r);
        return request != nullptr;
      },
      {&client}, listener_.get()));
  ASSERT_GE(request->private_data().size(), connect_data.size());
  EXPECT_TRUE(std::equal(connect_data.begin(), connect_data.end(),
                         request->private_data().begin()));
  absl::StatusOr<std::unique_ptr<Endpoint>> accepted =
      request->Accept(accept_data, server_options.value_or(options));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  server.endpoint = *std::move(accepted);
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.HasEvent(ConnectionEventType::kEstablished) &&
               server.HasEvent(ConnectionEventType::kEstablished);
      },
      {&client, &server}));
  ASSERT_EQ(client.events.size(), 1u);
  ASSERT_GE(client.events[0].private_data.size(), accept_data.size());
  EXPECT_TRUE(std::equal(accept_data.begin(), accept_data.end(),
                         client.events[0].private_data.begin()));
}

Memory FabricConformanceTest::Register(Side& side, size_t size, uint32_t seed) {
  Memory m;
  m.bytes.resize(size);
  FillPattern(absl::MakeSpan(m.bytes), seed);
  absl::StatusOr<std::unique_ptr<Registration>> r =
      side.endpoint->Register(absl::MakeSpan(m.bytes));
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) m.registration = *std::move(r);
  return m;
}

RemoteRegion FabricConformanceTest::Bind(Side& side, const LocalBuffer& buffer,
                                         uint32_t access, uint64_t wr_id) {
  absl::StatusOr<RemoteRegion> region =
      side.endpoint->BindWindow(wr_id, buffer, access);
  EXPECT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(WaitCompletion(side, wr_id, {}), WorkStatus::kSuccess);
  return region.ok() ? *region : RemoteRegion{};
}

WorkStatus FabricConformanceTest::WaitCompletion(Side& side, uint64_t wr_id,
                                                 std::vector<Side*> others) {
  others.push_back(&side);
  const bool done =
      WaitFor([&] { return !side.CompletionsOf(wr_id).empty(); }, others);
  EXPECT_TRUE(done) << "no completion for wr_id " << wr_id;
  if (!done) return WorkStatus::kTransportError;
  std::vector<Completion> c = side.CompletionsOf(wr_id);
  EXPECT_EQ(c.size(), 1u);
  return c[0].status;
}

void FabricConformanceTest::ExpectBroken(Side& a, Side& b) {
  EXPECT_TRUE(WaitFor(
      [&] {
        return a.HasEvent(ConnectionEventType::kDisconnected) &&
               b.HasEvent(ConnectionEventType::kDisconnected);
      },
      {&a, &b}));
}

namespace {

using ::testing::ElementsAreArray;

// Every id in `ids` completed exactly once on `side`, and nothing else did.
void ExpectExactlyOnce(const Side& side, const std::vector<uint64_t>& ids) {
  std::map<uint64_t, int> seen;
  for (const Completion& c : side.completions) ++seen[c.wr_id];
  for (uint64_t id : ids) {
    EXPECT_EQ(seen[id], 1) << "wr_id " << id;
  }
  EXPECT_EQ(side.completions.size(), ids.size());
}

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  FillPattern(absl::MakeSpan(v), seed);
  return v;
}

TEST_P(FabricConformanceTest, ConnectAcceptCarriesPrivateDataBothWays) {
  Side client, server;
  // RFC 8797 §5.2: private data rides on connect and accept. The IB CM
  // (and so rdma-cm on InfiniBand and RoCE) carries at most 56 octets in a
  // connect request and 196 in an accept; use exactly those.
  ASSERT_NO_FATAL_FAILURE(Connect(client, server, Bytes(56, 1), Bytes(196, 2)));
  const Capabilities& caps = client.endpoint->capabilities();
  EXPECT_FALSE(caps.device_name.empty());
  EXPECT_GE(caps.max_send_sge, 1u);
  EXPECT_GE(caps.max_recv_sge, 1u);
  EXPECT_GE(caps.max_send_queue, 1u);
  EXPECT_GE(caps.max_recv_queue, 1u);
  EXPECT_GT(caps.max_message_size, 1024u);
  // The negotiated read depths cannot exceed what was asked for.
  EXPECT_LE(caps.initiator_depth, EndpointOptions{}.initiator_depth);
  EXPECT_LE(caps.responder_resources, EndpointOptions{}.responder_resources);
  EXPECT_LE(server.endpoint->capabilities().initiator_depth,
            EndpointOptions{}.initiator_depth);
}

TEST_P(FabricConformanceTest, NegotiatesReadDepthsAcrossTheConnection) {
  Side client, server;
  EndpointOptions options;
  options.initiator_depth = 3;
  options.responder_resources = 5;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server, {}, {}, options));
  // Each side's ORD is bounded by the other's IRD.
  EXPECT_LE(client.endpoint->capabilities().initiator_depth, 3u);
  EXPECT_LE(server.endpoint->capabilities().initiator_depth, 3u);
  EXPECT_LE(client.endpoint->capabilities().responder_resources, 5u);
}

TEST_P(FabricConformanceTest, ReadsBeyondTheNegotiatedDepthWaitTheirTurn) {
  Side client, server;
  EndpointOptions server_options;
  server_options.responder_resources = 2;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server, {}, {}, {}, server_options));
  ASSERT_EQ(client.endpoint->capabilities().initiator_depth, 2u);
  constexpr size_t kPiece = 512 * 1024;
  constexpr int kReads = 8;
  Memory remote = Register(server, kPiece * kReads, 4);
  Memory local = Register(client, kPiece * kReads, 5);
  Memory tx = Register(client, 16);
  Memory rx = Register(server, 16);
  ASSERT_TRUE(server.endpoint->PostReceive(99, rx.Slice(0, 16)).ok());
  const RemoteRegion region =
      Bind(server, remote.Slice(0, kPiece * kReads), kRemoteRead, 1);
  for (int i = 0; i < kReads; ++i) {
    RemoteRegion piece = region;
    piece.offset += i * kPiece;
    piece.length = kPiece;
    const LocalBuffer into = local.Slice(i * kPiece, kPiece);
    ASSERT_TRUE(client.endpoint->PostRdmaRead(10 + i, {&into, 1}, piece).ok());
  }
  // A Send behind the reads is ordered after them.
  const LocalBuffer msg = tx.Slice(0, 16);
  ASSERT_TRUE(client.endpoint->PostSend(50, {&msg, 1}).ok());
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == kReads + 1; },
                      {&client, &server}));
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(client.completions[i].wr_id, 10u + i);
    EXPECT_EQ(client.completions[i].status, WorkStatus::kSuccess);
  }
  EXPECT_EQ(client.completions[kReads].wr_id, 50u);
  EXPECT_EQ(client.completions[kReads].status, WorkStatus::kSuccess);
  EXPECT_TRUE(local.bytes == remote.bytes);
  EXPECT_FALSE(server.HasEvent(ConnectionEventType::kDisconnected));
}

TEST_P(FabricConformanceTest, RejectCarriesPrivateData) {
  Side client;
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      client_fabric_->Connect(listener_->address(), Bytes(20, 3), {});
  ASSERT_TRUE(ep.ok()) << ep.status();
  client.endpoint = *std::move(ep);
  Memory m = Register(client, 64);
  ASSERT_TRUE(client.endpoint->PostReceive(7, m.Slice(0, 64)).ok());
  std::unique_ptr<ConnectRequest> request =
      NextConnectRequest(*listener_, {&client});
  ASSERT_NE(request, nullptr);
  const std::vector<uint8_t> reject = Bytes(17, 4);
  ASSERT_TRUE(request->Reject(reject).ok());
  EXPECT_FALSE(request->Accept({}, {}).ok());
  ASSERT_TRUE(
      WaitFor([&] { return client.HasEvent(ConnectionEventType::kRejected); },
              {&client}));
  ASSERT_EQ(client.events.size(), 1u);
  const std::vector<uint8_t>& got = client.events[0].private_data;
  ASSERT_GE(got.size(), reject.size());
  EXPECT_TRUE(std::equal(reject.begin(), reject.end(), got.begin()));
  // The receive posted while connecting is flushed, once.
  ASSERT_TRUE(WaitFor([&] { return !client.completions.empty(); }, {&client}));
  ExpectExactlyOnce(client, {7});
  EXPECT_EQ(client.completions[0].status, WorkStatus::kFlushed);
}

TEST_P(FabricConformanceTest, HundredSendsArriveInOrder) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  constexpr int kCount = 100;
  constexpr size_t kSlot = 128;
  Memory rx = Register(server, kCount * kSlot);
  Memory tx = Register(client, kCount * kSlot, 9);
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(
        server.endpoint->PostReceive(1000 + i, rx.Slice(i * kSlot, kSlot))
            .ok());
  }
  for (int i = 0; i < kCount; ++i) {
    // Message i is 1 + i octets long, from its own slot.
    const LocalBuffer gather = tx.Slice(i * kSlot, 1 + i);
    ASSERT_TRUE(client.endpoint->PostSend(i, {&gather, 1}).ok());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.completions.size() == kCount &&
               server.completions.size() == kCount;
      },
      {&client, &server}));
  for (int i = 0; i < kCount; ++i) {
    const Completion& s = client.completions[i];
    EXPECT_EQ(s.wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(s.type, WorkType::kSend);
    EXPECT_EQ(s.status, WorkStatus::kSuccess);
    const Completion& r = server.completions[i];
    EXPECT_EQ(r.wr_id, 1000u + i);
    EXPECT_EQ(r.type, WorkType::kReceive);
    EXPECT_EQ(r.status, WorkStatus::kSuccess);
    EXPECT_EQ(r.byte_length, 1u + i);
    EXPECT_FALSE(r.invalidated_handle.has_value());
    EXPECT_EQ(std::memcmp(&rx.bytes[i * kSlot], &tx.bytes[i * kSlot], 1 + i), 0)
        << "message " << i;
  }
  EXPECT_FALSE(server.HasEvent(ConnectionEventType::kDisconnected));
}

TEST_P(FabricConformanceTest, SendGathersSeveralElements) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory rx = Register(server, 4096);
  Memory tx = Register(client, 4096, 5);
  ASSERT_TRUE(server.endpoint->PostReceive(1, rx.Slice(3, 1000)).ok());
  const LocalBuffer gather[] = {tx.Slice(1, 5), tx.Slice(999, 333),
                                tx.Slice(17, 0), tx.Slice(2000, 100)};
  ASSERT_TRUE(client.endpoint->PostSend(2, gather).ok());
  ASSERT_EQ(WaitCompletion(server, 1, {&client}), WorkStatus::kSuccess);
  EXPECT_EQ(server.completions[0].byte_length, 438u);
  std::vector<uint8_t> expected;
  for (const LocalBuffer& g : gather) {
    expected.insert(expected.end(), tx.bytes.begin() + g.offset,
                    tx.bytes.begin() + g.offset + g.length);
  }
  EXPECT_THAT(
      std::vector<uint8_t>(rx.bytes.begin() + 3, rx.bytes.begin() + 3 + 438),
      ElementsAreArray(expected));
  EXPECT_EQ(WaitCompletion(client, 2, {&server}), WorkStatus::kSuccess);
}

TEST_P(FabricConformanceTest, SendLargerThanReceiveBreaksTheConnection) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory rx = Register(server, 256);
  Memory tx = Register(client, 256);
  ASSERT_TRUE(server.endpoint->PostReceive(1, rx.Slice(0, 16)).ok());
  ASSERT_TRUE(server.endpoint->PostReceive(2, rx.Slice(16, 64)).ok());
  const LocalBuffer gather = tx.Slice(0, 17);
  ASSERT_TRUE(client.endpoint->PostSend(10, {&gather, 1}).ok());
  EXPECT_EQ(WaitCompletion(server, 1, {&client}),
            WorkStatus::kLocalLengthError);
  EXPECT_EQ(WaitCompletion(client, 10, {&server}),
            WorkStatus::kRemoteInvalidRequest);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return server.completions.size() == 2; },
                      {&client, &server}));
  EXPECT_EQ(server.CompletionsOf(2)[0].status, WorkStatus::kFlushed);
  ExpectExactlyOnce(server, {1, 2});
  ExpectExactlyOnce(client, {10});
}

TEST_P(FabricConformanceTest, SendWithNoReceivePostedIsReceiverNotReady) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory tx = Register(client, 64);
  Memory rx = Register(client, 64);
  ASSERT_TRUE(client.endpoint->PostReceive(5, rx.Slice(0, 64)).ok());
  const LocalBuffer gather = tx.Slice(0, 8);
  ASSERT_TRUE(client.endpoint->PostSend(6, {&gather, 1}).ok());
  EXPECT_EQ(WaitCompletion(client, 6, {&server}),
            WorkStatus::kReceiverNotReady);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 2; },
                      {&client, &server}));
  EXPECT_EQ(client.CompletionsOf(5)[0].status, WorkStatus::kFlushed);
  ExpectExactlyOnce(client, {5, 6});
  EXPECT_TRUE(server.completions.empty());
}

struct TransferShape {
  size_t window_offset;             // where the window starts in its memory
  std::vector<size_t> sge_offsets;  // local SGEs, in local memory
  std::vector<size_t> sge_lengths;
};

size_t Total(const TransferShape& shape) {
  size_t n = 0;
  for (size_t l : shape.sge_lengths) n += l;
  return n;
}

std::vector<TransferShape> Shapes() {
  constexpr size_t kMiB = 1024 * 1024;
  return {
      {0, {0}, {1}},
      {3, {5}, {7}},
      {1, {1, 100, 7000}, {13, 4099, 1}},
      {4093, {3, 70001}, {65537, 3}},
      // 4 MiB in three elements at odd places.
      {7, {1, 2 * kMiB + 5, 3 * kMiB + 11}, {2 * kMiB - 3, kMiB + 1, kMiB + 2}},
  };
}

TEST_P(FabricConformanceTest, RdmaReadScattersAtOddOffsetsUpTo4MiB) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  constexpr size_t kSize = 5 * 1024 * 1024;
  Memory remote = Register(server, kSize, 21);
  Memory local = Register(client, kSize, 22);
  uint64_t wr_id = 100;
  for (const TransferShape& shape : Shapes()) {
    const size_t total = Total(shape);
    const RemoteRegion region = Bind(
        server, remote.Slice(shape.window_offset, total), kRemoteRead, ++wr_id);
    EXPECT_EQ(region.length, total);
    std::vector<LocalBuffer> scatter;
    for (size_t i = 0; i < shape.sge_offsets.size(); ++i) {
      scatter.push_back(
          local.Slice(shape.sge_offsets[i], shape.sge_lengths[i]));
    }
    const std::vector<uint8_t> before = local.bytes;
    ASSERT_TRUE(client.endpoint->PostRdmaRead(++wr_id, scatter, region).ok());
    ASSERT_EQ(WaitCompletion(client, wr_id, {&server}), WorkStatus::kSuccess)
        << "read of " << total;
    EXPECT_EQ(client.CompletionsOf(wr_id)[0].type, WorkType::kRdmaRead);
    // Every octet landed where it belongs, and nothing else changed.
    std::vector<uint8_t> expected = before;
    size_t src = shape.window_offset;
    for (const LocalBuffer& s : scatter) {
      std::copy_n(remote.bytes.begin() + src, s.length,
                  expected.begin() + s.offset);
      src += s.length;
    }
    EXPECT_TRUE(expected == local.bytes) << "read of " << total;
    ASSERT_TRUE(server.endpoint->InvalidateWindow(++wr_id, region.handle).ok());
    EXPECT_EQ(WaitCompletion(server, wr_id, {&client}), WorkStatus::kSuccess);
  }
  EXPECT_FALSE(client.HasEvent(ConnectionEventType::kDisconnected));
}

TEST_P(FabricConformanceTest, RdmaWriteGathersAtOddOffsetsUpTo4MiB) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  constexpr size_t kSize = 5 * 1024 * 1024;
  Memory remote = Register(server, kSize, 31);
  Memory local = Register(client, kSize, 32);
  uint64_t wr_id = 200;
  for (const TransferShape& shape : Shapes()) {
    const size_t total = Total(shape);
    const RemoteRegion region =
        Bind(server, remote.Slice(shape.window_offset, total), kRemoteWrite,
             ++wr_id);
    std::vector<LocalBuffer> gather;
    std::vector<uint8_t> expected = remote.bytes;
    size_t dst = shape.window_offset;
    for (size_t i = 0; i < shape.sge_offsets.size(); ++i) {
      gather.push_back(local.Slice(shape.sge_offsets[i], shape.sge_lengths[i]));
      std::copy_n(local.bytes.begin() + shape.sge_offsets[i],
                  shape.sge_lengths[i], expected.begin() + dst);
      dst += shape.sge_lengths[i];
    }
    ASSERT_TRUE(client.endpoint->PostRdmaWrite(++wr_id, gather, region).ok());
    ASSERT_EQ(WaitCompletion(client, wr_id, {&server}), WorkStatus::kSuccess)
        << "write of " << total;
    EXPECT_EQ(client.CompletionsOf(wr_id)[0].type, WorkType::kRdmaWrite);
    EXPECT_TRUE(expected == remote.bytes) << "write of " << total;
    ASSERT_TRUE(server.endpoint->InvalidateWindow(++wr_id, region.handle).ok());
    EXPECT_EQ(WaitCompletion(server, wr_id, {&client}), WorkStatus::kSuccess);
    FillPattern(absl::MakeSpan(local.bytes), static_cast<uint32_t>(wr_id));
  }
}

TEST_P(FabricConformanceTest, WriteThenSendIsOrdered) {
  // A Send posted after an RDMA Write finds the written data in place when
  // its receive completes (RC ordering; RFC 8166 §3.4 relies on it).
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory remote = Register(server, 300000, 1);
  Memory rx = Register(server, 64);
  Memory local = Register(client, 300000, 2);
  const RemoteRegion region =
      Bind(server, remote.Slice(0, 300000), kRemoteWrite, 1);
  ASSERT_TRUE(server.endpoint->PostReceive(2, rx.Slice(0, 64)).ok());
  const LocalBuffer all = local.Slice(0, 300000);
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(3, {&all, 1}, region).ok());
  const LocalBuffer msg = local.Slice(0, 4);
  ASSERT_TRUE(client.endpoint->PostSend(4, {&msg, 1}).ok());
  ASSERT_TRUE(WaitFor([&] { return !server.CompletionsOf(2).empty(); },
                      {&client, &server}));
  EXPECT_TRUE(remote.bytes == local.bytes);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 2; },
                      {&client, &server}));
  EXPECT_EQ(client.completions[0].wr_id, 3u);
  EXPECT_EQ(client.completions[1].wr_id, 4u);
}

// Remote access violations: each fails the initiator's operation with
// kRemoteAccessError and breaks the connection for both sides, flushing the
// rest of their work (RFC 8166 §3.4.5 relies on this fencing).
TEST_P(FabricConformanceTest, ReadWithWrongHandleIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteRead, /*read=*/true, [](RemoteRegion r) {
    r.handle ^= 0x5a5a5a00;
    return r;
  });
}

TEST_P(FabricConformanceTest, WriteWithWrongHandleIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteWrite, /*read=*/false, [](RemoteRegion r) {
    r.handle += 1;  // the same slot with another key
    return r;
  });
}

TEST_P(FabricConformanceTest, ReadPastTheEndIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteRead, /*read=*/true, [](RemoteRegion r) {
    r.offset += 1;  // the last octet falls outside
    return r;
  });
}

TEST_P(FabricConformanceTest, WritePastTheEndIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteWrite, /*read=*/false, [](RemoteRegion r) {
    r.length += 1;
    return r;
  });
}

TEST_P(FabricConformanceTest, ReadBeforeTheStartIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteRead, /*read=*/true, [](RemoteRegion r) {
    r.offset -= 1;
    return r;
  });
}

TEST_P(FabricConformanceTest, WriteWithWrappingAddressIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteWrite | kRemoteRead, /*read=*/false,
                        [](RemoteRegion r) {
                          r.offset = std::numeric_limits<uint64_t>::max() - 2;
                          return r;
                        });
}

TEST_P(FabricConformanceTest, WriteToReadOnlyWindowIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteRead, /*read=*/false,
                        [](RemoteRegion r) { return r; });
}

TEST_P(FabricConformanceTest, ReadFromWriteOnlyWindowIsRemoteAccessError) {
  ExpectAccessViolation(kRemoteWrite, /*read=*/true,
                        [](RemoteRegion r) { return r; });
}

TEST_P(FabricConformanceTest, ReadAfterInvalidationIsRemoteAccessError) {
  ExpectAccessViolation(
      kRemoteRead, /*read=*/true, [](RemoteRegion r) { return r; },
      /*invalidate_first=*/true);
}

TEST_P(FabricConformanceTest, WriteAfterInvalidationIsRemoteAccessError) {
  ExpectAccessViolation(
      kRemoteWrite, /*read=*/false, [](RemoteRegion r) { return r; },
      /*invalidate_first=*/true);
}

TEST_P(FabricConformanceTest, WindowsHaveFreshHandles) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory m = Register(server, 4096);
  std::set<uint32_t> handles;
  for (uint64_t i = 0; i < 50; ++i) {
    const RemoteRegion r = Bind(server, m.Slice(100, 200), kRemoteRead, 2 * i);
    EXPECT_EQ(r.length, 200u);
    EXPECT_TRUE(handles.insert(r.handle).second) << "handle reused";
    ASSERT_TRUE(server.endpoint->InvalidateWindow(2 * i + 1, r.handle).ok());
    EXPECT_EQ(WaitCompletion(server, 2 * i + 1, {&client}),
              WorkStatus::kSuccess);
  }
  for (const Completion& c : server.completions) {
    EXPECT_EQ(c.type, c.wr_id % 2 == 0 ? WorkType::kBindWindow
                                       : WorkType::kLocalInvalidate);
  }
}

// RFC 8166 §3.4.6 / RFC 8797: a responder invalidates the requester's
// window with Send With Invalidate; the receive reports the handle and the
// window is dead afterwards.
TEST_P(FabricConformanceTest, SendWithInvalidateKillsTheReceiversWindow) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  if (!client.endpoint->capabilities().remote_invalidation) {
    GTEST_SKIP() << "provider has no remote invalidation";
  }
  Memory window_mem = Register(client, 8192, 3);
  Memory rx = Register(client, 256);
  Memory tx = Register(server, 8192);
  const RemoteRegion region =
      Bind(client, window_mem.Slice(11, 5000), kRemoteRead | kRemoteWrite, 1);
  ASSERT_TRUE(client.endpoint->PostReceive(2, rx.Slice(0, 256)).ok());
  ASSERT_TRUE(client.endpoint->PostReceive(3, rx.Slice(0, 256)).ok());
  // The window works before the invalidation.
  const LocalBuffer into = tx.Slice(0, 5000);
  ASSERT_TRUE(server.endpoint->PostRdmaRead(10, {&into, 1}, region).ok());
  ASSERT_EQ(WaitCompletion(server, 10, {&client}), WorkStatus::kSuccess);
  const LocalBuffer reply = tx.Slice(0, 40);
  ASSERT_TRUE(server.endpoint->PostSend(11, {&reply, 1}, region.handle).ok());
  ASSERT_EQ(WaitCompletion(client, 2, {&server}), WorkStatus::kSuccess);
  const Completion rc = client.CompletionsOf(2)[0];
  EXPECT_EQ(rc.byte_length, 40u);
  ASSERT_TRUE(rc.invalidated_handle.has_value());
  EXPECT_EQ(*rc.invalidated_handle, region.handle);
  ASSERT_EQ(WaitCompletion(server, 11, {&client}), WorkStatus::kSuccess);
  EXPECT_EQ(server.CompletionsOf(11)[0].type, WorkType::kSendWithInvalidate);
  // Now the window is gone: the next read through it is fatal.
  ASSERT_TRUE(server.endpoint->PostRdmaRead(12, {&into, 1}, region).ok());
  EXPECT_EQ(WaitCompletion(server, 12, {&client}),
            WorkStatus::kRemoteAccessError);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 3; },
                      {&client, &server}));
  EXPECT_EQ(client.CompletionsOf(3)[0].status, WorkStatus::kFlushed);
}

TEST_P(FabricConformanceTest, SendWithInvalidateOfUnknownHandleFails) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory window_mem = Register(client, 64);
  Memory rx = Register(client, 64);
  Memory tx = Register(server, 64);
  const RemoteRegion region =
      Bind(client, window_mem.Slice(0, 64), kRemoteRead, 1);
  ASSERT_TRUE(client.endpoint->PostReceive(2, rx.Slice(0, 64)).ok());
  const LocalBuffer reply = tx.Slice(0, 8);
  ASSERT_TRUE(
      server.endpoint->PostSend(3, {&reply, 1}, region.handle ^ 0x100).ok());
  EXPECT_EQ(WaitCompletion(server, 3, {&client}),
            WorkStatus::kRemoteInvalidRequest);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 2; },
                      {&client, &server}));
  EXPECT_NE(client.CompletionsOf(2)[0].status, WorkStatus::kSuccess);
  ExpectExactlyOnce(client, {1, 2});
}

TEST_P(FabricConformanceTest, DisconnectFlushesEveryOutstandingOperationOnce) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  constexpr size_t kBig = 2 * 1024 * 1024;
  Memory remote = Register(server, kBig, 1);
  Memory srx = Register(server, 64 * 16);
  Memory local = Register(client, kBig, 2);
  Memory crx = Register(client, 64 * 16);
  const RemoteRegion region =
      Bind(server, remote.Slice(0, kBig), kRemoteRead | kRemoteWrite, 1);
  for (uint64_t i = 0; i < 16; ++i) {
    ASSERT_TRUE(
        server.endpoint->PostReceive(100 + i, srx.Slice(64 * i, 64)).ok());
    ASSERT_TRUE(
        client.endpoint->PostReceive(200 + i, crx.Slice(64 * i, 64)).ok());
  }
  std::vector<uint64_t> client_ids;
  const LocalBuffer all = local.Slice(0, kBig);
  const LocalBuffer small = local.Slice(0, 32);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(client.endpoint->PostRdmaRead(300 + i, {&all, 1}, region).ok());
    ASSERT_TRUE(
        client.endpoint->PostRdmaWrite(400 + i, {&all, 1}, region).ok());
    ASSERT_TRUE(client.endpoint->PostSend(500 + i, {&small, 1}).ok());
    client_ids.insert(client_ids.end(), {300 + i, 400 + i, 500 + i});
  }
  for (uint64_t i = 0; i < 16; ++i) client_ids.push_back(200 + i);
  client.endpoint->Disconnect();
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.completions.size() >= client_ids.size() &&
               server.completions.size() >= 16;
      },
      {&client, &server}));
  // Give late duplicates a chance to show up.
  WaitFor([] { return false; }, {&client, &server}, nullptr,
          std::chrono::milliseconds(200));
  ExpectExactlyOnce(client, client_ids);
  for (const Completion& c : client.completions) {
    if (c.wr_id >= 200 && c.wr_id < 300) {
      EXPECT_EQ(c.status, WorkStatus::kFlushed) << c.wr_id;
    }
  }
  // Server: its receives completed once each, successfully (the sends got
  // through before the disconnect) or flushed.
  std::vector<uint64_t> server_ids = {1};  // the bind
  for (uint64_t i = 0; i < 16; ++i) server_ids.push_back(100 + i);
  ExpectExactlyOnce(server, server_ids);
  EXPECT_EQ(client.events.back().type, ConnectionEventType::kDisconnected);
}

TEST_P(FabricConformanceTest, DisconnectBeforeAnyProgressFlushesEverything) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory remote = Register(server, 4096);
  Memory local = Register(client, 4096);
  const RemoteRegion region =
      Bind(server, remote.Slice(0, 4096), kRemoteRead | kRemoteWrite, 1);
  const LocalBuffer buf = local.Slice(0, 4096);
  ASSERT_TRUE(client.endpoint->PostReceive(1, buf).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaRead(2, {&buf, 1}, region).ok());
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(3, {&buf, 1}, region).ok());
  client.endpoint->Disconnect();
  ASSERT_TRUE(
      WaitFor([&] { return client.completions.size() == 3; }, {&client}));
  ExpectExactlyOnce(client, {1, 2, 3});
  // Nothing was sent to the client, so its receive is flushed. Hardware
  // may finish the RDMA operations before the disconnect takes effect;
  // otherwise they are flushed too (the soft fabric always flushes them,
  // see SoftFabricTest.DisconnectRightAfterPostingFlushesEverything).
  EXPECT_EQ(client.CompletionsOf(1)[0].status, WorkStatus::kFlushed);
  for (uint64_t id : {2, 3}) {
    EXPECT_THAT(client.CompletionsOf(id)[0].status,
                ::testing::AnyOf(WorkStatus::kFlushed, WorkStatus::kSuccess))
        << id;
  }
  ExpectBroken(client, server);
}

TEST_P(FabricConformanceTest, PeerDisconnectFlushesTheOtherSide) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory m = Register(client, 256);
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(client.endpoint->PostReceive(i, m.Slice(32 * i, 32)).ok());
  }
  server.endpoint->Disconnect();
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor([&] { return client.completions.size() == 8; },
                      {&client, &server}));
  ExpectExactlyOnce(client, {0, 1, 2, 3, 4, 5, 6, 7});
  for (const Completion& c : client.completions) {
    EXPECT_EQ(c.status, WorkStatus::kFlushed);
  }
}

TEST_P(FabricConformanceTest, SixteenConnectionsToOneListener) {
  constexpr int kCount = 16;
  std::vector<Side> clients(kCount), servers(kCount);
  for (int i = 0; i < kCount; ++i) {
    absl::StatusOr<std::unique_ptr<Endpoint>> ep = client_fabric_->Connect(
        listener_->address(), std::vector<uint8_t>{static_cast<uint8_t>(i)},
        {});
    ASSERT_TRUE(ep.ok()) << ep.status();
    clients[i].endpoint = *std::move(ep);
  }
  std::vector<Side*> all;
  for (Side& c : clients) all.push_back(&c);
  int accepted = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        while (true) {
          absl::StatusOr<std::unique_ptr<ConnectRequest>> r =
              listener_->PollConnectRequest();
          if (!r.ok() || *r == nullptr) break;
          const int index = (*r)->private_data()[0];
          EXPECT_LT(index, kCount);
          EXPECT_EQ(servers[index].endpoint, nullptr);
          absl::StatusOr<std::unique_ptr<Endpoint>> ep = (*r)->Accept(
              std::vector<uint8_t>{static_cast<uint8_t>(100 + index)}, {});
          EXPECT_TRUE(ep.ok()) << ep.status();
          servers[index].endpoint = *std::move(ep);
          all.push_back(&servers[index]);
          ++accepted;
        }
        return accepted == kCount;
      },
      all, listener_.get()));
  std::vector<Memory> rx, tx;
  for (int i = 0; i < kCount; ++i) {
    rx.push_back(Register(clients[i], 8));
    tx.push_back(Register(servers[i], 8));
    tx.back().bytes[0] = static_cast<uint8_t>(200 + i);
    ASSERT_TRUE(clients[i].endpoint->PostReceive(1, rx[i].Slice(0, 8)).ok());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (Side& c : clients) {
          if (!c.HasEvent(ConnectionEventType::kEstablished)) return false;
        }
        return true;
      },
      all));
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(clients[i].events[0].private_data.at(0), 100 + i);
    const LocalBuffer g = tx[i].Slice(0, 1);
    ASSERT_TRUE(servers[i].endpoint->PostSend(2, {&g, 1}).ok());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (Side& c : clients) {
          if (c.completions.empty()) return false;
        }
        return true;
      },
      all));
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(clients[i].completions[0].status, WorkStatus::kSuccess);
    EXPECT_EQ(rx[i].bytes[0], 200 + i) << "connection " << i;
  }
}

}  // namespace

void FabricConformanceTest::ExpectAccessViolation(
    uint32_t access, bool read,
    const std::function<RemoteRegion(RemoteRegion)>& aim,
    bool invalidate_first) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  Memory remote = Register(server, 8192, 1);
  Memory srx = Register(server, 64);
  Memory local = Register(client, 8192, 2);
  Memory crx = Register(client, 64);
  const std::vector<uint8_t> original = remote.bytes;
  const RemoteRegion region = Bind(server, remote.Slice(1001, 4000), access, 1);
  if (invalidate_first) {
    ASSERT_TRUE(server.endpoint->InvalidateWindow(2, region.handle).ok());
    ASSERT_EQ(WaitCompletion(server, 2, {&client}), WorkStatus::kSuccess);
  }
  ASSERT_TRUE(server.endpoint->PostReceive(3, srx.Slice(0, 64)).ok());
  ASSERT_TRUE(client.endpoint->PostReceive(4, crx.Slice(0, 64)).ok());
  const RemoteRegion target = aim(region);
  const LocalBuffer buf = local.Slice(7, target.length);
  ASSERT_TRUE((read ? client.endpoint->PostRdmaRead(5, {&buf, 1}, target)
                    : client.endpoint->PostRdmaWrite(5, {&buf, 1}, target))
                  .ok());
  EXPECT_EQ(WaitCompletion(client, 5, {&server}),
            WorkStatus::kRemoteAccessError);
  ExpectBroken(client, server);
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.completions.size() == 2 &&
               server.completions.size() == (invalidate_first ? 3u : 2u);
      },
      {&client, &server}));
  EXPECT_EQ(client.CompletionsOf(4)[0].status, WorkStatus::kFlushed);
  EXPECT_EQ(server.CompletionsOf(3)[0].status, WorkStatus::kFlushed);
  // A refused write changed nothing.
  EXPECT_TRUE(remote.bytes == original);
}

}  // namespace rpcrdma::test
