// A hostile client of client-streaming and bidirectional streams
// (protobuf/README.md, "Streams", SEND and HALF_CLOSE), written by hand on
// a raw rpcrdma::Channel: it sends messages of streams that are not there,
// twice, out of the window, after its half-close, and holds as many SEND
// calls as it can. The server must answer every call with a clear status
// (each holds a credit, RFC 8166 §3.3.1), hold bounded memory, and let
// an honest stream go on.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/raw_peer.h"

namespace rpcrdma::test {
namespace {

using protobuf::kDefaultStreamBuffer;
using protobuf::kMaxStreamWindow;
using protobuf::kStreamCancelProcedure;
using protobuf::kStreamHalfCloseProcedure;
using protobuf::kStreamNextProcedure;
using protobuf::kStreamSendProcedure;

using ::testing::HasSubstr;

constexpr uint32_t kCollect = 1;  // Collector.Collect, method 0
constexpr uint32_t kWatch = 1;    // Ticker.Watch, method 0
constexpr uint32_t kOk = 0;
constexpr uint32_t kInvalidArgument = 3;
constexpr uint32_t kFailedPrecondition = 9;
constexpr uint32_t kResourceExhausted = 8;
constexpr uint32_t kCancelled = 1;
constexpr uint32_t kUnavailable = 14;

struct Answer {
  uint32_t code = ~0u;
  std::string message;
  uint64_t stream_id = 0;  // an open's, when code is 0
};

// The status (and an open's stream id) of a reply, or why it has none.
absl::StatusOr<Answer> AnswerOf(absl::StatusOr<Reply> reply, bool open) {
  if (!reply.ok()) return reply.status();
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  if (!decoded.ok()) return decoded.status();
  if (absl::Status s = ReplyStatus(decoded->header); !s.ok()) return s;
  XdrReader in(reply->xdr.span().subspan(decoded->body_offset));
  Answer answer;
  uint32_t metadata = 0;
  if (absl::Status s = in.ReadUint32("code", &answer.code); !s.ok()) return s;
  if (absl::Status s = in.ReadString("message", 65536, &answer.message);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = in.ReadUint32("metadata", &metadata); !s.ok()) return s;
  if (open && answer.code == 0) {
    if (absl::Status s = in.ReadUint64("stream id", &answer.stream_id);
        !s.ok()) {
      return s;
    }
  }
  return answer;
}

void WriteEmptyPayload(XdrWriter& w) {
  (void)w.WriteUint32("message length", 0);
  (void)w.WriteUint32("bulk count", 0);
}

class ClientStreamHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    peer_ = StartRawPeer();
    ASSERT_NE(peer_.raw, nullptr);
  }

  // Opens a stream of `service`'s `procedure`: §2's call body, an empty
  // request.
  uint64_t Open(absl::string_view service = "rpcrdma_test.Collector",
                uint32_t procedure = kCollect) {
    CallRequest call = RawServiceCall(service, xid_++, procedure);
    XdrWriter w(&call.xdr);
    (void)w.WriteUint32("timeout", 0);
    (void)w.WriteUint32("metadata count", 0);
    WriteEmptyPayload(w);
    absl::StatusOr<Answer> opened =
        AnswerOf(peer_.raw->BlockingCall(std::move(call)), /*open=*/true);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return 0;
    EXPECT_EQ(opened->code, kOk) << opened->message;
    return opened->stream_id;
  }

