// Client-streaming and bidirectional methods through generated stubs and
// services over both soft transports (protobuf/README.md, "Streams"):
// each client message is a SEND call the server answers once its reader
// has room, the half-close a HALF_CLOSE call naming the count, the server's
// messages replies to NEXT calls. Order, flow control (a slow server
// reader holds the client's writer), the end's status, cancellation both
// ways, deadlines, bulk fields as read chunks (RFC 8166 §3.4.5) and the
// loss of the server are each a property of ordinary RFC 5531 calls.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/protobuf/program.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/stream_fixture.h"

namespace rpcrdma::test {
namespace {

using protobuf::Channel;
using protobuf::ChannelOptions;
using protobuf::ClientContext;
using protobuf::kDefaultBulkThreshold;
using protobuf::kDefaultStreamBuffer;
using protobuf::kDefaultStreamWindow;
using protobuf::Status;
using rpcrdma_test::Chunk;
using rpcrdma_test::Summary;

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr auto kLimit = std::chrono::seconds(30);

Chunk ChunkOf(uint64_t seq, std::string text = "", size_t payload = 0) {
  Chunk chunk;
  chunk.set_seq(seq);
  chunk.set_text(std::move(text));
  if (payload != 0) chunk.set_payload(TickPayload(seq, payload));
  return chunk;
}

class ClientStreamTest : public StreamFixture {
 protected:
  void SetUp() override {
    StreamFixture::SetUp();
    if (HasFatalFailure()) return;
    collector_ =
        std::make_unique<rpcrdma_test::rdma::Collector::Stub>(channel_);
  }

  std::unique_ptr<rpcrdma_test::rdma::Collector::Stub> collector_;
};

TEST_P(ClientStreamTest,
       ProtobufReadme_6_Send_ThousandChunksSumAndConcatenate) {
  ClientContext context;
  Summary summary;
  auto writer = collector_->Collect(&context, &summary);
  uint64_t sum = 0;
  std::string text;
  for (uint64_t i = 0; i < 1000; ++i) {
    const std::string letter(1, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(writer->Write(ChunkOf(i, letter))) << i;
    sum += i;
    text += letter;
  }
  ASSERT_TRUE(writer->WritesDone());
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(summary.count(), 1000u);
  EXPECT_EQ(summary.seq_sum(), sum);
  EXPECT_EQ(summary.text(), text);  // in the order written
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("read", "1000")));
  EXPECT_TRUE(ServerDroppedEveryStream());
}

TEST_P(ClientStreamTest, ProtobufReadme_6_HalfClose_EmptyStreamAnswersEmpty) {
  ClientContext context;
  Summary summary;
  summary.set_count(99);
  auto writer = collector_->Collect(&context, &summary);
  Status s = writer->Finish();  // WritesDone implied
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(summary.count(), 0u);
}

TEST_P(ClientStreamTest, ProtobufReadme_6_BidiEchoArrivesInOrder) {
  constexpr int kCount = 2000;
  ClientContext context;
  auto stream = collector_->Chat(&context);
  // Written on a thread of its own: the server echoes as it reads, and
  // a writer that never reads would stop both at their windows.
  std::thread writer([&stream] {
    for (int i = 0; i < kCount; ++i) {
      if (!stream->Write(ChunkOf(static_cast<uint64_t>(i), "x"))) return;
    }
    stream->WritesDone();
  });
  Chunk chunk;
  uint64_t expected = 0;
  while (stream->Read(&chunk)) {
    ASSERT_EQ(chunk.seq(), expected);
    ++expected;
  }
  writer.join();
  EXPECT_EQ(expected, static_cast<uint64_t>(kCount));
  Status s = stream->Finish();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(ServerDroppedEveryStream());
}

TEST_P(ClientStreamTest, ProtobufReadme_6_HalfClose_ServerKeepsWritingAfter) {
  ClientContext context;
  context.AddMetadata("after-close", "50");
  auto stream = collector_->Chat(&context);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(stream->Write(ChunkOf(i)));
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Write(ChunkOf(3)));  // nothing after the half-close
  Chunk chunk;
  uint64_t read = 0;
  int after = 0;
  while (stream->Read(&chunk)) {
    ASSERT_EQ(chunk.seq(), read);
    if (chunk.text() == "after") ++after;
    ++read;
  }
  EXPECT_EQ(read, 53u);
  EXPECT_EQ(after, 50);
  EXPECT_TRUE(stream->Finish().ok());
}

