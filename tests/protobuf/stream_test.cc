// Server-streaming methods through generated stubs and services over both
// soft transports (protobuf/README.md, "Streams"): every message is the
// reply to a NEXT call of the client's, so order, flow control (a slow
// reader holds the writer at the server's buffer), the end's status and
// trailing metadata, cancellation, deadlines, bulk fields and the loss of
// the server are each a property of ordinary RFC 5531 calls over
// RPC-over-RDMA (RFC 8166).
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/protobuf/program.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/stream_fixture.h"
#include "tests/protobuf/test_schemes.h"

namespace rpcrdma::test {
namespace {

using protobuf::Channel;
using protobuf::ChannelOptions;
using protobuf::ClientContext;
using protobuf::kDefaultStreamBuffer;
using protobuf::kDefaultStreamWindow;
using protobuf::kMaxStreamWindow;
using protobuf::ServiceSet;
using protobuf::Status;

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr auto kLimit = std::chrono::seconds(30);

class StreamTest : public StreamFixture {
 protected:
  void SetUp() override {
    StreamFixture::SetUp();
    if (HasFatalFailure()) return;
    ticker_ = std::make_unique<rpcrdma_test::rdma::Ticker::Stub>(channel_);
  }

  std::unique_ptr<rpcrdma_test::rdma::Ticker::Stub> ticker_;
};

TEST_P(StreamTest, Rfc5531_TenThousandMessagesArriveInOrder) {
  rpcrdma_test::WatchRequest request;
  request.set_count(10000);
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  uint64_t expected = 0;
  while (reader->Read(&tick)) {
    ASSERT_EQ(tick.seq(), expected);
    ++expected;
  }
  EXPECT_EQ(expected, 10000u);
  Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("ticks", "10000")));
  EXPECT_TRUE(ServerDroppedEveryStream());
}

// The window's two ends: one NEXT at a time, and the most a server
// accepts (kMaxStreamWindow, which the channel's option is clamped to).
TEST_P(StreamTest, WindowsOfOneAndOfTheMostTheServerAcceptsKeepTheOrder) {
  for (uint32_t window : {1u, kMaxStreamWindow, kMaxStreamWindow + 10}) {
    ChannelOptions options;
    options.stream_window = window;
    absl::StatusOr<std::shared_ptr<Channel>> channel =
        Channel::Create(server_->server->uri(), options);
    ASSERT_TRUE(channel.ok()) << channel.status();
    rpcrdma_test::rdma::Ticker::Stub stub(*channel);
    rpcrdma_test::WatchRequest request;
    request.set_count(2000);
    ClientContext context;
    auto reader = stub.Watch(&context, request);
    rpcrdma_test::Tick tick;
    uint64_t expected = 0;
    while (reader->Read(&tick)) {
      ASSERT_EQ(tick.seq(), expected) << "window " << window;
      ++expected;
    }
    EXPECT_EQ(expected, 2000u) << "window " << window;
    Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << "window " << window << ": " << s;
  }
}

TEST_P(StreamTest, EmptyStreamReadsNothingAndFinishesOk) {
  rpcrdma_test::WatchRequest request;
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  EXPECT_FALSE(reader->Read(&tick));
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("ticks", "0")));
}

TEST_P(StreamTest, ErrorAfterThreeMessagesEndsWithStatusAndTrailingMetadata) {
  rpcrdma_test::WatchRequest request;
  request.set_count(3);
  request.set_fail_code(static_cast<int>(absl::StatusCode::kNotFound));
  request.set_fail_message("the feed is gone");
  ClientContext context;
  context.AddMetadata("user", "carol");
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  int read = 0;
  while (reader->Read(&tick)) ++read;
  EXPECT_EQ(read, 3);
  EXPECT_EQ(reader->Finish(), absl::NotFoundError("the feed is gone"));
  EXPECT_THAT(
      context.trailing_metadata(),
      UnorderedElementsAre(Pair("ticks", "3"), Pair("echo-user", "carol")));
}

