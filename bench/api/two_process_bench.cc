// Calls between two processes, the way programs make them: this process is
// the client; a server process, forked before any thread starts, serves
// rpcrdma over soft+unix and soft+tcp, Apache Thrift's TSimpleServer over
// TSocket (buffered and framed) and over the Thrift bridge's
// TRdmaServerSocket (soft+unix), and libtirpc over TCP, all on loopback.
//   NullCall/*       a void call's round trip, one in flight; counters (this
//                    client process only): system calls, context switches
//                    and heap allocations per call (allocs_per_call); and
//                    the server process's heap allocations per call
//                    (server_allocs_per_call, every server it runs, the
//                    handler's own reply stream included)
//   Echo/*/SIZE      SIZE octets each way (rpcrdma: the argument in a read
//                    chunk, the result in a write chunk); memcpy copies the
//                    same octets twice in one process
//   FirstCall/*/SIZE a fresh process's first echo of SIZE octets, connect
//                    included: the time from main() making its Channel (or
//                    libtirpc CLIENT) to the reply, in a process started
//                    for that call alone (this program again, run with
//                    --first_call)
// Every row runs in repetitions, interleaved at random with the other rows
// (--benchmark_enable_random_interleaving, on unless given), so that a
// change in the machine's load falls on every row alike. The summary after
// the rows gives each row's min and median and their ratios to the
// baselines of the same run: Thrift TSocket and libtirpc for calls, memcpy
// and framed Thrift for bulk.
//
// --load_processes=N (this benchmark's own flag) starts N more processes
// that spin on the processor at normal priority for the whole run: a busy
// machine. Without it the machine should be otherwise idle; the context
// printed first says which it was (load_processes, load average).
//
// Run it with `make bench` (or build/bench/api/two_process_bench).
#include <benchmark/benchmark.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/api/call_runner.h"
#include "bench/api/ratio_reporter.h"
#include "bench/api/server_fork.h"
#include "bench/api/thrift_baseline.h"
#include "bench/api/tirpc_baseline.h"
#ifdef RPCRDMA_BENCH_HAVE_BRIDGE
#include <thrift/protocol/TBinaryProtocol.h>

#include "Bench.h"
#include "bench/thrift/bridge_bench_server.h"
#include "rpcrdma/thrift/rdma_socket.h"
#endif
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "tools/perf_program/perf_program.h"

extern char** environ;

