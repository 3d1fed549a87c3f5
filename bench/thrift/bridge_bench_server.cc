#include "bench/thrift/bridge_bench_server.h"

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TSimpleServer.h>

#include <condition_variable>
#include <mutex>
#include <utility>

#include "Bench.h"
#include "rpcrdma/thrift/rdma_server_socket.h"

namespace rpcrdma::bench {
namespace {

class Handler : public thrift::BenchIf {
 public:
  void ping() override {}
  void echo(std::string& result, const std::string& data) override {
    result = data;
  }
};

// Tells the constructor that the server is accepting.
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

}  // namespace

BridgeBenchServer::BridgeBenchServer(const std::string& uri,
                                     const config::TransportConfig& config) {
  auto socket =
      std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(uri, config);
  server_ = std::make_shared<apache::thrift::server::TSimpleServer>(
      std::make_shared<thrift::BenchProcessor>(std::make_shared<Handler>()),
      socket, std::make_shared<apache::thrift::transport::TTransportFactory>(),
      std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>());
  auto ready = std::make_shared<Ready>();
  server_->setServerEventHandler(ready);
  thread_ = std::thread([server = server_] { server->serve(); });
  ready->Wait();
  uri_ = socket->uri();
}

BridgeBenchServer::~BridgeBenchServer() {
  server_->stop();
  thread_.join();
}

}  // namespace rpcrdma::bench
