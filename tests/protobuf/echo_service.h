// The test services: Echo (answers now, later from another thread, or
// never), Adder, Ticker (a server stream of what the request asks for) and
// Collector (client-streaming and bidirectional, collector_service.h).
#ifndef RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_
#define RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma/server.h"
#include "rpcrdma_test/echo.rpcrdma.pb.h"
#include "rpcrdma_test/stream.rpcrdma.pb.h"
#include "tests/protobuf/collector_service.h"

namespace rpcrdma::test {

class EchoService : public rpcrdma_test::rdma::Echo::Service {
 public:
  ~EchoService() override;
  void Echo(protobuf::ServerContext* context,
            const rpcrdma_test::EchoRequest* request,
            rpcrdma_test::EchoRequest* response,
            protobuf::Completion done) override;
  void EchoLater(protobuf::ServerContext* context,
                 const rpcrdma_test::EchoRequest* request,
                 rpcrdma_test::EchoRequest* response,
                 protobuf::Completion done) override;
  void Drop(protobuf::ServerContext* context,
            const rpcrdma_test::EchoRequest* request,
            rpcrdma_test::EchoRequest* response,
            protobuf::Completion done) override;

  // Threads EchoLater answered from (not the handler's).
  std::vector<std::thread::id> answer_threads();

 private:
  absl::Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> answer_threads_ ABSL_GUARDED_BY(mu_);
};

class AdderService : public rpcrdma_test::rdma::Adder::Service {
 public:
  void Add(protobuf::ServerContext* context,
           const rpcrdma_test::AddRequest* request,
           rpcrdma_test::AddReply* response,
           protobuf::Completion done) override;
};

class TickerService : public rpcrdma_test::rdma::Ticker::Service {
 public:
  protobuf::Status Watch(
      protobuf::ServerContext* context,
      const rpcrdma_test::WatchRequest* request,
      protobuf::ServerWriter<rpcrdma_test::Tick>* writer) override;

  // Writes that returned true, over every stream.
  int writes() const { return writes_.load(); }
  // Waits (at most `limit`) until `n` handlers have returned; how many of
  // them saw ServerContext::IsCancelled() true when they did.
  bool WaitForHandlersEnded(int n, std::chrono::seconds limit);
  int handlers_cancelled();

 private:
  std::atomic<int> writes_{0};
  absl::Mutex mu_;
  int ended_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_ ABSL_GUARDED_BY(mu_) = 0;
};

// The payload of Tick `seq` in a stream of `size`-octet payloads.
std::string TickPayload(uint64_t seq, size_t size);

// A Server serving all four on `uri`, with handler threads (handlers
// sleep).
struct TestServer {
  explicit TestServer(protobuf::ServiceSetOptions options)
      : services(options) {}
  EchoService echo;
  AdderService adder;
  TickerService ticker;
  CollectorService collector;
  protobuf::ServiceSet services;
  std::unique_ptr<::rpcrdma::Server> server;
};
std::unique_ptr<TestServer> StartTestServer(
    const std::string& uri, protobuf::ServiceSetOptions options = {});

// "unix": an abstract Unix socket of this process; "tcp": a free port;
// "rdma": a free port on the Soft-RoCE device of the test VM.
std::string TestUri(const std::string& scheme);

// Replies of up to 20 MiB (the 16 MiB bulk tests).
protobuf::ChannelOptions TestChannelOptions();

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_
