// End-to-end tests of a call's life (api_fixture.h): deadlines,
// cancellation, a server that goes away, a Channel destroyed with calls
// pending, a responder that answers twice, and calls resent after a
// reconnect.
#include <chrono>
#include <future>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixture.h"

namespace rpcrdma::test {
namespace {

TEST_P(ApiTest, DeadlineExceededThenLateReplyDropped) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x8001, kHold);
  req.max_reply_size = 64;
  Clock::time_point begin = Clock::now();
  req.deadline = begin + milliseconds(100);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_GE(Clock::now() - begin, milliseconds(100));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(), "channel: deadline exceeded");
  // The late reply is dropped; the credit it held comes back with it.
  ASSERT_TRUE(WaitHeld(1));
  for (Responder& h : TakeHeld()) {
    EXPECT_TRUE(h.Send({ReplyHeader(0x8001), {}}).ok());
  }
  // Once it has arrived: a call made while the abandoned one still held
  // the only credit would end the connection (channel.h, abandoned calls).
  Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (channel_->counters().replies < 1 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  CallRequest next;
  next.xdr = CallHeader(0x8002, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->xdr, ReplyHeader(0x8002));
}

// RFC 8166 §3.4.7 memory safety: once the call has failed, its result
// buffer is no longer reachable; the late reply's RDMA Write hits the
// revoked handle, which breaks the connection, and the buffer is untouched.
TEST_P(ApiTest, Rfc8166_3_4_7_DeadlineExceededRevokesResultBuffer) {
  Start();
  Prime();
  std::vector<uint8_t> buffer(4096, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x8201, kHold);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 64;
  req.deadline = Clock::now() + milliseconds(50);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(WaitHeld(1));
  HandlerReply late;
  late.xdr = ReplyHeader(0x8201);
  AppendWord(late.xdr, 4000);
  late.results.push_back({kReplyHeaderSize + 4, std::vector<uint8_t>(4000, 1)});
  for (Responder& h : TakeHeld()) EXPECT_TRUE(h.Send(std::move(late)).ok());
  // The broken connection is replaced at once (the server still listens).
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel_->counters().reconnects == 0 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(channel_->counters().reconnects, 1u);
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));
}

TEST_P(ApiTest, DeadlineAlreadyPassed) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x8101, kNull);
  req.max_reply_size = 64;
  req.deadline = Clock::now() - milliseconds(1);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(channel_->counters().calls, 0u);
}

TEST_P(ApiTest, CancelledCallCompletesWithCancelled) {
  Start();
  Prime();
  std::vector<uint8_t> buffer(4096, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x9001, kHold);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 64;
  std::promise<absl::StatusOr<Reply>> done;
  auto f = done.get_future();
  Channel::CallId id = channel_->Call(
      std::move(req),
      [&done](absl::StatusOr<Reply> r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(WaitHeld(1));
  channel_->Cancel(id);
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(r.status().message(), "channel: call cancelled");
  // Cancelling again, or an unknown call, changes nothing.
  channel_->Cancel(id);
  channel_->Cancel(CallId(12345));
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));
  // The held call stays unanswered (held_ goes after the server): any
  // reply now, SYSTEM_ERR included, would invalidate remotely the write
  // chunk the cancel already invalidated, which ends the connection.
  CallRequest next;
  next.xdr = CallHeader(0x9002, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  ASSERT_TRUE(Wait(f2).ok());
}

TEST_P(ApiTest, ServerGoingAwayFailsCallsWithUnavailable) {
  Start();
  Prime();
  std::vector<std::future<absl::StatusOr<Reply>>> futures = CallHeld(0xA001, 3);
  ASSERT_FALSE(HasFailure());
  server_.reset();
  for (auto& f : futures) {
    absl::StatusOr<Reply> r = Wait(f);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    // The status says what ended the connection.
    EXPECT_NE(std::string(r.status().message()).find("(connection event "),
              std::string::npos)
        << r.status();
  }
  // Held responders outlive the server safely.
  for (Responder& h : TakeHeld()) {
    EXPECT_EQ(h.Send({ReplyHeader(1), {}}).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  // Later calls fail at once.
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel_->connected() && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_FALSE(channel_->connected());
  CallRequest req;
  req.xdr = CallHeader(0xA101, kNull);
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kUnavailable);
}

TEST_P(ApiTest, ChannelDestroyedWithCallsPendingFailsThem) {
  Start();
  Prime();
  std::atomic<int> unavailable{0};
  for (uint32_t i = 0; i < 3; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xB001 + i, kHold);
    req.max_reply_size = 64;
    channel_->Call(std::move(req), [&](absl::StatusOr<Reply> r) {
      if (r.status().code() == absl::StatusCode::kUnavailable) ++unavailable;
    });
  }
  ASSERT_TRUE(WaitHeld(3));
  channel_.reset();
  EXPECT_EQ(unavailable.load(), 3);
}

TEST_P(ApiTest, Rfc8166_6_MisplacedArgumentIsInvalidArgument) {
  Start();
  std::vector<uint8_t> arg = Pattern(10, 1);
  CallRequest req;
  req.xdr = CallHeader(0xC001, kNull);
  AppendWord(req.xdr, 10);
  req.arguments.push_back({kCallHeaderSize + 2, arg});  // not a multiple of 4
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(channel_->counters().calls, 0u);
}

TEST_P(ApiTest, ResponderRepliesOnce) {
  StartServer(Config());
  // Replaced handler semantics are checked through a held call.
  Connect(Config());
  std::vector<std::future<absl::StatusOr<Reply>>> futures = CallHeld(0xD001, 1);
  ASSERT_FALSE(HasFailure());
  std::vector<Responder> held = TakeHeld();
  EXPECT_TRUE(held[0].Send({ReplyHeader(0xD001), {}}).ok());
  EXPECT_EQ(held[0].Send({ReplyHeader(0xD001), {}}).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<Reply> r = Wait(futures[0]);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0xD001));
}

