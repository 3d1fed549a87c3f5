// The cost of a call through the public API, beside the same
// work done by Apache Thrift (TSocket buffered and framed, TSimpleServer
// and TNonblockingServer) and by libtirpc over TCP loopback, and memcpy
// for bulk, all measured in the same run:
//   NullCall/*        a void call's round trip, one in flight, client and
//                     server in this process (rpcrdma: a callback waited
//                     for, BlockingCall, and a runtime the caller drives);
//                     counters: system calls and
//                     context switches per call (every thread, both
//                     sides), heap allocations per call (both sides, the
//                     caller's request excluded)
//   CallsPerSecond/*  16 connections x 32 calls in flight
//   Echo/*/SIZE       SIZE octets each way (rpcrdma: argument in a read
//                     chunk, result in a write chunk, no copy in the RPC
//                     layer); bytes_per_second is each way
//   IdleConnections/N a void call with N idle connections open (the
//                     server in a child process), and resident memory per
//                     idle connection on both sides
//   LoopThreads       threads that 1000 Channels add to a process
// Run it with `make bench`; ratios between rows of one run are what count.
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/api/call_runner.h"
#include "bench/api/process_counters.h"
#include "bench/api/property_bench.h"
#include "bench/api/thrift_baseline.h"
#include "bench/api/tirpc_baseline.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"
#include "tests/api/process_stats.h"
#include "tools/perf_program/perf_program.h"

namespace rpcrdma::bench {
namespace {

using test::ResidentKib;
using test::Threads;

using Clock = std::chrono::steady_clock;

std::string FreshUri() {
  static std::atomic<int> n{0};
  return absl::StrCat("soft+unix://@rpcrdma-api-bench-", getpid(), "-", n++);
}

// ---- rpcrdma ---------------------------------------------------------------

struct RpcrdmaPair {
  // A Server on its own runtime and a Channel on `runtime` (the default
  // one when null).
  // both sides with execution.busy_poll_us = `busy_poll_us`.
  explicit RpcrdmaPair(std::shared_ptr<Runtime> channel_runtime = nullptr,
                       uint32_t busy_poll_us = 0) {
    config::TransportConfig config;
    if (busy_poll_us > 0) {
      config.mutable_execution()->set_busy_poll_us(busy_poll_us);
    }
    auto s = Server::Create(FreshUri(), config, perf::ServeCall);
    if (!s.ok()) std::abort();
    server = *std::move(s);
    ChannelOptions options;
    options.runtime = std::move(channel_runtime);
    auto c = Channel::Create(server->uri(), config, options);
    if (!c.ok()) std::abort();
    channel = *std::move(c);
  }
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
};

// A callback, waited for: the loop thread delivers it.
void NullCallRpcrdma(benchmark::State& state) {
  RpcrdmaPair pair;
  Waiter waiter;
  uint32_t xid = 1;
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    CallRequest request = perf::NullCall(xid++);
    allocations.Open();
    pair.channel->Call(std::move(request), waiter.Callback());
    return waiter.Wait();
  });
}

// Channel::BlockingCall: the calling thread reads its own reply, as a
// synchronous Thrift or libtirpc client reads its own socket.
void NullCallRpcrdmaBlocking(benchmark::State& state, uint32_t busy_poll_us) {
  RpcrdmaPair pair(nullptr, busy_poll_us);
  uint32_t xid = 1;
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    CallRequest request = perf::NullCall(xid++);
    allocations.Open();
    return pair.channel->BlockingCall(std::move(request)).ok();
  });
}

// The caller drives its Channel's runtime itself (loop_threads 0), the way
// a program with its own event loop embeds a Channel.
void NullCallRpcrdmaCallerDriven(benchmark::State& state) {
  auto runtime = Runtime::Create({.loop_threads = 0});
  if (!runtime.ok()) std::abort();
  RpcrdmaPair pair(*runtime);
  uint32_t xid = 1;
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    CallRequest request = perf::NullCall(xid++);
    allocations.Open();
    bool done = false;
    bool ok = false;
    pair.channel->Call(std::move(request), [&](absl::StatusOr<Reply> r) {
      ok = r.ok();
      done = true;
    });
    while (!done) (*runtime)->RunReady(std::chrono::milliseconds(100));
    return ok;
  });
}

