// Fabric benchmarks: Send/Receive round trips and RDMA Read/Write bandwidth
// per provider, next to a plain TCP loopback socket and memcpy measured in
// the same run. Compare providers by the ratio to those baselines, never by
// absolute numbers from different runs.
//
// Providers: soft over a Unix-domain socket with RDMA data through the
// socket (soft_unix) and with the default options, where transfers of
// cross_memory_min_length and more use cross-memory attach
// (soft_unix_cma), soft over TCP, and verbs when
// RPCRDMA_BENCH_VERBS_ADDR names an address on an RDMA device (for example
// 192.0.2.1 inside the Soft-RoCE test VM).
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/fabric_pair.h"
#include "plugin/fabric/soft/soft_fabric.h"
#ifdef RPCRDMA_HAVE_VERBS
#include "plugin/fabric/verbs/verbs_fabric.h"
#endif

namespace rpcrdma::bench {
namespace {

using fabric::LocalBuffer;
using fabric::RemoteRegion;

constexpr size_t kReceiveSize = 64 * 1024;

std::unique_ptr<FabricPair> Pair(const std::string& provider,
                                 benchmark::State& state) {
  static int serial = 0;
  absl::StatusOr<std::unique_ptr<FabricPair>> pair;
  if (provider == "soft_unix" || provider == "soft_unix_cma") {
    fabric::SoftFabricOptions options;
    options.cross_memory_attach = provider == "soft_unix_cma";
    pair = FabricPair::Connect(
        fabric::MakeSoftFabric(options), fabric::MakeSoftFabric(options),
        absl::StrCat("unix:@rpcrdma-bench-", getpid(), "-", ++serial));
    if (pair.ok() && fabric::SoftUsesCrossMemory((*pair)->client()) !=
                         options.cross_memory_attach) {
      pair = absl::FailedPreconditionError(
          "cross-memory attach not in the state asked for");
    }
  } else if (provider == "soft_tcp") {
    pair = FabricPair::Connect(fabric::MakeSoftFabric(),
                               fabric::MakeSoftFabric(), "tcp:127.0.0.1:0");
#ifdef RPCRDMA_HAVE_VERBS
  } else if (provider == "verbs") {
    const char* address = std::getenv("RPCRDMA_BENCH_VERBS_ADDR");
    pair = FabricPair::Connect(fabric::MakeVerbsFabric(),
                               fabric::MakeVerbsFabric(),
                               absl::StrCat(address, ":0"));
#endif
  } else {
    pair = absl::InvalidArgumentError("unknown provider");
  }
  if (!pair.ok()) {
    state.SkipWithError(std::string(pair.status().message()).c_str());
    return nullptr;
  }
  return *std::move(pair);
}

// One Send from client to server and one back per iteration.
void BM_SendReceiveRoundTrip(benchmark::State& state,
                             const std::string& provider) {
  auto pair = Pair(provider, state);
  if (pair == nullptr) return;
  const size_t size = static_cast<size_t>(state.range(0));
  auto client_buf = pair->Register(pair->client(), kReceiveSize * 2);
  auto server_buf = pair->Register(pair->server(), kReceiveSize * 2);
  if (!client_buf.ok() || !server_buf.ok()) {
    state.SkipWithError("registration failed");
    return;
  }
  const LocalBuffer client_send = client_buf->Slice(0, size);
  const LocalBuffer client_recv = client_buf->Slice(kReceiveSize, kReceiveSize);
  const LocalBuffer server_send = server_buf->Slice(0, size);
  const LocalBuffer server_recv = server_buf->Slice(kReceiveSize, kReceiveSize);
  uint64_t id = 0;
  for (auto _ : state) {
    const uint64_t base = (++id) * 4;
    absl::Status s = pair->server().PostReceive(base, server_recv);
    if (s.ok()) s = pair->client().PostReceive(base + 1, client_recv);
    if (s.ok()) s = pair->client().PostSend(base + 2, {&client_send, 1});
    if (s.ok()) s = pair->WaitCompletion(pair->server(), base);
    if (s.ok()) s = pair->server().PostSend(base + 3, {&server_send, 1});
    if (s.ok()) s = pair->WaitCompletion(pair->client(), base + 1);
    if (s.ok()) s = pair->WaitCompletion(pair->client(), base + 2);
    if (s.ok()) s = pair->WaitCompletion(pair->server(), base + 3);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// One RDMA Write (or Read) of range(0) octets per iteration, client to the
// server's window.
void BM_Rdma(benchmark::State& state, const std::string& provider, bool read) {
  auto pair = Pair(provider, state);
  if (pair == nullptr) return;
  const size_t size = static_cast<size_t>(state.range(0));
  auto local = pair->Register(pair->client(), size);
  auto target = pair->Register(pair->server(), size);
  if (!local.ok() || !target.ok()) {
    state.SkipWithError("registration failed");
    return;
  }
  auto window = pair->server().BindWindow(
      1, target->Slice(0, size),
      read ? fabric::kRemoteRead : fabric::kRemoteWrite);
  absl::Status s = window.status();
  if (s.ok()) s = pair->WaitCompletion(pair->server(), 1);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  const LocalBuffer sgl = local->Slice(0, size);
  uint64_t id = 100;
  for (auto _ : state) {
    ++id;
    s = read ? pair->client().PostRdmaRead(id, {&sgl, 1}, *window)
             : pair->client().PostRdmaWrite(id, {&sgl, 1}, *window);
    if (s.ok()) s = pair->WaitCompletion(pair->client(), id);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}

// Baselines.

void BM_Memcpy(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(size, 1), dst(size);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), size);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}

struct TcpPair {
  int a = -1;
  int b = -1;
  ~TcpPair() {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
  }
};

bool MakeTcpPair(TcpPair& pair) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bool ok =
      listener >= 0 &&
      bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      listen(listener, 1) == 0 &&
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (ok) {
    pair.a = socket(AF_INET, SOCK_STREAM, 0);
    ok = pair.a >= 0 &&
         connect(pair.a, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  }
  if (ok) {
    pair.b = accept(listener, nullptr, nullptr);
    ok = pair.b >= 0;
  }
  if (listener >= 0) close(listener);
  int one = 1;
  for (int fd : {pair.a, pair.b}) {
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return ok;
}

// Moves `size` octets from `from` to `to` in one thread, alternating
// non-blocking writes and reads so neither side's buffer fills up.
bool Transfer(int from, int to, const uint8_t* src, uint8_t* dst, size_t size) {
  size_t sent = 0;
  size_t received = 0;
  while (received < size) {
    if (sent < size) {
      ssize_t n = send(from, src + sent, size - sent, MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) return false;
    }
    ssize_t n = recv(to, dst + received, size - received,
                     sent < size ? MSG_DONTWAIT : 0);
    if (n > 0) received += static_cast<size_t>(n);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return false;
  }
  return true;
}

void BM_TcpLoopbackRoundTrip(benchmark::State& state) {
  TcpPair pair;
  if (!MakeTcpPair(pair)) {
    state.SkipWithError("loopback TCP setup failed");
    return;
  }
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(size, 1), dst(size);
  for (auto _ : state) {
    if (!Transfer(pair.a, pair.b, src.data(), dst.data(), size) ||
        !Transfer(pair.b, pair.a, src.data(), dst.data(), size)) {
      state.SkipWithError("loopback TCP transfer failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_TcpLoopbackStream(benchmark::State& state) {
  TcpPair pair;
  if (!MakeTcpPair(pair)) {
    state.SkipWithError("loopback TCP setup failed");
    return;
  }
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(size, 1), dst(size);
  for (auto _ : state) {
    if (!Transfer(pair.a, pair.b, src.data(), dst.data(), size)) {
      state.SkipWithError("loopback TCP transfer failed");
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}

void MessageSizes(benchmark::internal::Benchmark* b) {
  for (int64_t size : {64, 1024, 4096}) b->Arg(size);
  b->UseRealTime();
}

void BulkSizes(benchmark::internal::Benchmark* b) {
  for (int64_t size : {4 << 10, 64 << 10, 1 << 20, 4 << 20}) b->Arg(size);
  b->UseRealTime();
}

void RegisterAll() {
  std::vector<std::string> providers = {"soft_unix", "soft_unix_cma",
                                        "soft_tcp"};
#ifdef RPCRDMA_HAVE_VERBS
  if (std::getenv("RPCRDMA_BENCH_VERBS_ADDR") != nullptr) {
    providers.push_back("verbs");
  }
#endif
  benchmark::RegisterBenchmark("memcpy", BM_Memcpy)->Apply(BulkSizes);
  benchmark::RegisterBenchmark("tcp_loopback/round_trip",
                               BM_TcpLoopbackRoundTrip)
      ->Apply(MessageSizes);
  benchmark::RegisterBenchmark("tcp_loopback/stream", BM_TcpLoopbackStream)
      ->Apply(BulkSizes);
  for (const std::string& p : providers) {
    benchmark::RegisterBenchmark(
        absl::StrCat(p, "/send_receive_round_trip").c_str(),
        [p](benchmark::State& s) { BM_SendReceiveRoundTrip(s, p); })
        ->Apply(MessageSizes);
    benchmark::RegisterBenchmark(
        absl::StrCat(p, "/rdma_write").c_str(),
        [p](benchmark::State& s) { BM_Rdma(s, p, false); })
        ->Apply(BulkSizes);
    benchmark::RegisterBenchmark(
        absl::StrCat(p, "/rdma_read").c_str(),
        [p](benchmark::State& s) { BM_Rdma(s, p, true); })
        ->Apply(BulkSizes);
  }
}

}  // namespace
}  // namespace rpcrdma::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  rpcrdma::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