// The server holds at most stream_buffer messages no NEXT asked for, and
// the client asks for at most stream_window beyond what it read: with the
// reader stopped after one message the writer must stop at the sum, however
// long it is given, and never hold more than the buffer.
TEST_P(StreamTest, Rfc8166_3_3_1_SlowReaderHoldsTheWriterAtTheBuffer) {
  rpcrdma_test::WatchRequest request;
  request.set_count(1000);
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  constexpr int kBound = 1 + kDefaultStreamWindow + kDefaultStreamBuffer;
  // The writer would have written all 1000 long before this without flow
  // control; with it, it reaches the bound and blocks there.
  for (int i = 0; i < 100 && server_->ticker.writes() < kBound; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(server_->ticker.writes(), kBound);
  EXPECT_LE(server_->services.stream_counters().buffered, kDefaultStreamBuffer);
  int read = 1;
  while (reader->Read(&tick)) {
    ASSERT_EQ(tick.seq(), static_cast<uint64_t>(read));
    ++read;
  }
  EXPECT_EQ(read, 1000);
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_LE(server_->services.stream_counters().peak_buffered,
            kDefaultStreamBuffer);
}

// A stream without a deadline lasts until it ends, however long its next
// message takes: its NEXT calls have no deadline of their own, rather than
// the transport's default one (timeouts.request_deadline_ms), which would
// end them at the client while the server still holds them, and the
// server's later reply would then write into a revoked reply chunk
// (RFC 8166 §3.5.4), breaking the connection.
TEST_P(StreamTest, AStreamWithoutDeadlineOutlivesTheTransportsRequestDeadline) {
  ChannelOptions options;
  options.max_reply_size = 64 << 10;
  // Long enough for the open under a loaded virtual machine; the wait
  // below is what must outlast it.
  options.transport.mutable_timeouts()->set_request_deadline_ms(1000);
  absl::StatusOr<std::shared_ptr<Channel>> channel =
      Channel::Create(server_->server->uri(), options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  rpcrdma_test::rdma::Ticker::Stub ticker(*channel);
  rpcrdma_test::WatchRequest request;
  request.set_count(1);
  request.set_hold(true);
  ClientContext context;  // no deadline
  auto reader = ticker.Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  std::future<bool> next =
      std::async(std::launch::async, [&] { return reader->Read(&tick); });
  EXPECT_EQ(next.wait_for(std::chrono::milliseconds(2500)),
            std::future_status::timeout)
      << "the held stream ended before anyone ended it";
  context.TryCancel();
  EXPECT_FALSE(next.get());
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(server_->ticker.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ((*channel)->transport().counters().reconnects, 0u);
}

TEST_P(StreamTest, TryCancelMidStreamEndsItAtTheServer) {
  rpcrdma_test::WatchRequest request;
  request.set_count(1000000);
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  ASSERT_TRUE(reader->Read(&tick));
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&tick));
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kCancelled);
  // The server was told (CANCEL): its writer fails and its context says
  // so, long before any deadline (the stream has none).
  ASSERT_TRUE(server_->ticker.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->ticker.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(StreamTest, TryCancelFromAnotherThreadWakesABlockedRead) {
  rpcrdma_test::WatchRequest request;
  request.set_count(1);
  request.set_hold(true);  // no second message, ever
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  std::thread canceller([&context] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    context.TryCancel();
  });
  EXPECT_FALSE(reader->Read(&tick));
  canceller.join();
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(server_->ticker.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->ticker.handlers_cancelled(), 1);
  ExpectTheConnectionSurvived();
}

TEST_P(StreamTest, ReaderDestroyedMidStreamCancelsItAtTheServer) {
  rpcrdma_test::WatchRequest request;
  request.set_count(1000000);
  ClientContext context;
  {
    auto reader = ticker_->Watch(&context, request);
    rpcrdma_test::Tick tick;
    ASSERT_TRUE(reader->Read(&tick));
  }
  ASSERT_TRUE(server_->ticker.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->ticker.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(StreamTest, DeadlineMidStreamIsDeadlineExceededBothSides) {
  rpcrdma_test::WatchRequest request;
  request.set_count(2);
  request.set_hold(true);
  ClientContext context;
  // Room for the open and two messages on a loaded machine; the third
  // never comes, so the deadline is what ends the stream.
  context.set_timeout(std::chrono::seconds(2));
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  ASSERT_TRUE(reader->Read(&tick));
  EXPECT_FALSE(reader->Read(&tick));
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kDeadlineExceeded);
  // The server ends the stream at the deadline itself.
  ASSERT_TRUE(server_->ticker.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->ticker.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(StreamTest, Rfc8166_3_5_4_MiBBulkFieldsInStreamMessagesArriveIntact) {
  constexpr uint32_t kSize = 1 << 20;
  rpcrdma_test::WatchRequest request;
  request.set_count(6);
  request.set_payload_size(kSize);
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  uint64_t read = 0;
  while (reader->Read(&tick)) {
    ASSERT_EQ(tick.seq(), read);
    ASSERT_EQ(tick.payload().size(), kSize);
    ASSERT_TRUE(tick.payload() == TickPayload(read, kSize)) << read;
    ++read;
  }
  EXPECT_EQ(read, 6u);
  EXPECT_TRUE(reader->Finish().ok());
  // Each went in the NEXT's reply chunk, written by the server (RFC 8166
  // §3.5.4), not inline.
  EXPECT_GE(channel_->transport().counters().long_replies, 6u);
}

TEST_P(StreamTest, ServerLossEndsTheStreamUnavailable) {
  rpcrdma_test::WatchRequest request;
  request.set_count(2);
  request.set_hold(true);
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  rpcrdma_test::Tick tick;
  ASSERT_TRUE(reader->Read(&tick));
  ASSERT_TRUE(reader->Read(&tick));
  server_.reset();
  EXPECT_FALSE(reader->Read(&tick));
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kUnavailable);
}

TEST_P(StreamTest, MethodNotOverriddenEndsUnimplemented) {
  rpcrdma_test::WatchRequest request;
  ClientContext context;
  auto reader = ticker_->Unserved(&context, request);
  rpcrdma_test::Tick tick;
  EXPECT_FALSE(reader->Read(&tick));
  Status s = reader->Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
}

TEST_P(StreamTest, FinishBeforeTheEndReadsTheRestAndGivesTheStatus) {
  rpcrdma_test::WatchRequest request;
  request.set_count(50);
  request.set_fail_code(static_cast<int>(absl::StatusCode::kAborted));
  ClientContext context;
  auto reader = ticker_->Watch(&context, request);
  EXPECT_EQ(reader->Finish().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(server_->ticker.writes(), 50);
}

TEST_P(StreamTest, TwoStreamsAndAUnaryCallShareTheChannel) {
  rpcrdma_test::WatchRequest a;
  a.set_count(300);
  rpcrdma_test::WatchRequest b;
  b.set_count(200);
  ClientContext ca;
  ClientContext cb;
  auto ra = ticker_->Watch(&ca, a);
  auto rb = ticker_->Watch(&cb, b);
  rpcrdma_test::rdma::Echo::Stub echo(channel_);
  rpcrdma_test::Tick tick;
  uint64_t na = 0;
  uint64_t nb = 0;
  for (bool more = true; more;) {
    more = false;
    if (ra->Read(&tick)) {
      ASSERT_EQ(tick.seq(), na++);
      more = true;
    }
    if (rb->Read(&tick)) {
      ASSERT_EQ(tick.seq(), nb++);
      more = true;
    }
    if (na == 100) {
      rpcrdma_test::EchoRequest request;
      request.set_text("between");
      rpcrdma_test::EchoRequest response;
      ClientContext context;
      ASSERT_TRUE(echo.Echo(&context, request, &response).ok());
      EXPECT_EQ(response.text(), "between");
    }
  }
  EXPECT_EQ(na, 300u);
  EXPECT_EQ(nb, 200u);
  Status sa = ra->Finish();
  EXPECT_TRUE(sa.ok()) << sa;
  Status sb = rb->Finish();
  EXPECT_TRUE(sb.ok()) << sb;
}

// ServiceSet::ConnectionObserver is what ends a lost connection's streams
// at once; a server without it serves streams all the same.
TEST(StreamWithoutObserverTest, StreamsServeWithoutTheConnectionObserver) {
  TickerService ticker;
  ServiceSet services;
  ASSERT_TRUE(services.Register(&ticker).ok());
  config::TransportConfig config;
  config.mutable_execution()->set_handler_threads(2);
  absl::StatusOr<std::unique_ptr<::rpcrdma::Server>> server =
      ::rpcrdma::Server::Create(TestUri("unix"), config, services.Handler());
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::shared_ptr<Channel>> channel =
      Channel::Create((*server)->uri());
  ASSERT_TRUE(channel.ok()) << channel.status();
  rpcrdma_test::rdma::Ticker::Stub stub(*channel);
  rpcrdma_test::WatchRequest request;
  request.set_count(3);
  ClientContext context;
  auto reader = stub.Watch(&context, request);
  rpcrdma_test::Tick tick;
  int read = 0;
  while (reader->Read(&tick)) ++read;
  EXPECT_EQ(read, 3);
  EXPECT_TRUE(reader->Finish().ok());
}

INSTANTIATE_TEST_SUITE_P(Transports, StreamTest,
                         ::testing::ValuesIn(TestSchemes()),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace rpcrdma::test
