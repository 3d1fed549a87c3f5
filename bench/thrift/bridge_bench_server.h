// The Bench service (bench/api/bench.thrift: ping, echo) served the way a
// Thrift program moved to RDMA serves it: TSimpleServer on a
// TRdmaServerSocket, TBinaryProtocol. The bridge's side of the
// benchmarks, in the benchmark's own process or in a server process.
#ifndef RPCRDMA_BENCH_THRIFT_BRIDGE_BENCH_SERVER_H_
#define RPCRDMA_BENCH_THRIFT_BRIDGE_BENCH_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "rpcrdma/config.pb.h"

namespace apache::thrift::server {
class TServer;
}  // namespace apache::thrift::server

namespace rpcrdma::bench {

class BridgeBenchServer {
 public:
  // Serving at `uri` once the constructor returns.
  BridgeBenchServer(const std::string& uri,
                    const config::TransportConfig& config);
  ~BridgeBenchServer();
  BridgeBenchServer(const BridgeBenchServer&) = delete;
  BridgeBenchServer& operator=(const BridgeBenchServer&) = delete;

  const std::string& uri() const { return uri_; }

 private:
  std::string uri_;
  std::shared_ptr<apache::thrift::server::TServer> server_;
  std::thread thread_;
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_THRIFT_BRIDGE_BENCH_SERVER_H_