// Reconnect (channel.h): retries come quickly in these tests.
config::TransportConfig ReconnectConfig() {
  config::TransportConfig c = Config();
  c.mutable_timeouts()->set_reconnect_backoff_initial_ms(10);
  c.mutable_timeouts()->set_reconnect_backoff_max_ms(80);
  return c;
}

// Waits until the Channel has noticed the loss of its connection (with no
// server listening it stays down).
bool WaitDisconnected(const Channel& channel) {
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel.connected() && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  return !channel.connected();
}

// The server restarts on the same address while calls are pending. Calls
// that allow a retry are sent again with the same XID over the new
// connection, where one credit is free until the first reply (RFC 8166
// §3.3.1); a write chunk is exposed anew there. A call that does not allow
// a retry fails with UNAVAILABLE.
TEST_P(ApiTest, Rfc8166_3_3_1_RetryableCallsResentWithSameXidAfterRestart) {
  config::TransportConfig config = ReconnectConfig();
  Start(config);
  Prime();
  const std::string uri = server_->uri();
  std::vector<uint8_t> buffer(2000, 0xEE);
  std::vector<std::future<absl::StatusOr<Reply>>> retryable;
  for (uint32_t i = 0; i < 4; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xE001 + i, kHold);
    if (i == 0) req.results.push_back(absl::MakeSpan(buffer));
    req.max_reply_size = 64;
    req.retry_on_reconnect = true;
    retryable.push_back(channel_->Call(std::move(req)));
  }
  CallRequest once;
  once.xdr = CallHeader(0xE0FF, kHold);
  once.max_reply_size = 64;
  auto once_future = channel_->Call(std::move(once));
  ASSERT_TRUE(WaitHeld(5));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(received_.size(), 6u);  // the prime call and these five
    received_.clear();
    in_flight_ = 0;
    max_in_flight_ = 0;
  }
  // The old server's responders, never answered: kept until it is gone
  // (one dropped before would answer its call).
  std::vector<Responder> unanswered = TakeHeld();
  server_.reset();
  unanswered.clear();
  absl::StatusOr<Reply> lost = Wait(once_future);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable)
      << lost.status();
  for (auto& f : retryable) {
    EXPECT_NE(f.wait_for(milliseconds(0)), std::future_status::ready);
  }

  StartServer(config, uri);
  ASSERT_TRUE(WaitHeld(1));
  // One credit on the new connection until its first reply: the other
  // three calls stay at the requester.
  std::this_thread::sleep_for(milliseconds(200));
  std::vector<Responder> first = TakeHeld();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(server_->counters().calls, 1u);
  Counters before = channel_->counters();
  EXPECT_EQ(before.reconnects, 1u) << PrintCounters(before);
  EXPECT_EQ(before.credits_granted, 0u) << PrintCounters(before);
  // Sent in the order the calls were made, with the write chunk again.
  IncomingCall resent = Received(0xE001);
  EXPECT_EQ(resent.message, CallHeader(0xE001, kHold));
  EXPECT_EQ(resent.write_chunk_capacities, std::vector<uint64_t>{2000});
  HandlerReply reply;
  reply.xdr = ReplyHeader(0xE001);
  AppendWord(reply.xdr, 1500);
  reply.results.push_back({kReplyHeaderSize + 4, Pattern(1500, 9)});
  ASSERT_TRUE(first[0].Send(std::move(reply)).ok());
  absl::StatusOr<Reply> r0 = Wait(retryable[0]);
  ASSERT_TRUE(r0.ok()) << r0.status();
  std::vector<uint8_t> expected_xdr = ReplyHeader(0xE001);
  AppendWord(expected_xdr, 1500);
  EXPECT_EQ(r0->xdr, expected_xdr);
  EXPECT_EQ(r0->result_lengths, std::vector<uint32_t>{1500});
  EXPECT_TRUE(std::equal(buffer.begin(), buffer.begin() + 1500,
                         Pattern(1500, 9).begin()));
  EXPECT_TRUE(std::all_of(buffer.begin() + 1500, buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));

  // The grant is the server's now: the other three arrive together.
  ASSERT_TRUE(WaitHeld(3));
  std::vector<uint32_t> xids;
  for (auto& [xid, h] : TakeHeldWithXids()) {
    xids.push_back(xid);
    EXPECT_TRUE(h.Send({ReplyHeader(xid), {}}).ok());
  }
  std::sort(xids.begin(), xids.end());
  EXPECT_EQ(xids, (std::vector<uint32_t>{0xE002, 0xE003, 0xE004}));
  for (uint32_t i = 1; i < 4; ++i) {
    absl::StatusOr<Reply> r = Wait(retryable[i]);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->xdr, ReplyHeader(0xE001 + i));
  }
  // Each retryable call reached the new server exactly once, with its XID;
  // the call that did not allow a retry never did.
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(received_.size(), 4u);
    EXPECT_EQ(received_.count(0xE0FF), 0u);
  }
  EXPECT_EQ(server_->counters().calls, 4u);
  Counters after = channel_->counters();
  // Calls sent: the prime call, five on the first connection, four again.
  EXPECT_EQ(after.calls, 10u) << PrintCounters(after);
  EXPECT_EQ(after.replies, 5u) << PrintCounters(after);
  EXPECT_EQ(after.write_chunks, 2u) << PrintCounters(after);
  EXPECT_EQ(after.credits_granted, 32u) << PrintCounters(after);
  EXPECT_EQ(after.reconnects, 1u);
  EXPECT_TRUE(channel_->connected());
}