// The server answers a SEND only once its reader has room (stream_buffer
// messages not read), and the client keeps at most stream_window SEND
// calls unanswered: with the reader stopped after one message, the
// client's Write must stop at the sum, however long it is given, and the
// server hold no more than buffer + window messages.
TEST_P(ClientStreamTest, Rfc8166_3_3_1_SlowServerReaderHoldsTheClientWriter) {
  ClientContext context;
  context.AddMetadata("gate", "1");
  Summary summary;
  auto writer = collector_->Collect(&context, &summary);
  std::atomic<int> written{0};
  std::thread thread([&] {
    for (uint64_t i = 0; i < 1000; ++i) {
      if (!writer->Write(ChunkOf(i))) return;
      ++written;
    }
    writer->WritesDone();
  });
  constexpr int kHeld = kDefaultStreamBuffer + kDefaultStreamWindow;
  constexpr int kBound = 1 + kHeld;
  for (int i = 0; i < 300 && written.load() < kBound; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(written.load(), kBound);
  EXPECT_EQ(server_->collector.reads(), 1);
  protobuf::StreamCounters counters = server_->services.stream_counters();
  EXPECT_EQ(counters.received, static_cast<size_t>(kHeld));
  EXPECT_EQ(counters.held_sends, static_cast<size_t>(kDefaultStreamWindow));
  server_->collector.OpenGate();
  thread.join();
  EXPECT_EQ(written.load(), 1000);
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(summary.count(), 1000u);
  EXPECT_LE(server_->services.stream_counters().peak_received,
            static_cast<size_t>(kHeld));
}

// A client stream without a deadline waits for a slow reader however
// long it takes: its SEND calls, held by the server while the reader is
// behind, have no deadline of their own rather than the transport's
// default one (timeouts.request_deadline_ms), which would end them at the
// client, revoking their chunks under the server.
TEST_P(ClientStreamTest,
       HeldSendsOfAStreamWithoutDeadlineOutliveTheTransportsRequestDeadline) {
  ChannelOptions options;
  options.max_reply_size = 64 << 10;
  // Long enough for the open on a loaded machine; the sleep below is what
  // must outlast it.
  options.transport.mutable_timeouts()->set_request_deadline_ms(1000);
  absl::StatusOr<std::shared_ptr<Channel>> channel =
      Channel::Create(server_->server->uri(), options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  rpcrdma_test::rdma::Collector::Stub collector(*channel);
  ClientContext context;  // no deadline
  context.AddMetadata("gate", "1");
  Summary summary;
  auto writer = collector.Collect(&context, &summary);
  constexpr int kBound = 1 + kDefaultStreamBuffer + kDefaultStreamWindow;
  std::atomic<int> written{0};
  std::thread thread([&] {
    for (uint64_t i = 0; i < static_cast<uint64_t>(2 * kBound); ++i) {
      if (!writer->Write(ChunkOf(i))) return;
      ++written;
    }
    writer->WritesDone();
  });
  // Well past the transport's request deadline, with SENDs held.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(written.load(), kBound);
  server_->collector.OpenGate();
  thread.join();
  EXPECT_EQ(written.load(), 2 * kBound);
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(summary.count(), static_cast<uint64_t>(2 * kBound));
  EXPECT_EQ((*channel)->transport().counters().reconnects, 0u);
}

TEST_P(ClientStreamTest, TryCancelMidClientStreamEndsItAtTheServer) {
  ClientContext context;
  Summary summary;
  auto writer = collector_->Collect(&context, &summary);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(writer->Write(ChunkOf(i)));
  context.TryCancel();
  EXPECT_FALSE(writer->Write(ChunkOf(3)));
  EXPECT_EQ(writer->Finish().code(), absl::StatusCode::kCancelled);
  // The server was told (CANCEL): its Read fails, its context says so.
  ASSERT_TRUE(server_->collector.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->collector.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(ClientStreamTest, TryCancelMidBidiStreamEndsItAtTheServer) {
  ClientContext context;
  auto stream = collector_->Chat(&context);
  Chunk chunk;
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(stream->Write(ChunkOf(i)));
    ASSERT_TRUE(stream->Read(&chunk));
    EXPECT_EQ(chunk.seq(), i);
  }
  context.TryCancel();
  EXPECT_FALSE(stream->Read(&chunk));
  EXPECT_FALSE(stream->Write(ChunkOf(2)));
  EXPECT_EQ(stream->Finish().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(server_->collector.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->collector.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(ClientStreamTest, WriterDestroyedMidStreamCancelsItAtTheServer) {
  ClientContext context;
  Summary summary;
  {
    auto writer = collector_->Collect(&context, &summary);
    ASSERT_TRUE(writer->Write(ChunkOf(0)));
  }
  ASSERT_TRUE(server_->collector.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->collector.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

// The server ends the stream at its deadline with nobody writing or
// reading: its handler's Read fails then, long before the client looks.
TEST_P(ClientStreamTest, DeadlineMidStreamEndsItAtTheServerUnasked) {
  ClientContext context;
  // Room for the open and the first messages on a loaded machine.
  context.set_timeout(std::chrono::seconds(2));
  Summary summary;
  auto writer = collector_->Collect(&context, &summary);
  ASSERT_TRUE(writer->Write(ChunkOf(0)));
  ASSERT_TRUE(writer->Write(ChunkOf(1)));
  ASSERT_TRUE(server_->collector.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->collector.handlers_cancelled(), 1);
  EXPECT_FALSE(writer->Write(ChunkOf(2)));
  EXPECT_EQ(writer->Finish().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(ClientStreamTest, DeadlineMidBidiStreamIsDeadlineExceededBothSides) {
  ClientContext context;
  // Room for the open and the first messages on a loaded machine.
  context.set_timeout(std::chrono::seconds(2));
  auto stream = collector_->Chat(&context);
  Chunk chunk;
  ASSERT_TRUE(stream->Write(ChunkOf(0)));
  ASSERT_TRUE(stream->Read(&chunk));
  EXPECT_FALSE(stream->Read(&chunk));  // the server writes nothing more
  EXPECT_EQ(stream->Finish().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(server_->collector.WaitForHandlersEnded(1, kLimit));
  EXPECT_EQ(server_->collector.handlers_cancelled(), 1);
  EXPECT_TRUE(ServerDroppedEveryStream());
}

// A handler returning early ends the stream: the SEND calls still coming
// are answered with its status, so Write fails, and Finish gives it.
TEST_P(ClientStreamTest, HandlerErrorReachesTheWriter) {
  ClientContext context;
  context.AddMetadata("fail-after", "5");
  Summary summary;
  auto writer = collector_->Collect(&context, &summary);
  int written = 0;
  while (written < 1000 &&
         writer->Write(ChunkOf(static_cast<uint64_t>(written)))) {
    ++written;
  }
  EXPECT_LT(written, 1000);
  EXPECT_GE(written, 5);
  EXPECT_EQ(writer->Finish(), absl::AbortedError("failed after 5 chunks"));
  EXPECT_THAT(context.trailing_metadata(),
              UnorderedElementsAre(Pair("read", "5")));
  EXPECT_TRUE(ServerDroppedEveryStream());
  ExpectTheConnectionSurvived();
}

TEST_P(ClientStreamTest, BidiHandlerErrorReachesTheReader) {
  ClientContext context;
  context.AddMetadata("fail-after", "3");
  auto stream = collector_->Chat(&context);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(stream->Write(ChunkOf(i)));
  Chunk chunk;
  int read = 0;
  while (stream->Read(&chunk)) ++read;
  EXPECT_EQ(read, 3);
  EXPECT_EQ(stream->Finish(), absl::AbortedError("failed after 3 chunks"));
}

// Bulk fields of client messages go as the unary request's (§3): at and
// beyond the threshold each is a DDP-eligible item, a read chunk when the
// SEND does not fit inline (RFC 8166 §3.4.5).
TEST_P(ClientStreamTest, Rfc8166_3_4_5_BulkFieldsAroundTheThresholdArrive) {
  for (size_t size : {size_t{0}, kDefaultBulkThreshold - 1,
                      kDefaultBulkThreshold, size_t{1} << 20}) {
    const uint64_t read_chunks_before =
        channel_->transport().counters().read_chunk_calls;
    ClientContext context;
    Summary summary;
    auto writer = collector_->Collect(&context, &summary);
    for (uint64_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(writer->Write(ChunkOf(i, "", size))) << size;
    }
    Status s = writer->Finish();
    ASSERT_TRUE(s.ok()) << size << ": " << s;
    EXPECT_EQ(summary.count(), 4u) << size;
    EXPECT_EQ(summary.payload_octets(), 4 * size) << size;
    EXPECT_TRUE(summary.payloads_intact()) << size;
    if (size == size_t{1} << 20) {
      EXPECT_GE(channel_->transport().counters().read_chunk_calls,
                read_chunks_before + 4);
    }
  }
}

TEST_P(ClientStreamTest, ServerLossEndsTheStreamsUnavailable) {
  ClientContext collect_context;
  Summary summary;
  auto writer = collector_->Collect(&collect_context, &summary);
  ASSERT_TRUE(writer->Write(ChunkOf(0)));
  ClientContext chat_context;
  auto stream = collector_->Chat(&chat_context);
  ASSERT_TRUE(stream->Write(ChunkOf(0)));
  Chunk chunk;
  ASSERT_TRUE(stream->Read(&chunk));
  server_.reset();
  EXPECT_FALSE(stream->Read(&chunk));
  EXPECT_EQ(stream->Finish().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(writer->Finish().code(), absl::StatusCode::kUnavailable);
}

TEST_P(ClientStreamTest, MethodsNotOverriddenEndUnimplemented) {
  ClientContext collect_context;
  Summary summary;
  auto writer = collector_->UnservedCollect(&collect_context, &summary);
  EXPECT_EQ(writer->Finish().code(), absl::StatusCode::kUnimplemented);
  ClientContext chat_context;
  auto stream = collector_->UnservedChat(&chat_context);
  Chunk chunk;
  EXPECT_FALSE(stream->Read(&chunk));
  EXPECT_EQ(stream->Finish().code(), absl::StatusCode::kUnimplemented);
}

INSTANTIATE_TEST_SUITE_P(SoftFabric, ClientStreamTest,
                         ::testing::Values("unix", "tcp"),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace rpcrdma::test
