// End-to-end tests of the ways a call and an endpoint end early
// (api_fixture.h): every way to call gives an id that Cancel ends the call
// by, backward calls included (RFC 8167), and Shutdown bounds the drain by
// a deadline and leaves the endpoint refusing calls.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/api/api_fixture.h"

namespace rpcrdma::test {
namespace {

// Answers the calls the server holds, each with an empty reply: a call
// cancelled after it was sent keeps its credit until its reply comes.
void AnswerHeld(std::vector<std::pair<uint32_t, Responder>> held) {
  for (auto& [xid, responder] : held) {
    HandlerReply reply;
    reply.xdr = ReplyHeader(xid);
    EXPECT_TRUE(responder.Send(std::move(reply)).ok());
  }
}

CallRequest HeldCall(uint32_t xid) {
  CallRequest req;
  req.xdr = CallHeader(xid, kHold);
  req.max_reply_size = 64;
  return req;
}

// A call made as a future is cancelled by the id its CallFuture names; the
// future completes with CANCELLED although the server never answers.
TEST_P(ApiTest, Rfc8166_3_3_1_ACallMadeAsAFutureIsCancelledByItsId) {
  Start();
  Prime();
  CallFuture call = channel_->Call(HeldCall(0xC001));
  ASSERT_TRUE(WaitHeld(1));
  EXPECT_NE(call.id(), CallId());
  channel_->Cancel(call.id());
  absl::StatusOr<Reply> r = Wait(call);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  // The cancelled call keeps its credit until its reply: once answered,
  // the connection goes on carrying calls.
  AnswerHeld(TakeHeldWithXids());
  CallRequest next;
  next.xdr = CallHeader(0xC002, kNull);
  next.max_reply_size = 64;
  absl::StatusOr<Reply> after = channel_->BlockingCall(std::move(next));
  EXPECT_TRUE(after.ok()) << after.status();
}

// Each way to call gives a distinct id, so that Cancel names one call.
TEST_P(ApiTest, EveryWayToCallGivesTheCallsIdForCancel) {
  Start();
  Prime();
  std::promise<absl::StatusOr<Reply>> done;
  const CallId by_callback = channel_->Call(
      HeldCall(0xC101),
      [&done](absl::StatusOr<Reply> r) { done.set_value(std::move(r)); });
  CallFuture by_future = channel_->Call(HeldCall(0xC102));
  const CallId started = channel_->StartCall(HeldCall(0xC103));
  ASSERT_TRUE(WaitHeld(3));
  EXPECT_NE(by_callback, CallId());
  EXPECT_NE(by_future.id(), by_callback);
  EXPECT_NE(started, by_future.id());
  EXPECT_NE(started, by_callback);
  channel_->Cancel(started);
  EXPECT_EQ(channel_->Await(started).status().code(),
            absl::StatusCode::kCancelled);
  // The other two are untouched by the third's cancel.
  EXPECT_EQ(by_future.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  channel_->Cancel(by_future.id());
  channel_->Cancel(by_callback);
  EXPECT_EQ(Wait(by_future).status().code(), absl::StatusCode::kCancelled);
  std::future<absl::StatusOr<Reply>> callback_outcome = done.get_future();
  EXPECT_EQ(Wait(callback_outcome).status().code(),
            absl::StatusCode::kCancelled);
  AnswerHeld(TakeHeldWithXids());
}

// RFC 8167: a backward call is cancelled by the id Server::Call returns,
// in both of its forms; the client's handler never answered.
TEST_P(ApiTest, Rfc8167_ABackwardCallIsCancelledByItsId) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const ConnectionId connection = ServerSideConnection();
  std::promise<absl::StatusOr<Reply>> done;
  const CallId by_callback = server_->Call(
      connection, HeldCall(0xC201),
      [&done](absl::StatusOr<Reply> r) { done.set_value(std::move(r)); });
  CallFuture by_future = server_->Call(connection, HeldCall(0xC202));
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20),
                             [&] { return backward_held_.size() >= 1; }));
  }
  EXPECT_NE(by_callback, CallId());
  EXPECT_NE(by_future.id(), by_callback);
  server_->Cancel(connection, by_future.id());
  EXPECT_EQ(Wait(by_future).status().code(), absl::StatusCode::kCancelled);
  server_->Cancel(connection, by_callback);
  std::future<absl::StatusOr<Reply>> callback_outcome = done.get_future();
  EXPECT_EQ(Wait(callback_outcome).status().code(),
            absl::StatusCode::kCancelled);
  // Cancelling again, or an id the connection never issued, does nothing.
  server_->Cancel(connection, by_callback);
  server_->Cancel(connection, CallId(9999));
  server_->Cancel(ConnectionId(9999), by_callback);
}

