// What the stream tests share (stream_test.cc, client_stream_test.cc): a
// test server over the parameter's transport, a Channel to it, and the two
// checks every early end of a stream is followed by.
#ifndef RPCRDMA_TESTS_PROTOBUF_STREAM_FIXTURE_H_
#define RPCRDMA_TESTS_PROTOBUF_STREAM_FIXTURE_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/test_schemes.h"

namespace rpcrdma::test {

class StreamFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = StartTestServer(TestUri(GetParam()));
    ASSERT_NE(server_, nullptr);
    protobuf::ChannelOptions options;
    // Each NEXT offers a reply chunk this large (a 1 MiB payload and its
    // message): kept small, as the window sets one aside per call.
    options.max_reply_size = 2 << 20;
    absl::StatusOr<std::shared_ptr<protobuf::Channel>> channel =
        protobuf::Channel::Create(server_->server->uri(), options);
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = *channel;
  }

  // Waits until the server holds no stream's state (its table is empty).
  bool ServerDroppedEveryStream() {
    for (int i = 0; i < 3000; ++i) {
      if (server_->services.stream_counters().open == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // The SEND and NEXT calls outstanding when a stream ends early are
  // answered by the server, not ended at the client: one ended there has
  // its chunks revoked, and the server's RDMA operations on them (or its
  // Send With Invalidate, RFC 8797 §4.1) would break the connection.
  void ExpectTheConnectionSurvived() {
    rpcrdma_test::rdma::Echo::Stub echo(channel_);
    rpcrdma_test::EchoRequest request;
    rpcrdma_test::EchoRequest response;
    protobuf::ClientContext context;
    EXPECT_TRUE(echo.Echo(&context, request, &response).ok());
    EXPECT_EQ(channel_->transport().counters().reconnects, 0u);
  }

  std::unique_ptr<TestServer> server_;
  std::shared_ptr<protobuf::Channel> channel_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_STREAM_FIXTURE_H_
