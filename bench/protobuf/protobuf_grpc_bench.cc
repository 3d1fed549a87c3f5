// The protobuf adapter against gRPC 1.51, the same .proto
// (proto/rpcrdma_bench/bench.proto), the same handlers, client and server
// in two processes: this process is the client; the server process, forked
// before any thread starts, serves BenchService through the rpcrdma
// generated code over soft+unix and soft+tcp, and through gRPC's generated
// code over HTTP/2 on TCP loopback (127.0.0.1).
//   Empty/*          a blocking stub's empty call (EmptyMsg both ways), one
//                    in flight, a fresh ClientContext per call: the round
//                    trip's latency
//   Echo/*/SIZE      a blocking stub's echo of a BytesMsg of SIZE octets
//                    (64 KiB, 1 MiB, 16 MiB); bytes_per_second counts the
//                    octets of both ways (2 x SIZE per call)
//   Stream/*/N/SIZE  one server stream of N messages (Chunk of SIZE
//                    octets) read to its end, stream open and Finish
//                    included; msgs_per_second is N per stream
// Rows named grpc_tcp are the baseline; each rpcrdma row carries its ratio
// to the gRPC row of the same figure measured earlier in this run (the
// median of its repetitions): latency_to_grpc (the rpcrdma call's time
// divided by gRPC's: below 1 is faster), throughput_to_grpc and
// msgs_per_second_to_grpc (rpcrdma's rate divided by gRPC's: above 1 is
// faster), and beside it the goal set for that figure (target_max or
// target_min). The summary after the rows gives each row's min and median
// time per iteration and their ratios to grpc_tcp's (a time ratio
// everywhere: for Echo and Stream the inverse of the rate's).
//
// The rows run in registration order, gRPC's first in each figure, all
// repetitions of one row before the next: the ratio counters need the
// baseline measured before the row that divides by it, so the random
// interleaving two_process_bench uses is off here (it may be turned on
// with --benchmark_enable_random_interleaving=true; the counters then use
// what gRPC measured so far, the summary every repetition).
//
// Run it with `make bench-protobuf` (or build/bench/protobuf/
// protobuf_grpc_bench; Google Benchmark's flags apply, --benchmark_filter
// among them). Built only when grpc++ and grpc_cpp_plugin are installed:
// gRPC is this benchmark's, never the library's.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/api/ratio_reporter.h"
#include "bench/api/server_fork.h"
#include "grpcpp/grpcpp.h"
#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma/protobuf/stream.h"
#include "rpcrdma/server.h"
#include "rpcrdma_bench/bench.grpc.pb.h"
#include "rpcrdma_bench/bench.rpcrdma.pb.h"

