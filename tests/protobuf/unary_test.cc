// Unary calls through generated stubs and services over both soft
// transports (protobuf/README.md is the Upper Layer Binding, RFC 8166 §6).
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "rpcrdma/protobuf/program.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/test_schemes.h"

namespace rpcrdma::test {

using protobuf::Channel;
using protobuf::ClientContext;
using protobuf::kMaxMetadataValue;
using protobuf::ProgramNumberFor;
using protobuf::Status;

namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class UnaryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = StartTestServer(TestUri(GetParam()));
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::shared_ptr<Channel>> channel =
        Channel::Create(server_->server->uri(), TestChannelOptions());
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = *channel;
    echo_ = std::make_unique<rpcrdma_test::rdma::Echo::Stub>(channel_);
  }

  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<rpcrdma_test::rdma::Echo::Stub> echo_;
};

rpcrdma_test::EchoRequest EveryKindOfField() {
  rpcrdma_test::EchoRequest r;
  r.set_i32(-7);
  r.set_i64(1ll << 40);
  r.set_u64(~0ull);
  r.set_real(2.5);
  r.set_flag(true);
  r.set_text("hello");
  r.set_color(rpcrdma_test::COLOR_GREEN);
  r.set_payload("small");
  r.mutable_inner()->mutable_blob()->set_label("nested");
  r.add_inners()->add_chunks("a");
  r.add_many("b");
  (*r.mutable_blobs())["k"] = "v";
  (*r.mutable_by_id())[3].set_payload("p");
  r.set_chosen_text("oneof");
  r.mutable_sent_at()->set_seconds(1700000000);
  r.set_maybe("");
  r.add_numbers(-1);
  return r;
}

TEST_P(UnaryTest, Rfc8166_6_EveryKindOfFieldRoundTrips) {
  const rpcrdma_test::EchoRequest request = EveryKindOfField();
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  ASSERT_TRUE(echo_->Echo(&context, request, &response).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(request, response))
      << response.DebugString();
  EXPECT_TRUE(response.has_maybe());  // explicit presence survives
}

TEST_P(UnaryTest, SecondServiceOnTheSameServer) {
  rpcrdma_test::rdma::Adder::Stub adder(channel_);
  rpcrdma_test::AddRequest request;
  request.set_a(40);
  request.set_b(2);
  rpcrdma_test::AddReply reply;
  ClientContext context;
  ASSERT_TRUE(adder.Add(&context, request, &reply).ok());
  EXPECT_EQ(reply.sum(), 42);
  EXPECT_NE(adder.program(), echo_->program());
}

TEST_P(UnaryTest, ProgramNumberIsInRfc5531LocalBlock) {
  for (const char* name : {"rpcrdma_test.Echo", "rpcrdma_test.Adder", ""}) {
    const uint32_t program = ProgramNumberFor(name);
    EXPECT_GE(program, 0x20000000u) << name;
    EXPECT_LE(program, 0x3fffffffu) << name;
  }
}

TEST_P(UnaryTest, MetadataTravelsBothWays) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.AddMetadata("user", "alice");
  context.AddMetadata("trace", std::string(100, 'x'));
  context.set_timeout(std::chrono::seconds(30));
  ASSERT_TRUE(echo_->Echo(&context, request, &response).ok());
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("echo-user", "alice"),
                                   Pair("echo-trace", std::string(100, 'x')),
                                   Pair("had-deadline", "yes")));
}

TEST_P(UnaryTest, ServerContextNamesThePeer) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.AddMetadata("want-peer", "");
  ASSERT_TRUE(echo_->Echo(&context, request, &response).ok());
  ASSERT_EQ(context.trailing_metadata().count("peer"), 1u);
  const std::string peer = context.trailing_metadata().find("peer")->second;
  // A TCP or RDMA client is named by its address; a Unix-domain one,
  // which has none, by the server's own URI
  // (rpcrdma::ServerConnectionEvent::peer).
  const std::string& scheme = GetParam();
  const std::string server_uri = server_->server->uri();
  EXPECT_THAT(peer, ::testing::StartsWith(
                        scheme == "unix"
                            ? "soft+unix://@"
                            : server_uri.substr(0, server_uri.rfind(':') + 1)));
}

TEST_P(UnaryTest, TooMuchMetadataIsRefusedBeforeSending) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.AddMetadata("big", std::string(kMaxMetadataValue + 1, 'x'));
  Status s = echo_->Echo(&context, request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("values 8192"));
}

TEST_P(UnaryTest, HandlerErrorCodeAndMessageReachTheCaller) {
  rpcrdma_test::EchoRequest request;
  request.mutable_behaviour()->set_fail_code(
      static_cast<int>(absl::StatusCode::kNotFound));
  request.mutable_behaviour()->set_fail_message("no such greeting");
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.AddMetadata("user", "bob");
  Status s = echo_->Echo(&context, request, &response);
  EXPECT_EQ(s, absl::NotFoundError("no such greeting"));
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("echo-user", "bob")));
}