namespace rpcrdma::bench {
namespace {

using Clock = std::chrono::steady_clock;

// How long a busy-polling loop or BlockingCall polls before it sleeps, in
// the rows that measure what busy polling costs or saves.
constexpr uint32_t kBusyPollUs = 200;

config::TransportConfig BusyPolling() {
  config::TransportConfig config;
  config.mutable_execution()->set_busy_poll_us(kBusyPollUs);
  return config;
}

// Where the server process listens.
struct Endpoints {
  std::string soft_unix;
  std::string soft_tcp;
  // The soft_unix server with execution.busy_poll_us = kBusyPollUs.
  std::string soft_unix_busy_poll;
  int thrift_buffered = 0;
  int thrift_framed = 0;
  int tirpc = 0;
  std::string bridge = "-";  // "-": built without the Thrift bridge
  // A byte written to `ask` makes the server process write its heap
  // allocations so far (int64_t) to `answer`.
  int ask = -1;
  int answer = -1;
};

Endpoints& Served() {
  static Endpoints endpoints;
  return endpoints;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "two_process_bench: %s\n", what.c_str());
  std::exit(1);
}

// The child: starts every server, writes where they listen as one line to
// `report`, and serves until the parent goes (its end of `alive` closes);
// each byte the parent writes to `alive` asks for the child's heap
// allocations so far, which it writes to `report`.
[[noreturn]] void Serve(int report, int alive) {
  const config::TransportConfig config;
  auto unix_server = Server::Create(
      absl::StrCat("soft+unix://@rpcrdma-two-process-", getpid()), config,
      perf::ServeCall);
  auto tcp_server =
      Server::Create("soft+tcp://127.0.0.1:0", config, perf::ServeCall);
  auto busy_server = Server::Create(
      absl::StrCat("soft+unix://@rpcrdma-two-process-busy-", getpid()),
      BusyPolling(), perf::ServeCall);
  if (!unix_server.ok() || !tcp_server.ok() || !busy_server.ok()) _exit(2);
  auto buffered = ThriftServer::Start(ThriftServer::Kind::kSimple,
                                      ThriftFraming::kBuffered);
  auto framed =
      ThriftServer::Start(ThriftServer::Kind::kSimple, ThriftFraming::kFramed);
  auto tirpc = TirpcServer::Start();
  if (buffered == nullptr || framed == nullptr || tirpc == nullptr) _exit(3);
  std::string bridge_uri = "-";
#ifdef RPCRDMA_BENCH_HAVE_BRIDGE
  BridgeBenchServer bridge(
      absl::StrCat("soft+unix://@rpcrdma-two-process-bridge-", getpid()),
      config);
  bridge_uri = bridge.uri();
#endif
  const std::string line =
      absl::StrCat((*unix_server)->uri(), " ", (*tcp_server)->uri(), " ",
                   buffered->port(), " ", framed->port(), " ", tirpc->port(),
                   " ", bridge_uri, " ", (*busy_server)->uri(), "\n");
  if (write(report, line.data(), line.size()) !=
      static_cast<ssize_t>(line.size())) {
    _exit(4);
  }
  char byte;
  while (read(alive, &byte, 1) > 0) {
    const int64_t allocations = HeapAllocations();
    if (write(report, &allocations, sizeof allocations) !=
        static_cast<ssize_t>(sizeof allocations)) {
      _exit(5);
    }
  }
  _exit(0);
}

void StartServerProcess() {
  absl::StatusOr<ForkedServer> server = ForkServer(Serve);
  if (!server.ok()) Fail(std::string(server.status().message()));
  std::istringstream fields(server->line);
  Endpoints& e = Served();
  e.ask = server->alive;
  e.answer = server->report;
  if (!(fields >> e.soft_unix >> e.soft_tcp >> e.thrift_buffered >>
        e.thrift_framed >> e.tirpc >> e.bridge >> e.soft_unix_busy_poll)) {
    Fail(ServerDidNotStart(*server));
  }
}

// The server process's heap allocations so far; -1 when not counted.
int64_t ServerHeapAllocations() {
  const Endpoints& e = Served();
  int64_t allocations = -1;
  if (write(e.ask, "?", 1) != 1 ||
      read(e.answer, &allocations, sizeof allocations) !=
          static_cast<ssize_t>(sizeof allocations)) {
    return -1;
  }
  return allocations;
}

// N processes spinning until this one exits.
void StartLoad(int processes) {
  for (int i = 0; i < processes; ++i) {
    const pid_t child = fork();
    if (child < 0) Fail("fork failed");
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      volatile uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
  }
}

std::unique_ptr<Channel> Connect(
    benchmark::State& state, const std::string& uri,
    const config::TransportConfig& config = config::TransportConfig()) {
  auto channel = Channel::Create(uri, config);
  if (!channel.ok()) {
    state.SkipWithError(std::string(channel.status().message()).c_str());
    return nullptr;
  }
  return *std::move(channel);
}

// ---- null calls -------------------------------------------------------------

// `busy_poll`: the Channel polls too (the server does for its own URI).
void NullCallBlocking(benchmark::State& state, const std::string* uri,
                      bool busy_poll) {
  std::unique_ptr<Channel> channel = Connect(
      state, *uri, busy_poll ? BusyPolling() : config::TransportConfig());
  if (channel == nullptr) return;
  uint32_t xid = 1;
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        CallRequest request = perf::NullCall(xid++);
        allocations.Open();
        return channel->BlockingCall(std::move(request)).ok();
      },
      ServerHeapAllocations);
}

void NullCallCallback(benchmark::State& state) {
  std::unique_ptr<Channel> channel = Connect(state, Served().soft_unix);
  if (channel == nullptr) return;
  Waiter waiter;
  uint32_t xid = 1;
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        CallRequest request = perf::NullCall(xid++);
        allocations.Open();
        channel->Call(std::move(request), waiter.Callback());
        return waiter.Wait();
      },
      ServerHeapAllocations);
}

void NullCallFuture(benchmark::State& state) {
  std::unique_ptr<Channel> channel = Connect(state, Served().soft_unix);
  if (channel == nullptr) return;
  uint32_t xid = 1;
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        CallRequest request = perf::NullCall(xid++);
        allocations.Open();
        return channel->Call(std::move(request)).get().ok();
      },
      ServerHeapAllocations);
}

void NullCallThrift(benchmark::State& state, ThriftFraming framing) {
  ThriftClient client(framing == ThriftFraming::kBuffered
                          ? Served().thrift_buffered
                          : Served().thrift_framed,
                      framing);
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        allocations.Open();
        client.Ping();
        return true;
      },
      ServerHeapAllocations);
}

void NullCallTirpc(benchmark::State& state) {
  TirpcClient client(Served().tirpc);
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        allocations.Open();
        return client.Null();
      },
      ServerHeapAllocations);
}