// The deadline of a call that allows a retry runs on while the Channel
// reconnects; so does Cancel().
TEST_P(ApiTest, DeadlineExceededWhileReconnecting) {
  Start(ReconnectConfig());
  Prime();
  CallRequest req;
  req.xdr = CallHeader(0xE101, kHold);
  req.max_reply_size = 64;
  req.retry_on_reconnect = true;
  req.deadline = Clock::now() + milliseconds(1500);
  auto pending = channel_->Call(std::move(req));
  ASSERT_TRUE(WaitHeld(1));
  // Kept unanswered until the server is gone; nothing listens any more.
  std::vector<Responder> unanswered = TakeHeld();
  server_.reset();
  unanswered.clear();
  ASSERT_TRUE(WaitDisconnected(*channel_));
  // Made while the connection is down: waits, or fails at once without
  // retry_on_reconnect.
  CallRequest late;
  late.xdr = CallHeader(0xE102, kNull);
  late.max_reply_size = 64;
  late.retry_on_reconnect = true;
  // The start is taken before the deadline is set from it: a deadline
  // enforced on time may end the call less than 100 ms after a later
  // reading of the clock.
  const Clock::time_point late_start = Clock::now();
  late.deadline = late_start + milliseconds(100);
  auto late_future = channel_->Call(std::move(late));
  CallRequest cancelled;
  cancelled.xdr = CallHeader(0xE103, kNull);
  cancelled.max_reply_size = 64;
  cancelled.retry_on_reconnect = true;
  std::promise<absl::StatusOr<Reply>> cancelled_promise;
  auto cancelled_future = cancelled_promise.get_future();
  Channel::CallId cancelled_id =
      channel_->Call(std::move(cancelled), [&](absl::StatusOr<Reply> r) {
        cancelled_promise.set_value(std::move(r));
      });
  CallRequest once;
  once.xdr = CallHeader(0xE104, kNull);
  once.max_reply_size = 64;
  auto once_future = channel_->Call(std::move(once));
  ASSERT_EQ(once_future.wait_for(milliseconds(0)), std::future_status::ready);
  EXPECT_EQ(once_future.get().status().code(), absl::StatusCode::kUnavailable);

  absl::StatusOr<Reply> r1 = Wait(late_future);
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r1.status();
  EXPECT_GE(Clock::now() - late_start, milliseconds(100));
  channel_->Cancel(cancelled_id);
  absl::StatusOr<Reply> r2 = Wait(cancelled_future);
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kCancelled) << r2.status();
  absl::StatusOr<Reply> r0 = Wait(pending);
  EXPECT_EQ(r0.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r0.status();
  EXPECT_FALSE(channel_->connected());
  EXPECT_EQ(channel_->counters().reconnects, 0u);
}

