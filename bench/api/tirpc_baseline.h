// ONC RPC over libtirpc's own TCP transport on loopback, the other
// baseline: the same two procedures as rpcrdma-perf's program (NULL, and
// ECHO of an opaque), served by svc_vc_create in a thread of its own and
// called through clnt_vc_create.
#ifndef RPCRDMA_BENCH_API_TIRPC_BASELINE_H_
#define RPCRDMA_BENCH_API_TIRPC_BASELINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace rpcrdma::bench {

class TirpcServer {
 public:
  static std::unique_ptr<TirpcServer> Start();
  ~TirpcServer();
  int port() const { return port_; }

 private:
  TirpcServer() = default;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  int port_ = 0;
};

class TirpcClient {
 public:
  explicit TirpcClient(int port);
  ~TirpcClient();
  bool Null();
  // Echoes `data` into `result` (resized to what came back).
  bool Echo(const std::vector<uint8_t>& data, std::vector<uint8_t>& result);

 private:
  void* client_ = nullptr;  // CLIENT*
  int fd_ = -1;
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_TIRPC_BASELINE_H_