  CallRequest SendCall(uint64_t stream_id, uint64_t seq) {
    CallRequest call =
        RawServiceCall("rpcrdma_test.Collector", xid_++, kStreamSendProcedure);
    XdrWriter w(&call.xdr);
    (void)w.WriteUint64("stream id", stream_id);
    (void)w.WriteUint64("seq", seq);
    rpcrdma_test::Chunk chunk;
    chunk.set_seq(seq);
    const std::string message = chunk.SerializeAsString();
    (void)w.WriteVarOpaque(
        "message",
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(message.data()),
                            message.size()));
    (void)w.WriteUint32("bulk count", 0);
    return call;
  }

  Answer Send(uint64_t stream_id, uint64_t seq) {
    return Blocking(SendCall(stream_id, seq));
  }

  Answer Control(uint32_t procedure, uint64_t stream_id, uint64_t number) {
    CallRequest call =
        RawServiceCall("rpcrdma_test.Collector", xid_++, procedure);
    XdrWriter w(&call.xdr);
    (void)w.WriteUint64("stream id", stream_id);
    if (procedure != kStreamCancelProcedure) {
      (void)w.WriteUint64("number", number);
    }
    return Blocking(std::move(call));
  }

  Answer Blocking(CallRequest call) {
    call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    absl::StatusOr<Answer> answer =
        AnswerOf(peer_.raw->BlockingCall(std::move(call)), /*open=*/false);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? *answer : Answer{};
  }

  // Whether the server's stream counters come to satisfy `reached` within
  // 30 s: they move on the server's threads, after the calls that move
  // them were sent.
  template <typename Predicate>
  bool CountersReach(Predicate reached) {
    for (int i = 0; i < 3000; ++i) {
      if (reached(peer_.server->services.stream_counters())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  bool ServerDroppedEveryStream() {
    return CountersReach(
        [](const protobuf::StreamCounters& c) { return c.open == 0; });
  }

  RawPeer peer_;
  uint32_t xid_ = 1000;
};

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_Send_UnknownStreamIsUnavailable) {
  Answer answer = Send(0x5eed, 0);
  EXPECT_EQ(answer.code, kUnavailable);
  EXPECT_THAT(answer.message, HasSubstr("no stream 24301"));
  EXPECT_EQ(Control(kStreamHalfCloseProcedure, 0x5eed, 0).code, kUnavailable);
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_Send_DuplicateSeqIsRefusedAndTheStreamGoesOn) {
  const uint64_t id = Open();
  EXPECT_EQ(Send(id, 0).code, kOk);
  Answer twice = Send(id, 0);
  EXPECT_EQ(twice.code, kInvalidArgument);
  EXPECT_THAT(twice.message, HasSubstr("sent already"));
  EXPECT_EQ(Send(id, 1).code, kOk);
  EXPECT_EQ(Control(kStreamHalfCloseProcedure, id, 2).code, kOk);
  EXPECT_EQ(
      peer_.server->collector.WaitForHandlersEnded(1, std::chrono::seconds(30)),
      true);
  EXPECT_EQ(peer_.server->collector.reads(), 2);
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_Send_BeyondTheWindowIsResourceExhausted) {
  const uint64_t id = Open();
  // Nothing read yet: messages 0 to buffer + window - 1 may come.
  Answer answer = Send(id, kDefaultStreamBuffer + kMaxStreamWindow);
  EXPECT_EQ(answer.code, kResourceExhausted);
  EXPECT_THAT(answer.message, HasSubstr("may be sent now"));
  EXPECT_EQ(Send(id, uint64_t{1} << 63).code, kResourceExhausted);
}

// The most SEND calls a stream holds unanswered is the window: every one
// beyond is refused at once, and all held are answered when the stream
// ends (here by CANCEL), each credit coming back.
TEST_F(ClientStreamHostileTest,
       Rfc8166_3_3_1_HeldSendsAreBoundedAndAnsweredAtTheEnd) {
  const uint64_t id = Open();
  // Message 0 never comes, so the reader reads nothing: 1 to buffer - 1
  // fit its buffer, the next kMaxStreamWindow wait.
  const uint64_t last = kDefaultStreamBuffer + kMaxStreamWindow - 1;
  // Owned with the callbacks: a call still out when the test ends (it
  // failed) is answered at the channel's end, after this scope.
  struct Codes {
    absl::Mutex mu;
    std::vector<uint32_t> values ABSL_GUARDED_BY(mu);
  };
  auto codes = std::make_shared<Codes>();
  for (uint64_t seq = 1; seq <= last; ++seq) {
    CallRequest call = SendCall(id, seq);
    call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    peer_.raw->Call(std::move(call), [codes](absl::StatusOr<Reply> r) {
      absl::StatusOr<Answer> answer = AnswerOf(std::move(r), false);
      absl::MutexLock lock(&codes->mu);
      codes->values.push_back(answer.ok() ? answer->code : ~0u);
    });
  }
  auto answered = [&codes](size_t n) {
    absl::MutexLock lock(&codes->mu);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(codes->mu) {
      return codes->values.size() >= n;
    };
    return codes->mu.AwaitWithTimeout(absl::Condition(&enough),
                                      absl::Seconds(30));
  };
  ASSERT_TRUE(answered(kDefaultStreamBuffer - 1));
  // The answered calls say nothing of when the held ones arrive: they
  // travel behind, each in its own SEND.
  CountersReach([](const protobuf::StreamCounters& c) {
    return c.held_sends >= kMaxStreamWindow;
  });
  EXPECT_EQ(Send(id, last + 1).code, kResourceExhausted);
  protobuf::StreamCounters counters = peer_.server->services.stream_counters();
  EXPECT_EQ(counters.held_sends, kMaxStreamWindow);
  EXPECT_EQ(counters.received, last);
  {
    absl::MutexLock lock(&codes->mu);
    EXPECT_EQ(codes->values.size(), kDefaultStreamBuffer - 1);
  }
  EXPECT_EQ(Control(kStreamCancelProcedure, id, 0).code, kOk);
  ASSERT_TRUE(answered(last));
  absl::MutexLock lock(&codes->mu);
  int cancelled = 0;
  for (uint32_t code : codes->values) cancelled += code == kCancelled ? 1 : 0;
  EXPECT_EQ(cancelled, static_cast<int>(kMaxStreamWindow));
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_HalfClose_SendAfterItIsFailedPrecondition) {
  const uint64_t id = Open();
  EXPECT_EQ(Control(kStreamHalfCloseProcedure, id, 1).code, kOk);
  Answer after = Send(id, 1);
  EXPECT_EQ(after.code, kFailedPrecondition);
  EXPECT_THAT(after.message, HasSubstr("after its half-close"));
  Answer again = Control(kStreamHalfCloseProcedure, id, 1);
  EXPECT_EQ(again.code, kFailedPrecondition);
  EXPECT_THAT(again.message, HasSubstr("half-closed already"));
  EXPECT_EQ(Send(id, 0).code, kOk);  // the one message counted
  ASSERT_TRUE(peer_.server->collector.WaitForHandlersEnded(
      1, std::chrono::seconds(30)));
  EXPECT_EQ(peer_.server->collector.reads(), 1);
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_HalfClose_BelowWhatArrivedIsInvalidArgument) {
  const uint64_t id = Open();
  EXPECT_EQ(Send(id, 2).code, kOk);
  Answer answer = Control(kStreamHalfCloseProcedure, id, 1);
  EXPECT_EQ(answer.code, kInvalidArgument);
  EXPECT_THAT(answer.message, HasSubstr("message 2 arrived"));
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_Send_ToAServerStreamIsInvalidArgument) {
  CallRequest call = RawServiceCall("rpcrdma_test.Ticker", xid_++, kWatch);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint32("timeout", 0);
  (void)w.WriteUint32("metadata count", 0);
  WriteEmptyPayload(w);  // a Watch of no messages
  absl::StatusOr<Answer> opened =
      AnswerOf(peer_.raw->BlockingCall(std::move(call)), /*open=*/true);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->code, kOk);
  Answer answer = Send(opened->stream_id, 0);
  EXPECT_EQ(answer.code, kInvalidArgument);
  EXPECT_THAT(answer.message, HasSubstr("takes no client messages"));
}