// A call made while the Channel reconnects fails at once, saying why and
// when the next attempt is; with wait_for_ready it waits for the
// connection instead (until its deadline), then is sent.
TEST_P(ApiTest, WaitForReadyCallWaitsForTheRestartedServer) {
  const config::TransportConfig config = ReconnectConfig();
  Start(config);
  Prime();
  const std::string uri = server_->uri();
  server_.reset();  // nothing listens any more
  ASSERT_TRUE(WaitDisconnected(*channel_));

  CallRequest plain;
  plain.xdr = CallHeader(0xE301, kNull);
  auto plain_future = channel_->Call(std::move(plain));
  ASSERT_EQ(plain_future.wait_for(milliseconds(0)), std::future_status::ready);
  const absl::Status refused = plain_future.get().status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "reconnecting, "))
      << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "wait_for_ready"))
      << refused;

  CallRequest short_wait;
  short_wait.xdr = CallHeader(0xE302, kNull);
  short_wait.wait_for_ready = true;
  short_wait.deadline = Clock::now() + milliseconds(100);
  auto short_future = channel_->Call(std::move(short_wait));
  CallRequest waiting;
  waiting.xdr = CallHeader(0xE303, kNull);
  waiting.wait_for_ready = true;
  waiting.deadline = Clock::now() + std::chrono::seconds(30);
  auto waiting_future = channel_->Call(std::move(waiting));
  EXPECT_EQ(Wait(short_future).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(waiting_future.wait_for(milliseconds(0)),
            std::future_status::ready);

  StartServer(config, uri);
  absl::StatusOr<Reply> r = Wait(waiting_future);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0xE303));
  EXPECT_EQ(channel_->counters().reconnects, 1u);
}

// Destroying the Channel stops the reconnect attempts and fails every
// waiting call with UNAVAILABLE before the destructor returns.
TEST_P(ApiTest, ChannelDestroyedWhileReconnecting) {
  Start(ReconnectConfig());
  Prime();
  std::atomic<int> unavailable{0};
  std::atomic<int> other{0};
  auto count = [&](absl::StatusOr<Reply> r) {
    if (r.status().code() == absl::StatusCode::kUnavailable) {
      ++unavailable;
    } else {
      ++other;
    }
  };
  for (uint32_t i = 0; i < 3; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xE201 + i, kHold);
    req.max_reply_size = 64;
    req.retry_on_reconnect = true;
    channel_->Call(std::move(req), count);
  }
  ASSERT_TRUE(WaitHeld(3));
  std::vector<Responder> unanswered = TakeHeld();  // until the server goes
  server_.reset();
  unanswered.clear();
  ASSERT_TRUE(WaitDisconnected(*channel_));
  CallRequest req;
  req.xdr = CallHeader(0xE204, kNull);
  req.max_reply_size = 64;
  req.retry_on_reconnect = true;
  channel_->Call(std::move(req), count);
  EXPECT_EQ(unavailable.load(), 0);
  channel_.reset();
  EXPECT_EQ(unavailable.load(), 4);
  EXPECT_EQ(other.load(), 0);
}

}  // namespace
}  // namespace rpcrdma::test