namespace rpcrdma::bench {
namespace {

using Clock = std::chrono::steady_clock;
using rpcrdma_bench::BytesMsg;
using rpcrdma_bench::Chunk;
using rpcrdma_bench::EmptyMsg;
using rpcrdma_bench::StreamRequest;

constexpr int64_t kStreamMessages = 10000;
constexpr int64_t kStreamMessageSize = 4096;
// The largest echo (16 MiB) and its framing: gRPC refuses messages above
// 4 MiB unless told, and the rpcrdma client offers a reply chunk of this
// size for Echo only (a reply chunk is set aside per call in flight, so
// the other methods keep the default).
constexpr int kLargestMessage = 20 << 20;

// The goals set for the adapter against gRPC (reported, not tuned to).
constexpr double kEmptyLatencyTargetMax = 0.3;
constexpr double kLargeEchoThroughputTargetMin = 5.0;
constexpr int64_t kLargeEcho = int64_t{16} << 20;
constexpr double kStreamRateTargetMin = 2.0;

struct Endpoints {
  std::string soft_unix;
  std::string soft_tcp;
  int grpc_port = 0;
};

Endpoints& Served() {
  static Endpoints endpoints;
  return endpoints;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "protobuf_grpc_bench: %s\n", what.c_str());
  std::exit(1);
}

// ---- the server process -----------------------------------------------------

// Both services do the same work per call: nothing, one copy of the
// request, `count` copies of one payload.
class RdmaBenchService final
    : public rpcrdma_bench::rdma::BenchService::Service {
 public:
  void Empty(protobuf::ServerContext* /*context*/, const EmptyMsg* /*request*/,
             EmptyMsg* /*response*/, protobuf::Completion done) override {
    done.Finish(absl::OkStatus());
  }
  void Echo(protobuf::ServerContext* /*context*/, const BytesMsg* request,
            BytesMsg* response, protobuf::Completion done) override {
    *response = *request;
    done.Finish(absl::OkStatus());
  }
  protobuf::Status Stream(protobuf::ServerContext* /*context*/,
                          const StreamRequest* request,
                          protobuf::ServerWriter<Chunk>* writer) override {
    const std::string data(request->size(), 'S');
    for (uint32_t i = 0; i < request->count(); ++i) {
      Chunk chunk;
      chunk.set_data(data);
      // Moved: the adapter lends the message's strings to the transport.
      if (!writer->Write(std::move(chunk))) break;
    }
    return absl::OkStatus();
  }
};

class GrpcBenchService final : public rpcrdma_bench::BenchService::Service {
 public:
  grpc::Status Empty(grpc::ServerContext* /*context*/,
                     const EmptyMsg* /*request*/,
                     EmptyMsg* /*response*/) override {
    return grpc::Status::OK;
  }
  grpc::Status Echo(grpc::ServerContext* /*context*/, const BytesMsg* request,
                    BytesMsg* response) override {
    *response = *request;
    return grpc::Status::OK;
  }
  grpc::Status Stream(grpc::ServerContext* /*context*/,
                      const StreamRequest* request,
                      grpc::ServerWriter<Chunk>* writer) override {
    const std::string data(request->size(), 'S');
    for (uint32_t i = 0; i < request->count(); ++i) {
      Chunk chunk;
      chunk.set_data(data);
      if (!writer->Write(chunk)) break;
    }
    return grpc::Status::OK;
  }
};

// One rpcrdma Server and the ServiceSet it serves.
struct RdmaServer {
  RdmaBenchService service;
  protobuf::ServiceSet services;
  std::unique_ptr<Server> server;
};

std::unique_ptr<RdmaServer> StartRdmaServer(const std::string& uri) {
  auto s = std::make_unique<RdmaServer>();
  if (!s->services.Register(&s->service).ok()) return nullptr;
  ServerOptions options;
  options.on_connection = s->services.ConnectionObserver();
  auto server = Server::Create(uri, config::TransportConfig(),
                               s->services.Handler(), std::move(options));
  if (!server.ok()) return nullptr;
  s->server = *std::move(server);
  return s;
}

// The child: starts the servers, writes where they listen as one line to
// `report`, and serves until the parent goes (its end of `alive` closes).
[[noreturn]] void Serve(int report, int alive) {
  std::unique_ptr<RdmaServer> unix_server = StartRdmaServer(
      absl::StrCat("soft+unix://@rpcrdma-protobuf-grpc-bench-", getpid()));
  std::unique_ptr<RdmaServer> tcp_server =
      StartRdmaServer("soft+tcp://127.0.0.1:0");
  if (unix_server == nullptr || tcp_server == nullptr) _exit(2);
  GrpcBenchService grpc_service;
  int grpc_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &grpc_port);
  builder.SetMaxReceiveMessageSize(kLargestMessage);
  builder.SetMaxSendMessageSize(kLargestMessage);
  builder.RegisterService(&grpc_service);
  std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  if (grpc_server == nullptr || grpc_port == 0) _exit(3);
  const std::string line =
      absl::StrCat(unix_server->server->uri(), " ", tcp_server->server->uri(),
                   " ", grpc_port, "\n");
  if (write(report, line.data(), line.size()) !=
      static_cast<ssize_t>(line.size())) {
    _exit(4);
  }
  char byte;
  while (read(alive, &byte, 1) > 0) {
  }
  // Not a clean shutdown: the parent is gone and nothing here is checked.
  _exit(0);
}

void StartServerProcess() {
  absl::StatusOr<ForkedServer> server = ForkServer(Serve);
  if (!server.ok()) Fail(std::string(server.status().message()));
  close(server->report);
  std::istringstream fields(server->line);
  Endpoints& e = Served();
  if (!(fields >> e.soft_unix >> e.soft_tcp >> e.grpc_port)) {
    Fail(ServerDidNotStart(*server));
  }
}

// ---- the baseline and the ratios --------------------------------------------