TEST_P(UnaryTest, SlowHandlerGivesDeadlineExceeded) {
  rpcrdma_test::EchoRequest request;
  request.mutable_behaviour()->set_sleep_ms(1000);
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.set_timeout(std::chrono::milliseconds(100));
  Status s = echo_->Echo(&context, request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST_P(UnaryTest, HandlerAnswersLaterFromAnotherThread) {
  const rpcrdma_test::EchoRequest request = EveryKindOfField();
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  ASSERT_TRUE(echo_->EchoLater(&context, request, &response).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(request, response));
  EXPECT_EQ(server_->echo.answer_threads().size(), 1u);
}

TEST_P(UnaryTest, DroppedCompletionAnswersWithAnError) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.set_timeout(std::chrono::seconds(30));
  Status s = echo_->Drop(&context, request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(s.message(), HasSubstr("dropped its completion"));
}

TEST_P(UnaryTest, MethodNotOverriddenIsUnimplemented) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  Status s = echo_->Unserved(&context, request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("rpcrdma_test.Echo.Unserved"));
}

TEST_P(UnaryTest, UnknownProgramIsUnimplemented) {
  rpcrdma_test::rdma::Echo::Stub other(channel_, 0x20000001);
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  Status s = other.Echo(&context, request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
}

TEST_P(UnaryTest, TryCancelBeforeTheCallFailsIt) {
  rpcrdma_test::EchoRequest request;
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  context.TryCancel();
  EXPECT_EQ(echo_->Echo(&context, request, &response).code(),
            absl::StatusCode::kCancelled);
}

TEST_P(UnaryTest, TryCancelDuringTheCallEndsIt) {
  rpcrdma_test::EchoRequest request;
  request.mutable_behaviour()->set_sleep_ms(1000);
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  std::promise<Status> outcome;
  echo_->Echo(&context, &request, &response,
              [&outcome](Status s) { outcome.set_value(std::move(s)); });
  context.TryCancel();
  EXPECT_EQ(outcome.get_future().get().code(), absl::StatusCode::kCancelled);
}

TEST_P(UnaryTest, SixtyFourCallsInFlightOnOneChannel) {
  constexpr int kCalls = 64;
  std::vector<rpcrdma_test::EchoRequest> requests(kCalls);
  std::vector<rpcrdma_test::EchoRequest> responses(kCalls);
  std::vector<std::unique_ptr<ClientContext>> contexts;
  std::vector<std::promise<Status>> outcomes(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    requests[i].set_i32(i);
    requests[i].set_payload(std::string(8192 + i, static_cast<char>(i)));
    contexts.push_back(std::make_unique<ClientContext>());
    contexts.back()->set_timeout(std::chrono::seconds(60));
    echo_->EchoLater(
        contexts.back().get(), &requests[i], &responses[i],
        [&outcomes, i](Status s) { outcomes[i].set_value(std::move(s)); });
  }
  for (int i = 0; i < kCalls; ++i) {
    Status s = outcomes[i].get_future().get();
    ASSERT_TRUE(s.ok()) << i << ": " << s;
    EXPECT_EQ(responses[i].i32(), i);
    EXPECT_EQ(responses[i].payload(), requests[i].payload());
    // The request got its bulk field back.
    EXPECT_EQ(requests[i].payload().size(), 8192u + i);
  }
  EXPECT_GT(channel_->transport().counters().peak_calls_outstanding, 1u);
}

// gRPC's wait-for-ready is CallRequest::wait_for_ready: while the channel
// reconnects, such a call waits for the new server instead of failing.
TEST(WaitForReadyTest, CallWaitsForTheReconnectInsteadOfFailing) {
  const std::string uri = TestUri("unix");
  std::unique_ptr<TestServer> server = StartTestServer(uri);
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::shared_ptr<Channel>> channel = Channel::Create(uri);
  ASSERT_TRUE(channel.ok()) << channel.status();
  rpcrdma_test::rdma::Echo::Stub stub(*channel);
  rpcrdma_test::EchoRequest request;
  request.set_text("after the restart");
  rpcrdma_test::EchoRequest response;
  {
    ClientContext context;
    ASSERT_TRUE(stub.Echo(&context, request, &response).ok());
  }
  server.reset();
  // Until the channel has seen the loss, a call would go out on the dead
  // connection.
  for (int i = 0; i < 1000 && (*channel)->transport().connected(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE((*channel)->transport().connected());
  {
    ClientContext context;
    EXPECT_EQ(stub.Echo(&context, request, &response).code(),
              absl::StatusCode::kUnavailable);
  }
  ClientContext context;
  context.set_wait_for_ready(true);
  context.set_timeout(std::chrono::seconds(30));
  std::promise<Status> outcome;
  stub.Echo(&context, &request, &response,
            [&outcome](Status s) { outcome.set_value(std::move(s)); });
  server = StartTestServer(uri);
  ASSERT_NE(server, nullptr);
  Status s = outcome.get_future().get();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(response.text(), "after the restart");
}

INSTANTIATE_TEST_SUITE_P(Transports, UnaryTest,
                         ::testing::ValuesIn(TestSchemes()),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace rpcrdma::test
