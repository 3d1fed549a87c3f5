// Engine cost per RPC, both roles, no fabric: a requester engine and a
// responder engine joined by an in-memory carrier that executes their
// actions as a reliable connected queue pair would. Measures the protocol
// work alone (header encode/decode, chunk bookkeeping, credits,
// invalidation); the carrier's memcpy of RDMA payloads is the same for every
// transport and is reported as its own baseline.
#include <benchmark/benchmark.h>

#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "plugin/engine/engine.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {
namespace {

class TableExposer : public MemoryExposer {
 public:
  absl::StatusOr<wire::Segment> Expose(absl::Span<uint8_t> memory,
                                       uint32_t) override {
    uint32_t handle = next_handle_++;
    windows_[handle] = memory;
    return wire::Segment{handle, static_cast<uint32_t>(memory.size()),
                         reinterpret_cast<uintptr_t>(memory.data())};
  }
  absl::Span<uint8_t> Find(const wire::Segment& s) {
    auto it = windows_.find(s.handle);
    if (it == windows_.end()) return {};
    return it->second.subspan(0, s.length);
  }
  void Drop(uint32_t handle) { windows_.erase(handle); }

 private:
  uint32_t next_handle_ = 0x100;
  std::unordered_map<uint32_t, absl::Span<uint8_t>> windows_;
};

struct Peer {
  explicit Peer(Config config) : engine(config, &exposer) {}
  TableExposer exposer;
  Engine engine;
  std::deque<Action> pending;
  std::vector<DeliverCall> delivered;
  size_t completed = 0;
  void Take(Actions& actions) {
    for (Action& a : actions) pending.push_back(std::move(a));
    actions.clear();
  }
};

// Executes pending actions of both peers until neither has any.
void Carry(Peer& a, Peer& b) {
  Actions out;
  auto step = [&out](Peer& self, Peer& peer) {
    Action action = std::move(self.pending.front());
    self.pending.pop_front();
    if (auto* s = std::get_if<Send>(&action)) {
      self.engine.OnSendComplete(s->op, true, out);
      self.Take(out);
      if (s->invalidate) peer.exposer.Drop(*s->invalidate);
      peer.engine.OnReceive(s->bytes, s->invalidate, out);
      peer.Take(out);
    } else if (auto* r = std::get_if<RdmaRead>(&action)) {
      absl::Span<uint8_t> src = peer.exposer.Find(r->source);
      std::memcpy(r->destination.data(), src.data(), r->destination.size());
      self.engine.OnReadComplete(r->op, true, out);
      self.Take(out);
    } else if (auto* w = std::get_if<RdmaWrite>(&action)) {
      absl::Span<uint8_t> dst = peer.exposer.Find(w->target);
      std::memcpy(dst.data(), w->source.data(), w->source.size());
    } else if (auto* i = std::get_if<Invalidate>(&action)) {
      self.exposer.Drop(i->handle);
      self.engine.OnInvalidated(i->handle, out);
      self.Take(out);
    } else if (auto* d = std::get_if<DeliverCall>(&action)) {
      self.delivered.push_back(std::move(*d));
    } else if (std::holds_alternative<CompleteCall>(action)) {
      ++self.completed;
    }
  };
  while (!a.pending.empty() || !b.pending.empty()) {
    if (!a.pending.empty()) step(a, b);
    if (!b.pending.empty()) step(b, a);
  }
}

std::vector<uint8_t> NullCall(uint32_t xid, size_t args) {
  // RFC 5531 call header with AUTH_NONE credential and verifier.
  std::vector<uint8_t> xdr(40 + args, 0);
  const uint32_t words[] = {xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) StoreBigEndian32(&xdr[i * 4], words[i]);
  return xdr;
}

std::vector<uint8_t> AcceptedReply(uint32_t xid) {
  std::vector<uint8_t> xdr(24, 0);
  const uint32_t words[] = {xid, 1, 0, 0, 0, 0};
  for (size_t i = 0; i < 6; ++i) StoreBigEndian32(&xdr[i * 4], words[i]);
  return xdr;
}

struct Connection {
  Connection() : client(Requester()), server(Responder()) {
    Actions out;
    auto client_pd = client.engine.LocalPrivateData();
    auto server_pd = server.engine.LocalPrivateData();
    client.engine.OnConnected(
        {std::vector<uint8_t>(server_pd.begin(), server_pd.end()), 16}, out);
    client.Take(out);
    server.engine.OnConnected(
        {std::vector<uint8_t>(client_pd.begin(), client_pd.end()), 16}, out);
    server.Take(out);
    Carry(client, server);
  }
  static Config Requester() {
    Config c;
    c.responder = false;
    c.local.send_size = c.local.receive_size = 4096;
    return c;
  }
  static Config Responder() {
    Config c = Requester();
    c.requester = false;
    c.responder = true;
    c.max_call_size = 8u << 20;
    return c;
  }
  // One call: client sends, server replies with `results` going back
  // through write chunks.
  bool RoundTrip(OutgoingCall call, absl::Span<const uint8_t> result) {
    Actions out;
    uint32_t xid = LoadBigEndian32(call.xdr.data());
    if (!client.engine.StartCall(std::move(call), out).ok()) return false;
    client.Take(out);
    Carry(client, server);
    if (server.delivered.size() != 1) return false;
    DeliverCall delivered = std::move(server.delivered.back());
    server.delivered.clear();
    OutgoingReply reply{AcceptedReply(xid), {}};
    if (!result.empty()) reply.results.push_back({24, result});
    if (!server.engine.Reply(delivered.call, std::move(reply), out).ok()) {
      return false;
    }
    server.Take(out);
    size_t before = client.completed;
    Carry(client, server);
    return client.completed == before + 1;
  }
  Peer client;
  Peer server;
};

void BM_NullRoundTrip(benchmark::State& state) {
  Connection c;
  uint32_t xid = 1;
  for (auto _ : state) {
    OutgoingCall call{NullCall(++xid, 0), {}, {}, 1024};
    if (!c.RoundTrip(std::move(call), {})) {
      state.SkipWithError("round trip failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NullRoundTrip);

// A 1 MiB argument in a read chunk, and a 1 MiB result in a write chunk.
void BM_Chunked1MiBCallAndReply(benchmark::State& state) {
  Connection c;
  std::vector<uint8_t> argument(1 << 20, 0xab);
  std::vector<uint8_t> result(1 << 20, 0xcd);
  std::vector<uint8_t> landing(1 << 20);
  uint32_t xid = 1;
  for (auto _ : state) {
    std::vector<uint8_t> xdr = NullCall(++xid, 4);
    StoreBigEndian32(&xdr[40], 1 << 20);  // opaque length word
    OutgoingCall call{std::move(xdr),
                      {{44, absl::MakeSpan(argument)}},
                      {absl::MakeSpan(landing)},
                      1024};
    if (!c.RoundTrip(std::move(call), result)) {
      state.SkipWithError("round trip failed");
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * 2 * (1 << 20));
}
BENCHMARK(BM_Chunked1MiBCallAndReply);

// The two 1 MiB copies the carrier makes per chunked round trip, alone.
void BM_Memcpy2MiBBaseline(benchmark::State& state) {
  std::vector<uint8_t> src(1 << 20, 1), dst(1 << 20);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    std::memcpy(src.data(), dst.data(), dst.size());
    benchmark::DoNotOptimize(src.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * (1 << 20));
}
BENCHMARK(BM_Memcpy2MiBBaseline);

}  // namespace
}  // namespace rpcrdma::engine

BENCHMARK_MAIN();