TEST_F(ClientStreamHostileTest, Rfc5531_9_TruncatedSendIsGarbageArgs) {
  const uint64_t id = Open();
  CallRequest call =
      RawServiceCall("rpcrdma_test.Collector", xid_++, kStreamSendProcedure);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint64("stream id", id);  // no seq, no payload
  absl::StatusOr<Reply> reply = peer_.raw->BlockingCall(std::move(call));
  ASSERT_TRUE(reply.ok()) << reply.status();
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header.accept_stat, AcceptStat::kGarbageArgs);
}

TEST_F(ClientStreamHostileTest,
       ProtobufReadme_6_Send_MalformedPayloadIsRefused) {
  const uint64_t id = Open();
  CallRequest call =
      RawServiceCall("rpcrdma_test.Collector", xid_++, kStreamSendProcedure);
  XdrWriter w(&call.xdr);
  (void)w.WriteUint64("stream id", id);
  (void)w.WriteUint64("seq", 0);
  const uint8_t junk[] = {0xff, 0xff, 0xff};
  (void)w.WriteVarOpaque("message", absl::MakeConstSpan(junk));
  (void)w.WriteUint32("bulk count", 0);
  Answer answer = Blocking(std::move(call));
  EXPECT_EQ(answer.code, kInvalidArgument);
  EXPECT_THAT(answer.message, HasSubstr("malformed"));
  EXPECT_EQ(Send(id, 0).code, kOk);  // the seq was not taken
}

// The connection going ends its streams, held SEND calls and all.
TEST_F(ClientStreamHostileTest, ConnectionLossDropsStreamsWithHeldSends) {
  const uint64_t id = Open();
  for (uint64_t seq = 1; seq < kDefaultStreamBuffer + 4; ++seq) {
    peer_.raw->Call(SendCall(id, seq), [](absl::StatusOr<Reply>) {});
  }
  for (int i = 0; i < 300; ++i) {
    if (peer_.server->services.stream_counters().held_sends == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(peer_.server->services.stream_counters().held_sends, 4u);
  peer_.raw.reset();
  EXPECT_TRUE(ServerDroppedEveryStream());
  EXPECT_EQ(peer_.server->services.stream_counters().held_sends, 0u);
}

}  // namespace
}  // namespace rpcrdma::test
