// The test services: Echo (answers now, later from another thread, or
// never) and Adder.
#ifndef RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_
#define RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma/server.h"
#include "rpcrdma_test/echo.rpcrdma.pb.h"

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

// A Server serving both on `uri`, with handler threads (handlers sleep).
struct TestServer {
  EchoService echo;
  AdderService adder;
  protobuf::ServiceSet services;
  std::unique_ptr<::rpcrdma::Server> server;
};
std::unique_ptr<TestServer> StartTestServer(const std::string& uri);

// "unix": an abstract Unix socket of this process; "tcp": a free port.
std::string TestUri(const std::string& scheme);

// Replies of up to 20 MiB (the 16 MiB bulk tests).
protobuf::ChannelOptions TestChannelOptions();

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_ECHO_SERVICE_H_
