// The ONC RPC adapter against libtirpc's own TCP: the same
// rpcgen program (oncbench.x) through the same rpcgen stubs and dispatcher,
// over RPC-over-RDMA on soft+unix and over TCP on loopback, in one run:
//   Null/*       ONCBENCH_NULL's round trip, one call in flight
//   Echo/*/SIZE  ONCBENCH_ECHO of SIZE octets (over RDMA: the argument in a
//                read chunk, the result in a write chunk the DDP policy
//                binds to the procedure; 64 octets travel inline, but the
//                call still offers the chunks, except in the no_chunks
//                row); bytes_per_second is each way
// with, per call, the CPU time and system calls of every thread of the
// process (both sides), voluntary context switches and heap allocations.
//
// The server is one thread running libtirpc's poll loop (svc_run's) over
// both transports, dispatching to rpcgen's oncbench_1, as a classic
// program does; `adapter_threads` rows dispatch the RDMA calls on a thread
// of svc_rdma_run_threads instead. Both clients use rpcgen's -M stubs with
// the result decoded into the caller's buffer.
//
// Run it with `make bench`: by default each case runs several times,
// interleaved at random with the others, and the ratios of medians
// (TCP's time over the adapter's) are printed at the end.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/api/process_counters.h"
#include "oncbench.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"

// rpcgen's dispatcher (oncbench_svc.c), which its header does not declare.
extern "C" void oncbench_1(struct svc_req* request, SVCXPRT* transport);

