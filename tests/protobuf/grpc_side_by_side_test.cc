// grpc_cpp_plugin's and protoc-gen-rpcrdma's output for the same .proto in
// one program (rpcrdma_test::Echo and rpcrdma_test::rdma::Echo), each
// serving one call.
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpcrdma_test/echo.grpc.pb.h"
#include "rpcrdma_test/echo.rpcrdma.pb.h"
#include "tests/protobuf/echo_service.h"

namespace rpcrdma::test {

using protobuf::Channel;
using protobuf::ClientContext;

namespace {

class GrpcEcho final : public rpcrdma_test::Echo::Service {
  grpc::Status Echo(grpc::ServerContext* /*context*/,
                    const rpcrdma_test::EchoRequest* request,
                    rpcrdma_test::EchoRequest* response) override {
    *response = *request;
    return grpc::Status::OK;
  }
};

TEST(GrpcSideBySideTest, BothGeneratedServicesServeInOneProgram) {
  GrpcEcho grpc_echo;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&grpc_echo);
  std::unique_ptr<grpc::Server> grpc_server = builder.BuildAndStart();
  ASSERT_NE(grpc_server, nullptr);
  auto grpc_stub = rpcrdma_test::Echo::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  rpcrdma_test::EchoRequest request;
  request.set_text("over grpc");
  rpcrdma_test::EchoRequest response;
  grpc::ClientContext grpc_context;
  ASSERT_TRUE(grpc_stub->Echo(&grpc_context, request, &response).ok());
  EXPECT_EQ(response.text(), "over grpc");

  std::unique_ptr<TestServer> server = StartTestServer(TestUri("unix"));
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::shared_ptr<Channel>> channel =
      Channel::Create(server->server->uri());
  ASSERT_TRUE(channel.ok()) << channel.status();
  rpcrdma_test::rdma::Echo::Stub stub(*channel);
  request.set_text("over rpcrdma");
  ClientContext context;
  ASSERT_TRUE(stub.Echo(&context, request, &response).ok());
  EXPECT_EQ(response.text(), "over rpcrdma");
  grpc_server->Shutdown();
}

}  // namespace
}  // namespace rpcrdma::test