// gRPC's seconds per iteration, one per repetition, by figure ("Empty",
// "Echo/65536", "Stream").
std::map<std::string, std::vector<double>>& GrpcSeconds() {
  static std::map<std::string, std::vector<double>> seconds;
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Times the benchmark loop as Google Benchmark does (real time), so that a
// row can compare itself with gRPC's before the reporter sees either.
class LoopTimer {
 public:
  LoopTimer() : start_(Clock::now()) {}
  double SecondsPerIteration(const benchmark::State& state) const {
    if (state.iterations() == 0) return 0;
    return std::chrono::duration<double>(Clock::now() - start_).count() /
           static_cast<double>(state.iterations());
  }

 private:
  Clock::time_point start_;
};

enum class Side { kGrpc, kRdma };

// gRPC's row records its time; an rpcrdma row sets `counter` to gRPC's
// median time over its own (`rate` true: a rate ratio, above 1 faster) or
// its own over gRPC's (false: a latency ratio, below 1 faster).
void Compare(benchmark::State& state, Side side, const std::string& figure,
             double seconds, const char* counter, bool rate) {
  if (seconds <= 0) return;
  std::vector<double>& grpc = GrpcSeconds()[figure];
  if (side == Side::kGrpc) {
    grpc.push_back(seconds);
    return;
  }
  if (grpc.empty()) return;
  const double baseline = Median(grpc);
  state.counters[counter] = rate ? baseline / seconds : seconds / baseline;
}

// ---- the clients ------------------------------------------------------------

std::shared_ptr<protobuf::Channel> RdmaChannel(benchmark::State& state,
                                               const std::string& uri) {
  protobuf::ChannelOptions options;
  options.max_reply_size_by_method["rpcrdma_bench.BenchService.Echo"] =
      kLargestMessage;
  auto channel = protobuf::Channel::Create(uri, std::move(options));
  if (!channel.ok()) {
    state.SkipWithError(std::string(channel.status().message()).c_str());
    return nullptr;
  }
  return *std::move(channel);
}

std::unique_ptr<rpcrdma_bench::BenchService::Stub> GrpcStub() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kLargestMessage);
  args.SetMaxSendMessageSize(kLargestMessage);
  return rpcrdma_bench::BenchService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", Served().grpc_port),
                                grpc::InsecureChannelCredentials(), args));
}

// One call of each stack, the same shape: true when it succeeded.
class RdmaClient {
 public:
  explicit RdmaClient(std::shared_ptr<protobuf::Channel> channel)
      : stub_(std::move(channel)) {}
  bool Empty() {
    protobuf::ClientContext context;
    return stub_.Empty(&context, request_, &response_).ok();
  }
  bool Echo(const BytesMsg& request, BytesMsg* response) {
    protobuf::ClientContext context;
    return stub_.Echo(&context, request, response).ok();
  }
  bool Stream(const StreamRequest& request, int64_t* read) {
    protobuf::ClientContext context;
    auto reader = stub_.Stream(&context, request);
    Chunk chunk;
    *read = 0;
    while (reader->Read(&chunk)) ++*read;
    return reader->Finish().ok();
  }

 private:
  rpcrdma_bench::rdma::BenchService::Stub stub_;
  EmptyMsg request_, response_;
};

class GrpcClient {
 public:
  GrpcClient() : stub_(GrpcStub()) {}
  bool Empty() {
    grpc::ClientContext context;
    return stub_->Empty(&context, request_, &response_).ok();
  }
  bool Echo(const BytesMsg& request, BytesMsg* response) {
    grpc::ClientContext context;
    return stub_->Echo(&context, request, response).ok();
  }
  bool Stream(const StreamRequest& request, int64_t* read) {
    grpc::ClientContext context;
    auto reader = stub_->Stream(&context, request);
    Chunk chunk;
    *read = 0;
    while (reader->Read(&chunk)) ++*read;
    return reader->Finish().ok();
  }

 private:
  std::unique_ptr<rpcrdma_bench::BenchService::Stub> stub_;
  EmptyMsg request_, response_;
};

template <typename Client>
void RunEmpty(benchmark::State& state, Client& client, Side side) {
  // Connected and warm before the timing starts, as a long-lived client.
  if (!client.Empty()) {
    state.SkipWithError("the first call failed");
    return;
  }
  LoopTimer timer;
  for (auto _ : state) {
    if (!client.Empty()) {
      state.SkipWithError("call failed");
      break;
    }
  }
  Compare(state, side, "Empty", timer.SecondsPerIteration(state),
          "latency_to_grpc", false);
  if (side == Side::kRdma)
    state.counters["target_max"] = kEmptyLatencyTargetMax;
}

