// The runtime under Channels and Servers (rpcrdma/runtime.h): loops shared
// by many connections, handlers on a worker pool, a runtime driven from the
// user's own epoll loop, and 16 MiB calls and replies with the default
// configuration. Over the soft fabric (label `soft`); ten thousand
// connections in runtime_scale_test.cc.
#include "rpcrdma/runtime.h"

#include <dirent.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/api/process_stats.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma {
namespace {

using test::Threads;

using test::NullCall;
using test::ReplyHeader;

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

std::string UnixUri(absl::string_view what) {
  return test::UniqueUnixUri(absl::StrCat("runtime-", what));
}

void AnswerNull(IncomingCall call, Responder responder) {
  EXPECT_TRUE(responder.Send(HandlerReply(ReplyHeader(call.xid))).ok());
}

absl::StatusOr<Reply> Wait(std::future<absl::StatusOr<Reply>>& f) {
  if (f.wait_for(seconds(20)) != std::future_status::ready) {
    return absl::DeadlineExceededError("test: no completion within 20 s");
  }
  return f.get();
}

TEST(Runtime, CreateRejectsTooManyLoops) {
  EXPECT_EQ(Runtime::Create({.loop_threads = 1025}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto runtime = Runtime::Create({.loop_threads = 3});
  ASSERT_TRUE(runtime.ok());
  EXPECT_EQ((*runtime)->loop_threads(), 3u);
  EXPECT_EQ((*runtime)->event_fd(), -1);  // it has threads of its own
  EXPECT_GE(Runtime::Default()->loop_threads(), 1u);
}

// Two loop threads serve a Server and a thousand Channels: no thread per
// Channel (it used to be one each), and every Channel works.
TEST(SharedLoops, ThousandChannelsOnTwoLoopThreads) {
  auto runtime = Runtime::Create({.loop_threads = 2});
  ASSERT_TRUE(runtime.ok());
  const size_t threads_before = Threads();
  config::TransportConfig config;
  config.mutable_limits()->set_max_connections(2000);
  ServerOptions server_options;
  server_options.runtime = *runtime;
  auto server =
      Server::Create(UnixUri("thousand"), config, AnswerNull, server_options);
  ASSERT_TRUE(server.ok()) << server.status();
  ChannelOptions options;
  options.runtime = *runtime;
  std::vector<std::unique_ptr<Channel>> channels;
  for (int i = 0; i < 1000; ++i) {
    auto c = Channel::Create((*server)->uri(), {}, options);
    ASSERT_TRUE(c.ok()) << i << ": " << c.status();
    channels.push_back(*std::move(c));
  }
  EXPECT_EQ(Threads(), threads_before);
  std::vector<std::future<absl::StatusOr<Reply>>> calls;
  for (size_t i = 0; i < channels.size(); ++i) {
    calls.push_back(channels[i]->Call(NullCall(static_cast<uint32_t>(i + 1))));
  }
  for (auto& f : calls) {
    absl::StatusOr<Reply> r = Wait(f);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ((*server)->connections(), 1000u);
  // Per Channel a deadline source and a descriptor watch; per accepted
  // connection one source; the listener one.
  EXPECT_EQ((*runtime)->sources(), 1000u * 2 + 1000u + 1);
  channels.clear();
  server->reset();
  EXPECT_EQ((*runtime)->sources(), 0u);
}

// A handler that blocks (here until the test lets it go) holds a worker of
// the pool, not a loop: the other connections of the same loop go on.
TEST(WorkerPool, SlowHandlerDoesNotStallOtherConnections) {
  auto runtime = Runtime::Create({.loop_threads = 1});
  ASSERT_TRUE(runtime.ok());
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0};
  config::TransportConfig config;
  config.mutable_execution()->set_handler_threads(2);
  ServerOptions server_options;
  server_options.runtime = *runtime;
  auto server = Server::Create(
      UnixUri("slow"), config,
      [&](IncomingCall call, Responder responder) {
        if (call.xid == 1) {  // the slow one
          ++blocked;
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return release; });
        }
        AnswerNull(std::move(call), std::move(responder));
      },
      server_options);
  ASSERT_TRUE(server.ok()) << server.status();
  // On every way out of the test, a failed assertion included, the slow
  // handler is let go: the Server's pool joins its workers when it goes.
  auto let_go = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
  };
  struct OnExit {
    std::function<void()> run;
    ~OnExit() { run(); }
  } release_on_exit{let_go};
  ChannelOptions options;
  options.runtime = *runtime;
  auto slow = Channel::Create((*server)->uri(), {}, options);
  auto fast = Channel::Create((*server)->uri(), {}, options);
  ASSERT_TRUE(slow.ok() && fast.ok());
  auto stuck = (*slow)->Call(NullCall(1));
  while (blocked.load() == 0) std::this_thread::sleep_for(milliseconds(1));
  for (uint32_t xid = 2; xid < 102; ++xid) {
    auto f = (*fast)->Call(NullCall(xid));
    absl::StatusOr<Reply> r = Wait(f);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(stuck.wait_for(milliseconds(0)), std::future_status::timeout);
  let_go();
  EXPECT_TRUE(Wait(stuck).ok());
}

// Without a pool the handler runs on the loop thread of its connection:
// the same thread for every call of a Channel, never the caller's.
TEST(WorkerPool, WithoutAPoolHandlersRunOnTheLoop) {
  auto runtime = Runtime::Create({.loop_threads = 1});
  ASSERT_TRUE(runtime.ok());
  std::mutex mu;
  std::vector<std::thread::id> handler_threads;
  ServerOptions server_options;
  server_options.runtime = *runtime;
  auto server = Server::Create(
      UnixUri("onloop"), {},
      [&](IncomingCall call, Responder responder) {
        {
          std::lock_guard<std::mutex> lock(mu);
          handler_threads.push_back(std::this_thread::get_id());
        }
        AnswerNull(std::move(call), std::move(responder));
      },
      server_options);
  ASSERT_TRUE(server.ok());
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok());
  for (uint32_t xid = 1; xid <= 3; ++xid) {
    auto f = (*channel)->Call(NullCall(xid));
    ASSERT_TRUE(Wait(f).ok());
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(handler_threads.size(), 3u);
  EXPECT_EQ(handler_threads[0], handler_threads[1]);
  EXPECT_EQ(handler_threads[1], handler_threads[2]);
  EXPECT_NE(handler_threads[0], std::this_thread::get_id());
}

// A Channel embedded in the user's own epoll loop: nothing of it runs
// until the user calls RunReady(), and then on the user's thread.
TEST(UserDrivenRuntime, ChannelDrivenFromTheUsersEpollLoop) {
  auto server = Server::Create(UnixUri("embedded"), {}, AnswerNull);
  ASSERT_TRUE(server.ok());
  auto runtime = Runtime::Create({.loop_threads = 0});
  ASSERT_TRUE(runtime.ok());
  EXPECT_EQ((*runtime)->loop_threads(), 0u);
  ASSERT_GE((*runtime)->event_fd(), 0);
  const size_t threads_before = Threads();
  ChannelOptions options;
  options.runtime = *runtime;
  auto channel = Channel::Create((*server)->uri(), {}, options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(Threads(), threads_before);

  // The user's loop: one epoll set with the runtime's descriptor in it.
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(epoll, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = (*runtime)->event_fd();
  ASSERT_EQ(epoll_ctl(epoll, EPOLL_CTL_ADD, (*runtime)->event_fd(), &ev), 0);

  std::atomic<int> done{0};
  std::thread::id callback_thread;
  for (uint32_t xid = 1; xid <= 10; ++xid) {
    (*channel)->Call(NullCall(xid), [&](absl::StatusOr<Reply> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      callback_thread = std::this_thread::get_id();
      ++done;
    });
  }
  // Not driven: the replies wait (the calls themselves went out at once).
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(done.load(), 0);
  const Clock::time_point until = Clock::now() + seconds(10);
  while (done.load() < 10 && Clock::now() < until) {
    epoll_event ready;
    if (epoll_wait(epoll, &ready, 1, 100) == 1) (*runtime)->RunReady();
  }
  EXPECT_EQ(done.load(), 10);
  EXPECT_EQ(callback_thread, std::this_thread::get_id());
  // Deadlines come through the same descriptor (a timer in its set).
  CallRequest late = NullCall(99);
  late.deadline = Clock::now() + milliseconds(50);
  std::atomic<bool> expired{false};
  // Kept unanswered until the server is gone (one dropped is answered).
  std::mutex parked_mu;
  std::vector<Responder> parked;
  auto held = Server::Create(UnixUri("never"), {},
                             [&](IncomingCall, Responder responder) {
                               std::lock_guard<std::mutex> lock(parked_mu);
                               parked.push_back(std::move(responder));
                             });
  ASSERT_TRUE(held.ok());
  auto silent = Channel::Create((*held)->uri(), {}, options);
  ASSERT_TRUE(silent.ok());
  (*silent)->Call(std::move(late), [&](absl::StatusOr<Reply> r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    expired = true;
  });
  while (!expired.load() && Clock::now() < until) {
    epoll_event ready;
    if (epoll_wait(epoll, &ready, 1, 100) == 1) (*runtime)->RunReady();
  }
  EXPECT_TRUE(expired.load());
  close(epoll);
}

// 16 MiB arguments and results with every setting at its default
// (limits.max_call_size 16 MiB + 4 KiB): a read chunk, a write chunk, and
// a reply chunk carrying a 16 MiB reduced reply (RFC 8166 §3.4.5, §3.4.7,
// §3.5.4), each in segments the device can move.
TEST(LargeCalls, SixteenMiBWithTheDefaultConfiguration) {
  constexpr size_t kSize = 16u << 20;
  std::vector<uint8_t> lent(kSize);
  for (size_t i = 0; i < kSize; ++i) lent[i] = static_cast<uint8_t>(i * 7 + 1);
  auto server = Server::Create(
      UnixUri("sixteen"), {}, [&](IncomingCall call, Responder responder) {
        HandlerReply reply(ReplyHeader(call.xid));
        const uint32_t proc = call.message[23];
        if (proc == 1) {
          // Echo the argument through the write chunk the call offered.
          EXPECT_EQ(call.message.size(), 24 + 4 + kSize);
          const uint32_t position = static_cast<uint32_t>(reply.xdr.size()) + 4;
          test::AppendWord(reply.xdr, static_cast<uint32_t>(kSize));
          reply.results.push_back(ReplyItem::Lent(
              position, call.message.span().subspan(28, kSize)));
          // The call's Buffer lives on in the release notification.
          auto keep = std::make_shared<Buffer>(std::move(call.message));
          reply.on_released = [keep] {};
        } else {
          // A long reply: 16 MiB inline in the reduced reply (reply chunk).
          reply.xdr.insert(reply.xdr.end(), lent.begin(), lent.end());
        }
        EXPECT_TRUE(responder.Send(std::move(reply)).ok());
      });
  ASSERT_TRUE(server.ok());
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok());

  std::vector<uint8_t> result(kSize);
  CallRequest echo;
  echo.xdr = test::MinimalCallStream(1);
  echo.xdr[23] = 1;  // procedure 1: echo
  test::AppendWord(echo.xdr, static_cast<uint32_t>(kSize));
  echo.arguments.push_back({static_cast<uint32_t>(echo.xdr.size()), lent});
  echo.results.push_back(absl::MakeSpan(result));
  echo.max_reply_size = 64;
  auto f = (*channel)->Call(std::move(echo));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->result_lengths.size(), 1u);
  EXPECT_EQ(r->result_lengths[0], kSize);
  EXPECT_TRUE(result == lent);

  CallRequest big_reply;
  big_reply.xdr = test::MinimalCallStream(2);
  big_reply.xdr[23] = 2;
  big_reply.max_reply_size = static_cast<uint32_t>(24 + kSize);
  auto g = (*channel)->Call(std::move(big_reply));
  r = Wait(g);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->xdr.size(), 24 + kSize);
  EXPECT_TRUE(r->xdr.span().subspan(24) == absl::MakeConstSpan(lent));
  const Counters c = (*channel)->counters();
  EXPECT_EQ(c.read_chunk_calls, 1u);
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.long_replies, 1u);
}

}  // namespace
}  // namespace rpcrdma
