#include "bench/thrift/bridge_bench_server.h"

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TSimpleServer.h>

#include <utility>

#include "Bench.h"
#include "bench/api/thrift_baseline.h"
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

}  // namespace

BridgeBenchServer::BridgeBenchServer(const std::string& uri,
                                     const config::TransportConfig& config) {
  auto socket =
      std::make_shared<rpcrdma::thrift::TRdmaServerSocket>(uri, config);
  server_ = std::make_shared<apache::thrift::server::TSimpleServer>(
      std::make_shared<thrift::BenchProcessor>(std::make_shared<Handler>()),
      socket, std::make_shared<apache::thrift::transport::TTransportFactory>(),
      std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>());
  thread_ = ServeInBackground(server_);
  uri_ = socket->uri();
}

BridgeBenchServer::~BridgeBenchServer() {
  server_->stop();
  thread_.join();
}

}  // namespace rpcrdma::bench
