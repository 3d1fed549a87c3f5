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
#include <thrift/server/TSimpleServer.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "Bench.h"
#include "absl/strings/str_cat.h"
#include "bench/api/thrift_baseline.h"
#include "rpcrdma/thrift/rdma_server_socket.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace rpcrdma::bench {
namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TBinaryProtocolFactory;

class Handler : public thrift::BenchIf {
 public:
  void ping() override {}
  void echo(std::string& result, const std::string& data) override {
    result = data;
  }
};

class Ready : public apache::thrift::server::TServerEventHandler {
 public:
  void preServe() override {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return ready_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
};

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
  explicit BridgePair(uint32_t busy_poll_us) {
    static std::atomic<int> counter{0};
    socket_ = std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(
        absl::StrCat("soft+unix://@rpcrdma-thrift-bench-", getpid(), "-",
                     counter++),
        BridgeConfig(busy_poll_us));
    server_ = std::make_shared<apache::thrift::server::TSimpleServer>(
        std::make_shared<thrift::BenchProcessor>(std::make_shared<Handler>()),
        socket_,
        std::make_shared<apache::thrift::transport::TTransportFactory>(),
        std::make_shared<TBinaryProtocolFactory>());
    auto ready = std::make_shared<Ready>();
    server_->setServerEventHandler(ready);
    thread_ = std::thread([server = server_] { server->serve(); });
    ready->Wait();
    transport_ = std::make_shared<rpcrdma::thrift::TRdmaSocket>(
        socket_->uri(), BridgeConfig(busy_poll_us));
    client_ = std::make_unique<thrift::BenchClient>(
        std::make_shared<TBinaryProtocol>(transport_));
    transport_->open();
  }
  ~BridgePair() {
    transport_->close();
    server_->stop();
    thread_.join();
  }
  thrift::BenchClient& client() { return *client_; }

 private:
  std::shared_ptr<rpcrdma::thrift::TRdmaServerSocket> socket_;
  std::shared_ptr<apache::thrift::server::TServer> server_;
  std::thread thread_;
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