// The server procedures (rpcgen -M style), the same for both transports.
extern "C" {

bool_t oncbench_null_1_svc(void*, void*, struct svc_req*) { return TRUE; }

bool_t oncbench_echo_1_svc(oncbench_data* argument, oncbench_data* result,
                           struct svc_req*) {
  // The argument's buffer becomes the result's: no copy; svc_freeargs then
  // frees nothing and oncbench_1_freeresult frees it after the reply.
  *result = *argument;
  *argument = {0, nullptr};
  return TRUE;
}

int oncbench_1_freeresult(SVCXPRT*, xdrproc_t free_result, caddr_t result) {
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"

namespace rpcrdma::bench {
namespace {

constexpr u_int kLargestEcho = 16u << 20;

// ECHO's result comes back in a write chunk (RFC 8166 §3.4.7) large
// enough for every size measured; the argument is a read chunk by the
// default argument threshold. Every ECHO then offers that write chunk, and
// a reply chunk of the default 1 MiB (as far as the policy knows, its
// reduced reply may not fit inline).
oncrpc::AdapterConfig BenchConfig() {
  oncrpc::AdapterConfig config;
  config.policies[{ONCBENCH, ONCBENCH_V1}].procedures[ONCBENCH_ECHO] = {
      .write_chunk_octets = kLargestEcho, .reply_chunk_octets = std::nullopt};
  return config;
}

// A client that offers ECHO no chunk at all (its reply must fit inline):
// beside BenchConfig(), what offering unused chunks costs a small call.
oncrpc::AdapterConfig NoChunksConfig() {
  oncrpc::AdapterConfig config;
  config.policies[{ONCBENCH, ONCBENCH_V1}].procedures[ONCBENCH_ECHO] = {
      .write_chunk_octets = std::nullopt, .reply_chunk_octets = 0};
  return config;
}

// libtirpc's poll loop (svc_run's, with a way out) on a thread of its own,
// serving every SVCXPRT registered with libtirpc: the TCP listener and its
// connections, and the adapter's SVCXPRT not handed to threads.
class Servers {
 public:
  Servers() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 ||
        bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      Die("TCP listener");
    }
    tcp_address_ = address;
    tcp_ = svc_vc_create(fd, 0, 0);
    absl::StatusOr<SVCXPRT*> polled = oncrpc::CreateServerTransport(
        absl::StrCat("soft+unix://@rpcrdma-oncrpc-bench-", getpid(), "-poll"),
        BenchConfig());
    absl::StatusOr<SVCXPRT*> threaded = oncrpc::CreateServerTransport(
        absl::StrCat("soft+unix://@rpcrdma-oncrpc-bench-", getpid(), "-thr"),
        BenchConfig());
    if (tcp_ == nullptr || !polled.ok() || !threaded.ok()) Die("SVCXPRTs");
    polled_ = *polled;
    threaded_ = *threaded;
    for (SVCXPRT* xprt : {tcp_, polled_, threaded_}) {
      if (!svc_reg(xprt, ONCBENCH, ONCBENCH_V1, oncbench_1, nullptr)) {
        Die("svc_reg");
      }
    }
    if (!svc_rdma_run_threads(threaded_, 1)) Die("svc_rdma_run_threads");
    loop_ = std::thread([this] {
      while (!stop_.load()) {
        std::vector<pollfd> fds(svc_pollfd, svc_pollfd + svc_max_pollfd);
        const int n = poll(fds.data(), fds.size(), 50);
        if (n > 0) svc_getreq_poll(fds.data(), n);
      }
    });
  }
  ~Servers() {
    stop_.store(true);
    loop_.join();
  }

  static void Die(const char* what) {
    std::fprintf(stderr, "oncrpc_bench: %s failed: %s\n", what,
                 rdma_oncrpc_error());
    std::abort();
  }

  // A CLIENT of libtirpc's TCP transport (clnt_vc_create, no rpcbind).
  CLIENT* ConnectTcp() const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // Not libtirpc's default; without it a record written in several
    // fragments may wait for delayed acknowledgements.
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in address = tcp_address_;
    netbuf server{sizeof address, sizeof address, &address};
    CLIENT* client = clnt_vc_create(fd, &server, ONCBENCH, ONCBENCH_V1, 0, 0);
    if (client == nullptr) Die("clnt_vc_create");
    clnt_control(client, CLSET_FD_CLOSE, nullptr);
    return client;
  }
  // A CLIENT of the adapter, to the SVCXPRT svc_run serves or to the one
  // svc_rdma_run_threads serves.
  CLIENT* ConnectRdma(bool threads, const oncrpc::AdapterConfig& config) const {
    absl::StatusOr<CLIENT*> made =
        oncrpc::CreateClient(svc_rdma_uri(threads ? threaded_ : polled_),
                             ONCBENCH, ONCBENCH_V1, config);
    if (!made.ok()) Die("clnt_rdma_create");
    return *made;
  }

 private:
  sockaddr_in tcp_address_{};
  SVCXPRT* tcp_ = nullptr;
  SVCXPRT* polled_ = nullptr;
  SVCXPRT* threaded_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread loop_;
};

Servers& TheServers() {
  static Servers* servers = new Servers;
  return *servers;
}

enum class Transport { kTcp, kAdapter, kAdapterThreads, kAdapterNoChunks };

CLIENT* Connect(Transport transport) {
  switch (transport) {
    case Transport::kTcp:
      return TheServers().ConnectTcp();
    case Transport::kAdapter:
      return TheServers().ConnectRdma(/*threads=*/false, BenchConfig());
    case Transport::kAdapterThreads:
      return TheServers().ConnectRdma(/*threads=*/true, BenchConfig());
    case Transport::kAdapterNoChunks:
      return TheServers().ConnectRdma(/*threads=*/false, NoChunksConfig());
  }
  return nullptr;
}

// CPU time of every thread of the process (both sides of the call), in
// microseconds: what a call costs whatever else the machine runs.
double ProcessCpuMicros() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto micros = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

void SetCounters(benchmark::State& state, const ProcessCounters::Delta& d,
                 double cpu_us) {
  if (d.syscalls >= 0) state.counters["syscalls"] = d.syscalls;
  state.counters["ctx_switches"] = d.context_switches;
  if (d.allocations >= 0) state.counters["allocs_per_call"] = d.allocations;
  state.counters["cpu_us"] = cpu_us;
}

// Times `call` over the benchmark's iterations, then counts what `counted`
// more calls cost in a pass of their own (the system-call counters make
// every system call dearer, which would tax the transport that makes more).
template <typename Call>
void Run(benchmark::State& state, int counted, Call call) {
  for (auto _ : state) {
    if (!call()) {
      state.SkipWithError("call failed");
      return;
    }
  }
  ProcessCounters counters;
  const double cpu_before = ProcessCpuMicros();
  counters.Start();
  for (int i = 0; i < counted; ++i) call();
  const ProcessCounters::Delta delta =
      counters.Stop(static_cast<uint64_t>(counted));
  SetCounters(state, delta,
              (ProcessCpuMicros() - cpu_before) / static_cast<double>(counted));
}

void Null(benchmark::State& state, Transport transport) {
  CLIENT* client = Connect(transport);
  Run(state, 2000,
      [&] { return oncbench_null_1(nullptr, nullptr, client) == RPC_SUCCESS; });
  clnt_destroy(client);
}

void Echo(benchmark::State& state, Transport transport) {
  const size_t size = static_cast<size_t>(state.range(0));
  CLIENT* client = Connect(transport);
  std::vector<char> argument(size, 0x5A);
  std::vector<char> result(size);
  oncbench_data in{static_cast<u_int>(size), argument.data()};
  Run(state,
      size <= 4096         ? 2000
      : size <= (1u << 20) ? 100
                           : 10,
      [&] {
        // Decoded into the caller's buffer (xdr_bytes allocates nothing when
        // given one).
        oncbench_data out{static_cast<u_int>(size), result.data()};
        return oncbench_echo_1(&in, &out, client) == RPC_SUCCESS &&
               out.oncbench_data_len == size;
      });
  if (result.front() != 0x5A || result.back() != 0x5A) {
    state.SkipWithError("the echo differs");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
  clnt_destroy(client);
}

// Prints the console report, then each adapter row's speed-up over the
// TCP row of the same case: TCP's median time over the adapter's.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (a reporter of one's own does not get the
  // console's --benchmark_color handling).
  RatioReporter()
      : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_Defaults : OO_Tabular) {
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      // Medians when repeated, else the single run.
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") {
        continue;
      }
      times_[run.run_name.str()] = run.GetAdjustedRealTime();
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nTCP time / adapter time (above 1: the adapter is faster)\n");
    for (const auto& [name, time] : times_) {
      const size_t slash = name.find('/');
      const size_t end = name.find('/', slash + 1);
      const std::string family = name.substr(0, slash);
      const std::string transport = name.substr(slash + 1, end - slash - 1);
      if (transport == "tirpc_tcp") continue;
      std::string tcp = absl::StrCat(family, "/tirpc_tcp");
      if (end != std::string::npos) absl::StrAppend(&tcp, name.substr(end));
      auto it = times_.find(tcp);
      if (it == times_.end() || time <= 0) continue;
      std::printf("  %-40s %6.2fx\n", name.c_str(), it->second / time);
    }
  }

 private:
  std::map<std::string, double> times_;
};