void EchoRpcrdma(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  RpcrdmaPair pair;
  std::vector<uint8_t> argument(size, 0x5A);
  std::vector<uint8_t> result(size);
  Waiter waiter;
  uint32_t xid = 1;
  for (auto _ : state) {
    pair.channel->Call(perf::EchoCall(xid++, argument, absl::MakeSpan(result)),
                       waiter.Callback());
    if (!waiter.Wait()) state.SkipWithError("call failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

// draft-cel-nfsv4-rpcrdma-version-two-04 against version one, both through
// BlockingCall on the soft fabric with each policy's default inline sizes
// (1024 for version one, 4096 for version two, §2): a NULL call, and an
// ECHO of `state.range(0)` octets carried inline in the call's XDR, whose
// reply carries them back inline (version one: a long call and a reply
// chunk at 2 KiB; version two: inline both ways).
void VersionRpcrdma(benchmark::State& state,
                    config::TransportConfig::VersionPolicy policy) {
  config::TransportConfig config;
  config.set_version_policy(policy);
  auto server = Server::Create(FreshUri(), config, perf::ServeCall);
  if (!server.ok()) std::abort();
  auto channel = Channel::Create((*server)->uri(), config);
  if (!channel.ok()) std::abort();
  const uint32_t size = static_cast<uint32_t>(state.range(0));
  uint32_t xid = 1;
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    CallRequest request = perf::NullCall(xid++);
    if (size > 0) {
      // NULL's header with ECHO's procedure number, then opaque<size>.
      StoreBigEndian32(request.xdr.data() + 20, perf::kEchoProcedure);
      const size_t at = request.xdr.size();
      request.xdr.resize(at + 4 + size, 0x5A);
      StoreBigEndian32(request.xdr.data() + at, size);
      request.max_reply_size = size + perf::kMaxReducedReply;
    }
    allocations.Open();
    return (*channel)->BlockingCall(std::move(request)).ok();
  });
  state.counters["version"] =
      static_cast<double>((*channel)->connection_info().version);
}

// 16 Channels, 32 calls in flight on each, for as long as a benchmark
// iteration lasts: each completion starts the next call.
void CallsPerSecondRpcrdma(benchmark::State& state) {
  auto s = Server::Create(FreshUri(), {}, perf::ServeCall);
  if (!s.ok()) std::abort();
  std::vector<std::unique_ptr<Channel>> channels;
  for (int i = 0; i < 16; ++i) {
    auto c = Channel::Create((*s)->uri(), {});
    if (!c.ok()) std::abort();
    channels.push_back(*std::move(c));
  }
  std::atomic<bool> running{true};
  std::atomic<uint64_t> calls{0};
  std::atomic<int> in_flight{0};
  std::atomic<uint32_t> xid{1};
  std::function<void(Channel*)> start = [&](Channel* channel) {
    ++in_flight;
    channel->Call(perf::NullCall(xid++), [&, channel](absl::StatusOr<Reply>) {
      ++calls;
      --in_flight;
      if (running.load()) start(channel);
    });
  };
  for (auto _ : state) {
    const uint64_t before = calls.load();
    const Clock::time_point t0 = Clock::now();
    for (auto& c : channels) {
      for (int i = 0; i < 32; ++i) start(c.get());
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    running.store(false);
    while (in_flight.load() > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double seconds =
        std::chrono::duration<double>(Clock::now() - t0).count();
    state.counters["calls_per_second"] =
        static_cast<double>(calls.load() - before) / seconds;
    running.store(true);
  }
}

// ---- Thrift and libtirpc ----------------------------------------------------

void NullCallThrift(benchmark::State& state, ThriftFraming framing) {
  auto server = ThriftServer::Start(ThriftServer::Kind::kSimple, framing);
  ThriftClient client(server->port(), framing);
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    allocations.Open();
    client.Ping();
    return true;
  });
}

void EchoThrift(benchmark::State& state, ThriftFraming framing) {
  const size_t size = static_cast<size_t>(state.range(0));
  auto server = ThriftServer::Start(ThriftServer::Kind::kSimple, framing);
  ThriftClient client(server->port(), framing);
  const std::string argument(size, 'Z');
  std::string result;
  for (auto _ : state) client.Echo(result, argument);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

void CallsPerSecondThrift(benchmark::State& state) {
  auto server = ThriftServer::Start(ThriftServer::Kind::kNonblocking,
                                    ThriftFraming::kFramed, /*workers=*/4);
  std::vector<std::unique_ptr<ThriftConcurrentClient>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<ThriftConcurrentClient>(server->port()));
  }
  for (auto _ : state) {
    std::atomic<bool> running{true};
    std::atomic<uint64_t> calls{0};
    std::vector<std::thread> threads;
    const Clock::time_point t0 = Clock::now();
    for (auto& client : clients) {
      for (int i = 0; i < 32; ++i) {
        threads.emplace_back([&, c = client.get()] {
          while (running.load()) {
            c->Ping();
            ++calls;
          }
        });
      }
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    running.store(false);
    for (auto& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(Clock::now() - t0).count();
    state.counters["calls_per_second"] =
        static_cast<double>(calls.load()) / seconds;
  }
}

void NullCallTirpc(benchmark::State& state) {
  auto server = TirpcServer::Start();
  if (server == nullptr) std::abort();
  TirpcClient client(server->port());
  RunNullCalls(state, [&](AllocationWindows& allocations) {
    allocations.Open();
    return client.Null();
  });
}

void EchoTirpc(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  auto server = TirpcServer::Start();
  if (server == nullptr) std::abort();
  TirpcClient client(server->port());
  std::vector<uint8_t> argument(size, 0x5A);
  std::vector<uint8_t> result;
  for (auto _ : state) {
    if (!client.Echo(argument, result)) state.SkipWithError("call failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

// ---- scale ------------------------------------------------------------------

// A server in a child process (its own descriptor table), serving until
// the parent closes `control`; on each byte it reports its resident
// memory growth.
pid_t ForkServer(const std::string& uri, int* control, int* report) {
  int ready[2], ctl[2], rep[2];
  if (pipe(ready) != 0 || pipe(ctl) != 0 || pipe(rep) != 0) std::abort();
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    close(ctl[1]);
    close(rep[0]);
    config::TransportConfig config;
    config.mutable_limits()->set_max_connections(20000);
    auto runtime = Runtime::Create();
    ServerOptions options;
    options.runtime = *runtime;
    const long before = ResidentKib();
    auto server = Server::Create(uri, config, perf::ServeCall, options);
    if (!server.ok()) _exit(2);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(3);
    while (read(ctl[0], &byte, 1) == 1) {
      const std::string line = absl::StrCat(ResidentKib() - before, "\n");
      if (write(rep[1], line.data(), line.size()) < 0) _exit(4);
    }
    _exit(0);
  }
  close(ready[1]);
  close(ctl[0]);
  close(rep[1]);
  char byte;
  if (read(ready[0], &byte, 1) != 1) std::abort();
  close(ready[0]);
  *control = ctl[1];
  *report = rep[0];
  return child;
}

long AskServerRss(int control, int report) {
  char byte = 1;
  char line[64] = {};
  if (write(control, &byte, 1) != 1 ||
      read(report, line, sizeof line - 1) <= 0) {
    return -1;
  }
  return std::atol(line);
}

void IdleConnections(benchmark::State& state) {
  const size_t idle = static_cast<size_t>(state.range(0));
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < idle + 256) {
    state.SkipWithError("the descriptor limit is too low");
    return;
  }
  const std::string uri = FreshUri();
  int control = -1, report = -1;
  const pid_t child = ForkServer(uri, &control, &report);
  const long server_before = AskServerRss(control, report);
  const long rss_before = ResidentKib();
  std::vector<std::unique_ptr<Channel>> channels;
  for (size_t i = 0; i < idle; ++i) {
    auto c = Channel::Create(uri, {});
    if (!c.ok()) {
      state.SkipWithError("connect failed");
      break;
    }
    channels.push_back(*std::move(c));
  }
  const long rss_idle = ResidentKib();
  const long server_idle = AskServerRss(control, report);
  auto measured = Channel::Create(uri, {});
  if (!measured.ok()) std::abort();
  Waiter waiter;
  uint32_t xid = 1;
  for (auto _ : state) {
    (*measured)->Call(perf::NullCall(xid++), waiter.Callback());
    if (!waiter.Wait()) state.SkipWithError("call failed");
  }
  if (idle > 0) {
    state.counters["client_kib_per_conn"] =
        static_cast<double>(rss_idle - rss_before) / static_cast<double>(idle);
    state.counters["server_kib_per_conn"] =
        static_cast<double>(server_idle - server_before) /
        static_cast<double>(idle);
  }
  channels.clear();
  measured->reset();
  close(control);
  close(report);
  waitpid(child, nullptr, 0);
}

void LoopThreads(benchmark::State& state) {
  config::TransportConfig config;
  config.mutable_limits()->set_max_connections(1024);  // default 220
  for (auto _ : state) {
    auto s = Server::Create(FreshUri(), config, perf::ServeCall);
    if (!s.ok()) std::abort();
    const size_t before = Threads();
    std::vector<std::unique_ptr<Channel>> channels;
    for (int i = 0; i < 1000; ++i) {
      auto c = Channel::Create((*s)->uri(), {});
      if (!c.ok()) std::abort();
      channels.push_back(*std::move(c));
    }
    state.counters["threads_added"] = static_cast<double>(Threads() - before);
    state.counters["loop_threads"] = Runtime::Default()->loop_threads();
  }
}

void Register() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("NullCall/rpcrdma_soft_unix", NullCallRpcrdma)
      ->UseRealTime();
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_blocking",
                    NullCallRpcrdmaBlocking, 0)
      ->UseRealTime();
  // Both sides poll instead of sleeping (execution.busy_poll_us): two
  // spinning threads, one per core of a two-core machine.
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_blocking_busy_poll",
                    NullCallRpcrdmaBlocking, 200)
      ->UseRealTime();
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_user_driven",
                    NullCallRpcrdmaCallerDriven)
      ->UseRealTime();
  RegisterBenchmark("NullCall/thrift_buffered", NullCallThrift,
                    ThriftFraming::kBuffered)
      ->UseRealTime();
  RegisterBenchmark("NullCall/thrift_framed", NullCallThrift,
                    ThriftFraming::kFramed)
      ->UseRealTime();
  RegisterBenchmark("NullCall/tirpc_tcp", NullCallTirpc)->UseRealTime();
  RegisterBenchmark("CallsPerSecond/rpcrdma_16x32", CallsPerSecondRpcrdma)
      ->Iterations(1)
      ->UseRealTime();
  RegisterBenchmark("CallsPerSecond/thrift_nonblocking_16x32",
                    CallsPerSecondThrift)
      ->Iterations(1)
      ->UseRealTime();
  for (int64_t size : {int64_t{1} << 20, int64_t{16} << 20}) {
    RegisterBenchmark("Echo/memcpy", EchoMemcpy)->Arg(size)->UseRealTime();
    RegisterBenchmark("Echo/rpcrdma_soft_unix", EchoRpcrdma)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/thrift_framed", EchoThrift, ThriftFraming::kFramed)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/tirpc_tcp", EchoTirpc)->Arg(size)->UseRealTime();
  }
  for (int size : {0, 2048}) {
    RegisterBenchmark("Version/rpcrdma_v1", VersionRpcrdma,
                      config::TransportConfig::V1)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Version/rpcrdma_v2", VersionRpcrdma,
                      config::TransportConfig::V2)
        ->Arg(size)
        ->UseRealTime();
  }
  RegisterBenchmark("Version/property_change", PropertyChangeRpcrdma)
      ->UseRealTime();
  RegisterBenchmark("Version/property_update", PropertyUpdateRpcrdma)
      ->UseRealTime();
  RegisterBenchmark("IdleConnections", IdleConnections)
      ->Arg(0)
      ->Arg(10000)
      ->UseRealTime();
  RegisterBenchmark("LoopThreads/1000_channels", LoopThreads)
      ->Iterations(1)
      ->UseRealTime();
}

}  // namespace
}  // namespace rpcrdma::bench

int main(int argc, char** argv) {
  rpcrdma::bench::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