// A backward call refused at once has no id: its future is ready.
TEST_P(ApiTest, Rfc8167_ABackwardCallToNoConnectionIsRefusedWithoutAnId) {
  Start();
  CallFuture call = server_->Call(ConnectionId(9999), HeldCall(0xC301));
  EXPECT_EQ(call.id(), CallId());
  ASSERT_EQ(call.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(call.get().status().code(), absl::StatusCode::kNotFound);
}

// Shutdown drains, fails what is pending, and leaves a Channel that
// refuses calls; a second Shutdown and the destructor have nothing to do.
TEST_P(ApiTest, ChannelShutdownFailsPendingCallsAndRefusesLaterOnes) {
  Start();
  Prime();
  CallFuture pending = channel_->Call(HeldCall(0xC401));
  ASSERT_TRUE(WaitHeld(1));
  EXPECT_TRUE(channel_->Shutdown().ok());
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(0)),
            std::future_status::ready)
      << "pending calls complete before Shutdown returns";
  EXPECT_EQ(pending.get().status().code(), absl::StatusCode::kUnavailable);
  CallRequest later;
  later.xdr = CallHeader(0xC402, kNull);
  later.max_reply_size = 64;
  EXPECT_EQ(channel_->BlockingCall(std::move(later)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(channel_->Shutdown(DeadlineIn(std::chrono::seconds(0))).ok());
  // Replies after the Channel has gone are dropped by the Server.
  TakeHeldWithXids();
}

// Shutdown from the Channel's own loop would wait for itself: refused.
TEST_P(ApiTest, ChannelShutdownFromItsOwnCallbackIsRefused) {
  Start();
  std::promise<absl::Status> from_callback;
  CallRequest req;
  req.xdr = CallHeader(0xC501, kNull);
  req.max_reply_size = 64;
  channel_->Call(std::move(req), [&](absl::StatusOr<Reply>) {
    from_callback.set_value(channel_->Shutdown());
  });
  std::future<absl::Status> refused = from_callback.get_future();
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(60)),
            std::future_status::ready);
  EXPECT_EQ(refused.get().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(channel_->connected());
}

// A Server's Shutdown ends its connections (the Channel sees the loss) and
// refuses backward calls afterwards.
TEST_P(ApiTest, ServerShutdownEndsConnectionsAndRefusesBackwardCalls) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const ConnectionId connection = ServerSideConnection();
  EXPECT_TRUE(server_->Shutdown().ok());
  EXPECT_EQ(server_->connections(), 0u);
  CallFuture call = server_->Call(connection, HeldCall(0xC601));
  EXPECT_EQ(call.id(), CallId());
  EXPECT_EQ(Wait(call).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(server_->Shutdown().ok());
}

// A handler on the Server's handler threads that calls Shutdown while
// another thread's Shutdown is joining those threads is refused, as from
// any of the Server's threads; it must not wait for a Shutdown that waits
// for it.
TEST_P(ApiTest,
       ServerShutdownFromAHandlerThreadDuringAnotherShutdownIsRefused) {
  config::TransportConfig config = Config();
  config.mutable_execution()->set_handler_threads(1);
  std::promise<void> entered;
  std::promise<void> shutting_down;
  std::promise<absl::Status> from_handler;
  std::unique_ptr<Server> server;
  auto created = Server::Create(
      GetParam().listen_uri(), config, [&](IncomingCall, Responder) {
        entered.set_value();
        shutting_down.get_future().wait();
        // Give the other Shutdown time to reach the handler threads.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        from_handler.set_value(server->Shutdown());
      });
  ASSERT_TRUE(created.ok()) << created.status();
  server = std::move(*created);
  auto channel = Channel::Create(server->uri(), config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  CallFuture call = (*channel)->Call(HeldCall(0xC701));
  entered.get_future().wait();
  std::future<absl::Status> other = std::async(std::launch::async, [&] {
    shutting_down.set_value();
    return server->Shutdown(DeadlineIn(std::chrono::seconds(0)));
  });
  if (other.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    // Both Shutdowns wait for each other; nothing can unwind that.
    ADD_FAILURE() << "Shutdown from a handler thread deadlocked with the "
                     "Shutdown joining it";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  EXPECT_EQ(from_handler.get_future().get().code(),
            absl::StatusCode::kFailedPrecondition);
  Wait(call).IgnoreError();
}

// A backward handler on the Channel's handler threads (RFC 8167) that
// calls the Channel's Shutdown is refused: Shutdown joins those threads.
TEST_P(ApiTest, Rfc8167_ChannelShutdownFromABackwardHandlerThreadIsRefused) {
  StartServer(Config());
  config::TransportConfig config = Config();
  config.mutable_execution()->set_handler_threads(1);
  std::promise<absl::Status> from_handler;
  std::unique_ptr<Channel> channel;
  auto created = Channel::Create(
      server_->uri(), config, [&](IncomingCall call, Responder responder) {
        from_handler.set_value(channel->Shutdown());
        EXPECT_TRUE(responder.Send(Answer(call)).ok());
      });
  ASSERT_TRUE(created.ok()) << created.status();
  channel = std::move(*created);
  CallRequest probe;
  probe.xdr = CallHeader(0xC801, kNull);
  probe.max_reply_size = 64;
  ASSERT_TRUE(channel->BlockingCall(std::move(probe)).ok());
  const ConnectionId connection = Received(0xC801).connection;
  CallRequest backward;
  backward.xdr = CallHeader(0xC802, kNull);
  backward.max_reply_size = 64;
  CallFuture call = server_->Call(connection, std::move(backward));
  std::future<absl::Status> refused = from_handler.get_future();
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(60)),
            std::future_status::ready);
  EXPECT_EQ(refused.get().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Wait(call).ok());
}

}  // namespace
}  // namespace rpcrdma::test