void Register() {
  using benchmark::RegisterBenchmark;
  const std::pair<const char*, Transport> transports[] = {
      {"tirpc_tcp", Transport::kTcp},
      {"adapter_soft_unix", Transport::kAdapter},
      {"adapter_threads_soft_unix", Transport::kAdapterThreads}};
  for (const auto& [name, transport] : transports) {
    RegisterBenchmark(absl::StrCat("Null/", name).c_str(), Null, transport)
        ->UseRealTime();
  }
  for (int64_t size : {int64_t{64}, int64_t{1} << 20, int64_t{16} << 20}) {
    for (const auto& [name, transport] : transports) {
      RegisterBenchmark(absl::StrCat("Echo/", name).c_str(), Echo, transport)
          ->Arg(size)
          ->UseRealTime();
    }
  }
  RegisterBenchmark("Echo/adapter_no_chunks_soft_unix", Echo,
                    Transport::kAdapterNoChunks)
      ->Arg(64)
      ->UseRealTime();
}

}  // namespace
}  // namespace rpcrdma::bench

int main(int argc, char** argv) {
  // Interleaved repetitions by default: a shared machine's noise then falls
  // on every row alike (flags given on the command line come after these
  // and win).
  std::vector<char*> args(argv, argv + argc);
  char repetitions[] = "--benchmark_repetitions=5";
  char interleaving[] = "--benchmark_enable_random_interleaving=true";
  char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {repetitions, interleaving, aggregates});
  int count = static_cast<int>(args.size());
  rpcrdma::bench::Register();
  benchmark::Initialize(&count, args.data());
  rpcrdma::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