#ifdef RPCRDMA_BENCH_HAVE_BRIDGE
// A Thrift client moved to RDMA: the generated client on a TRdmaSocket.
class BridgeClient {
 public:
  BridgeClient()
      : transport_(std::make_shared<rpcrdma::thrift::TRdmaSocket>(
            Served().bridge, config::TransportConfig())),
        client_(std::make_shared<apache::thrift::protocol::TBinaryProtocol>(
            transport_)) {
    transport_->open();
  }
  ~BridgeClient() { transport_->close(); }
  thrift::BenchClient& client() { return client_; }

 private:
  std::shared_ptr<rpcrdma::thrift::TRdmaSocket> transport_;
  thrift::BenchClient client_;
};

void NullCallBridge(benchmark::State& state) {
  BridgeClient bridge;
  RunNullCalls(
      state,
      [&](AllocationWindows& allocations) {
        allocations.Open();
        bridge.client().ping();
        return true;
      },
      ServerHeapAllocations);
}

void EchoBridge(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  BridgeClient bridge;
  const std::string argument(size, 'Z');
  std::string result;
  // The first large reply teaches the client the write chunk echo needs
  // (bridge/README.md, THRIFT_FETCH): a steady state, as TSocket's.
  bridge.client().echo(result, argument);
  for (auto _ : state) {
    bridge.client().echo(result, argument);
    if (result.size() != size) state.SkipWithError("short echo");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
#endif

// ---- bulk -------------------------------------------------------------------

void EchoRpcrdma(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::unique_ptr<Channel> channel = Connect(state, Served().soft_unix);
  if (channel == nullptr) return;
  std::vector<uint8_t> argument(size, 0x5A);
  std::vector<uint8_t> result(size);
  Waiter waiter;
  uint32_t xid = 1;
  for (auto _ : state) {
    channel->Call(perf::EchoCall(xid++, argument, absl::MakeSpan(result)),
                  waiter.Callback());
    if (!waiter.Wait()) state.SkipWithError("call failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

void EchoThrift(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  ThriftClient client(Served().thrift_framed, ThriftFraming::kFramed);
  const std::string argument(size, 'Z');
  std::string result;
  for (auto _ : state) client.Echo(result, argument);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

void EchoTirpc(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  TirpcClient client(Served().tirpc);
  std::vector<uint8_t> argument(size, 0x5A);
  std::vector<uint8_t> result;
  for (auto _ : state) {
    if (!client.Echo(argument, result)) state.SkipWithError("call failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

// ---- a fresh process's first call
// --------------------------------------------

constexpr char kFirstCallFlag[] = "--first_call=";

// The child: `spec` is KIND,ADDRESS,SIZE (KIND rpcrdma or tirpc); prints
// the nanoseconds from making the connection to the echo's reply, or
// nothing when the call failed.
int FirstCallChild(const std::string& spec) {
  std::vector<std::string> f = absl::StrSplit(spec, ',');
  size_t size = 0;
  if (f.size() != 3 || !absl::SimpleAtoi(f[2], &size)) return 2;
  std::vector<uint8_t> argument(size, 0x5A);
  std::vector<uint8_t> result(size);
  const Clock::time_point start = Clock::now();
  bool ok = false;
  if (f[0] == "rpcrdma") {
    auto channel = Channel::Create(f[1], config::TransportConfig());
    if (channel.ok()) {
      ok = (*channel)
               ->Call(perf::EchoCall(1, argument, absl::MakeSpan(result)))
               .get()
               .ok();
    }
  } else {
    int port = 0;
    if (!absl::SimpleAtoi(f[1], &port)) return 2;
    TirpcClient client(port);
    std::vector<uint8_t> echoed;
    ok = client.Echo(argument, echoed) && echoed.size() == size;
  }
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
          .count();
  if (!ok) return 1;
  std::printf("%lld\n", static_cast<long long>(ns));
  return 0;
}

// Runs this program as a first-call child and returns what it measured, in
// seconds; negative when it failed.
double RunFirstCallChild(const std::string& spec) {
  int out[2];
  if (pipe(out) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string self = "/proc/self/exe";
  std::string flag = absl::StrCat(kFirstCallFlag, spec);
  char* argv[] = {self.data(), flag.data(), nullptr};
  pid_t child = -1;
  const int spawned =
      posix_spawn(&child, self.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  char buffer[64];
  for (ssize_t n;
       spawned == 0 && (n = read(out[0], buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  if (spawned != 0 || waitpid(child, &status, 0) != child ||
      !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  int64_t ns = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &ns)) return -1;
  return static_cast<double>(ns) / 1e9;
}

void FirstCall(benchmark::State& state, bool rpcrdma) {
  const std::string spec = absl::StrCat(
      rpcrdma ? "rpcrdma," : "tirpc,",
      rpcrdma ? Served().soft_unix : std::to_string(Served().tirpc), ",",
      state.range(0));
  for (auto _ : state) {
    const double seconds = RunFirstCallChild(spec);
    if (seconds < 0) {
      state.SkipWithError("the first-call process failed");
      break;
    }
    state.SetIterationTime(seconds);
  }
}

void Register() {
  using benchmark::RegisterBenchmark;
  static const std::string* unix_uri = &Served().soft_unix;
  static const std::string* tcp_uri = &Served().soft_tcp;
  static const std::string* busy_uri = &Served().soft_unix_busy_poll;
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_blocking", NullCallBlocking,
                    unix_uri, false)
      ->UseRealTime();
  // Both processes poll before sleeping (execution.busy_poll_us): on a
  // machine with fewer free cores than polling threads it costs more than
  // it saves; this row says which on the machine it runs on.
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_blocking_busy_poll",
                    NullCallBlocking, busy_uri, true)
      ->UseRealTime();
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_callback", NullCallCallback)
      ->UseRealTime();
  RegisterBenchmark("NullCall/rpcrdma_soft_unix_future", NullCallFuture)
      ->UseRealTime();
  RegisterBenchmark("NullCall/rpcrdma_soft_tcp_blocking", NullCallBlocking,
                    tcp_uri, false)
      ->UseRealTime();
  RegisterBenchmark("NullCall/thrift_buffered", NullCallThrift,
                    ThriftFraming::kBuffered)
      ->UseRealTime();
  RegisterBenchmark("NullCall/thrift_framed", NullCallThrift,
                    ThriftFraming::kFramed)
      ->UseRealTime();
  RegisterBenchmark("NullCall/tirpc_tcp", NullCallTirpc)->UseRealTime();
#ifdef RPCRDMA_BENCH_HAVE_BRIDGE
  RegisterBenchmark("NullCall/thrift_bridge_soft_unix", NullCallBridge)
      ->UseRealTime();
#endif
  for (int64_t size : {int64_t{1} << 20, int64_t{16} << 20}) {
    RegisterBenchmark("Echo/memcpy", EchoMemcpy)->Arg(size)->UseRealTime();
    RegisterBenchmark("Echo/rpcrdma_soft_unix", EchoRpcrdma)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/thrift_framed", EchoThrift)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/tirpc_tcp", EchoTirpc)->Arg(size)->UseRealTime();
#ifdef RPCRDMA_BENCH_HAVE_BRIDGE
    RegisterBenchmark("Echo/thrift_bridge_soft_unix", EchoBridge)
        ->Arg(size)
        ->UseRealTime();
#endif
  }
  for (int64_t size : {int64_t{64}, int64_t{2} << 20}) {
    RegisterBenchmark("FirstCall/rpcrdma_soft_unix", FirstCall, true)
        ->Arg(size)
        ->Iterations(10)
        ->UseManualTime();
    RegisterBenchmark("FirstCall/tirpc_tcp", FirstCall, false)
        ->Arg(size)
        ->Iterations(10)
        ->UseManualTime();
  }
}

// Google Benchmark's flags, with this benchmark's defaults put first so
// that the command line overrides them.
std::vector<char*> WithDefaults(int argc, char** argv, int* load_processes) {
  static std::vector<std::string> storage;
  storage = {argv[0], "--benchmark_enable_random_interleaving=true",
             "--benchmark_repetitions=5", "--benchmark_min_time=0.2"};
  for (int i = 1; i < argc; ++i) {
    constexpr char kLoad[] = "--load_processes=";
    if (std::strncmp(argv[i], kLoad, sizeof kLoad - 1) == 0) {
      if (!absl::SimpleAtoi(argv[i] + sizeof kLoad - 1, load_processes) ||
          *load_processes < 0) {
        Fail(absl::StrCat("bad ", argv[i], ": a number of processes"));
      }
      continue;
    }
    storage.push_back(argv[i]);
  }
  std::vector<char*> args;
  for (std::string& s : storage) args.push_back(s.data());
  return args;
}

}  // namespace
}  // namespace rpcrdma::bench

int main(int argc, char** argv) {
  using namespace rpcrdma::bench;
  if (argc == 2 &&
      std::strncmp(argv[1], kFirstCallFlag, sizeof kFirstCallFlag - 1) == 0) {
    return FirstCallChild(argv[1] + sizeof kFirstCallFlag - 1);
  }
  int load_processes = 0;
  std::vector<char*> args = WithDefaults(argc, argv, &load_processes);
  // Before any thread starts: the server process is a fork of this one.
  StartServerProcess();
  StartLoad(load_processes);
  Register();
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::AddCustomContext("load_processes", std::to_string(load_processes));
  benchmark::AddCustomContext("load_average_at_start", LoadAverage());
  RatioReporter reporter({{"NullCall", {"thrift_buffered", "tirpc_tcp"}},
                          {"Echo", {"memcpy", "thrift_framed"}},
                          {"FirstCall", {"tirpc_tcp"}}});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
