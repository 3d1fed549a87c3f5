// Apache Thrift 0.17 on loopback TCP, the baseline rpcrdma is measured
// against: the same Bench service (bench.thrift) behind TSimpleServer or
// TNonblockingServer with a thread pool, clients over TSocket with
// TBufferedTransport or TFramedTransport and TBinaryProtocol.
#ifndef RPCRDMA_BENCH_API_THRIFT_BASELINE_H_
#define RPCRDMA_BENCH_API_THRIFT_BASELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace apache::thrift::server {
class TServer;
}  // namespace apache::thrift::server

namespace rpcrdma::bench {

enum class ThriftFraming { kBuffered, kFramed };

// Runs `server` on a thread of its own and returns that thread once the
// server is serving (its socket listens, as preServe() tells).
std::thread ServeInBackground(
    const std::shared_ptr<apache::thrift::server::TServer>& server);

class ThriftServer {
 public:
  enum class Kind {
    kSimple,       // TSimpleServer: one connection at a time
    kNonblocking,  // TNonblockingServer (framed) with a worker pool
  };
  static std::unique_ptr<ThriftServer> Start(Kind kind, ThriftFraming framing,
                                             int workers = 0);
  ~ThriftServer();
  int port() const { return port_; }

 private:
  ThriftServer() = default;
  std::shared_ptr<apache::thrift::server::TServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// One connection, used by one thread (the generated synchronous client).
class ThriftClient {
 public:
  ThriftClient(int port, ThriftFraming framing);
  ~ThriftClient();
  void Ping();
  void Echo(std::string& result, const std::string& data);

 private:
  struct State;
  void Reconnect();
  std::unique_ptr<State> state_;
  int port_;
  ThriftFraming framing_;
  uint64_t bytes_ = 0;  // moved on this connection
};

// One framed connection shared by many threads with many calls in flight
// (the generated concurrent client, TConcurrentClientSyncInfo).
class ThriftConcurrentClient {
 public:
  explicit ThriftConcurrentClient(int port);
  ~ThriftConcurrentClient();
  void Ping();  // from any thread

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_THRIFT_BASELINE_H_
