// The Thrift bridge against Thrift's own TSocket, in the same
// run, with the same generated code (bench/api/bench.thrift: Bench.ping,
// Bench.echo), TBinaryProtocol and TSimpleServer on both sides:
//   VoidCall/*        ping(): one round trip, one call in flight
//   Echo/*/SIZE       echo(SIZE octets): the argument one way, the result
//                     back; bytes_per_second is each way
// Rows:
//   bridge_soft_unix            TRdmaSocket / TRdmaServerSocket over
//                               soft+unix, the bridge's defaults
//   bridge_soft_unix_busy_poll  the same with execution.busy_poll_us on
//                               both sides (a core spent per waiting side)
//   tsocket_buffered            TSocket + TBufferedTransport on loopback TCP
//   tsocket_framed              TSocket + TFramedTransport on loopback TCP
// Ratios between rows of one run are what count: the machine is shared.
#include <benchmark/benchmark.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "Bench.h"
#include "absl/strings/str_cat.h"
#include "bench/api/thrift_baseline.h"
#include "bench/thrift/bridge_bench_server.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace rpcrdma::bench {
namespace {

using apache::thrift::protocol::TBinaryProtocol;

config::TransportConfig BridgeConfig(uint32_t busy_poll_us) {
  config::TransportConfig config;
  if (busy_poll_us > 0) {
    config.mutable_execution()->set_busy_poll_us(busy_poll_us);
  }
  return config;
}

// A TSimpleServer on a TRdmaServerSocket and a generated client on a
// TRdmaSocket: the one-line swap of thrift_baseline's pair.
class BridgePair {
 public:
  explicit BridgePair(uint32_t busy_poll_us)
      : server_(FreshUri(), BridgeConfig(busy_poll_us)) {
    transport_ = std::make_shared<rpcrdma::thrift::TRdmaSocket>(
        server_.uri(), BridgeConfig(busy_poll_us));
    client_ = std::make_unique<thrift::BenchClient>(
        std::make_shared<TBinaryProtocol>(transport_));
    transport_->open();
  }
  ~BridgePair() { transport_->close(); }
  thrift::BenchClient& client() { return *client_; }

 private:
  static std::string FreshUri() {
    static std::atomic<int> counter{0};
    return absl::StrCat("soft+unix://@rpcrdma-thrift-bench-", getpid(), "-",
                        counter++);
  }

  BridgeBenchServer server_;
  std::shared_ptr<rpcrdma::thrift::TRdmaSocket> transport_;
  std::unique_ptr<thrift::BenchClient> client_;
};

void VoidCallBridge(benchmark::State& state, uint32_t busy_poll_us) {
  BridgePair pair(busy_poll_us);
  pair.client().ping();
  for (auto _ : state) pair.client().ping();
}

void VoidCallTSocket(benchmark::State& state, ThriftFraming framing) {
  auto server = ThriftServer::Start(ThriftServer::Kind::kSimple, framing);
  ThriftClient client(server->port(), framing);
  client.Ping();
  for (auto _ : state) client.Ping();
}

void EchoBridge(benchmark::State& state, uint32_t busy_poll_us) {
  const size_t size = static_cast<size_t>(state.range(0));
  BridgePair pair(busy_poll_us);
  const std::string argument(size, 'Z');
  std::string result;
  // The first large reply teaches the client the write chunk echo needs
  // (bridge/README.md, THRIFT_FETCH).
  pair.client().echo(result, argument);
  for (auto _ : state) {
    pair.client().echo(result, argument);
    if (result.size() != size) state.SkipWithError("short echo");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

void EchoTSocket(benchmark::State& state, ThriftFraming framing) {
  const size_t size = static_cast<size_t>(state.range(0));
  auto server = ThriftServer::Start(ThriftServer::Kind::kSimple, framing);
  ThriftClient client(server->port(), framing);
  const std::string argument(size, 'Z');
  std::string result;
  client.Echo(result, argument);
  for (auto _ : state) {
    client.Echo(result, argument);
    if (result.size() != size) state.SkipWithError("short echo");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

constexpr uint32_t kBusyPollUs = 200;

void Register() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("VoidCall/bridge_soft_unix", VoidCallBridge, 0)
      ->UseRealTime();
  RegisterBenchmark("VoidCall/bridge_soft_unix_busy_poll", VoidCallBridge,
                    kBusyPollUs)
      ->UseRealTime();
  RegisterBenchmark("VoidCall/tsocket_buffered", VoidCallTSocket,
                    ThriftFraming::kBuffered)
      ->UseRealTime();
  RegisterBenchmark("VoidCall/tsocket_framed", VoidCallTSocket,
                    ThriftFraming::kFramed)
      ->UseRealTime();
  for (int64_t size :
       {int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20}) {
    RegisterBenchmark("Echo/bridge_soft_unix", EchoBridge, 0)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/bridge_soft_unix_busy_poll", EchoBridge,
                      kBusyPollUs)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/tsocket_buffered", EchoTSocket,
                      ThriftFraming::kBuffered)
        ->Arg(size)
        ->UseRealTime();
    RegisterBenchmark("Echo/tsocket_framed", EchoTSocket,
                      ThriftFraming::kFramed)
        ->Arg(size)
        ->UseRealTime();
  }
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