template <typename Client>
void RunEcho(benchmark::State& state, Client& client, Side side) {
  const int64_t size = state.range(0);
  BytesMsg request;
  request.set_data(std::string(static_cast<size_t>(size), 'Z'));
  BytesMsg response;
  if (!client.Echo(request, &response)) {
    state.SkipWithError("the first call failed");
    return;
  }
  LoopTimer timer;
  for (auto _ : state) {
    if (!client.Echo(request, &response) ||
        static_cast<int64_t>(response.data().size()) != size) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  state.SetBytesProcessed(state.iterations() * 2 * size);
  Compare(state, side, absl::StrCat("Echo/", size),
          timer.SecondsPerIteration(state), "throughput_to_grpc", true);
  if (side == Side::kRdma && size == kLargeEcho) {
    state.counters["target_min"] = kLargeEchoThroughputTargetMin;
  }
}

template <typename Client>
void RunStream(benchmark::State& state, Client& client, Side side) {
  StreamRequest request;
  request.set_count(static_cast<uint32_t>(state.range(0)));
  request.set_size(static_cast<uint32_t>(state.range(1)));
  int64_t read = 0;
  LoopTimer timer;
  for (auto _ : state) {
    if (!client.Stream(request, &read) || read != state.range(0)) {
      state.SkipWithError("the stream failed or was short");
      break;
    }
  }
  state.counters["msgs_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * state.range(0)),
      benchmark::Counter::kIsRate);
  Compare(state, side, "Stream", timer.SecondsPerIteration(state),
          "msgs_per_second_to_grpc", true);
  if (side == Side::kRdma) state.counters["target_min"] = kStreamRateTargetMin;
}

// Each row makes its own connection, outside the timing.
void Rdma(benchmark::State& state, const std::string* uri,
          void (*run)(benchmark::State&, RdmaClient&, Side)) {
  std::shared_ptr<protobuf::Channel> channel = RdmaChannel(state, *uri);
  if (channel == nullptr) return;
  RdmaClient client(std::move(channel));
  run(state, client, Side::kRdma);
}

void Grpc(benchmark::State& state,
          void (*run)(benchmark::State&, GrpcClient&, Side)) {
  GrpcClient client;
  run(state, client, Side::kGrpc);
}

void Register() {
  using benchmark::RegisterBenchmark;
  static const std::string* unix_uri = &Served().soft_unix;
  static const std::string* tcp_uri = &Served().soft_tcp;
  // Per figure: gRPC's row first (the ratio counters divide by it), then
  // rpcrdma's over each soft transport.
  auto figure = [](const std::string& family, auto grpc_run, auto rdma_run,
                   auto configure) {
    configure(RegisterBenchmark((family + "/grpc_tcp").c_str(), Grpc, grpc_run)
                  ->UseRealTime());
    configure(RegisterBenchmark((family + "/rpcrdma_soft_unix").c_str(), Rdma,
                                unix_uri, rdma_run)
                  ->UseRealTime());
    configure(RegisterBenchmark((family + "/rpcrdma_soft_tcp").c_str(), Rdma,
                                tcp_uri, rdma_run)
                  ->UseRealTime());
  };
  figure("Empty", &RunEmpty<GrpcClient>, &RunEmpty<RdmaClient>,
         [](benchmark::internal::Benchmark* b) {
           b->Unit(benchmark::kMicrosecond);
         });
  for (int64_t size : {int64_t{64} << 10, int64_t{1} << 20, kLargeEcho}) {
    figure("Echo", &RunEcho<GrpcClient>, &RunEcho<RdmaClient>,
           [size](benchmark::internal::Benchmark* b) {
             b->Arg(size)->Unit(benchmark::kMillisecond);
           });
  }
  figure("Stream", &RunStream<GrpcClient>, &RunStream<RdmaClient>,
         [](benchmark::internal::Benchmark* b) {
           b->Args({kStreamMessages, kStreamMessageSize})
               ->Unit(benchmark::kMillisecond);
         });
}

// Google Benchmark's flags, with this benchmark's defaults put first so
// that the command line overrides them.
std::vector<char*> WithDefaults(int argc, char** argv) {
  static std::vector<std::string> storage;
  storage = {argv[0], "--benchmark_repetitions=3", "--benchmark_min_time=0.2"};
  for (int i = 1; i < argc; ++i) storage.push_back(argv[i]);
  std::vector<char*> args;
  for (std::string& s : storage) args.push_back(s.data());
  return args;
}

}  // namespace
}  // namespace rpcrdma::bench

int main(int argc, char** argv) {
  using namespace rpcrdma::bench;
  std::vector<char*> args = WithDefaults(argc, argv);
  // Before any thread starts (gRPC's included): the server process is a
  // fork of this one.
  StartServerProcess();
  Register();
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::AddCustomContext("load_average_at_start", LoadAverage());
  benchmark::AddCustomContext("grpc_version", grpc::Version());
  RatioReporter reporter({{"Empty", {"grpc_tcp"}},
                          {"Echo", {"grpc_tcp"}},
                          {"Stream", {"grpc_tcp"}}});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
