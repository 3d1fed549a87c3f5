// Channel::BlockingCall (a call as cheap as the TCP it
// replaces): the calling thread reads its own reply, alone or with other
// threads blocked on the same Channel, beside callback calls, with
// deadlines and lost connections; the same in two steps (StartCall,
// Await) with many calls in flight; and the adaptive busy poll
// (execution.busy_poll_us) that keeps a loop from sleeping between
// replies. Over the soft fabric (label `soft`).
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "plugin/api/channel_core.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"
#include "tests/api/call_stream.h"
#include "tests/api/process_stats.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma {
namespace {

using test::VoluntarySwitches;

using test::NullCall;
using test::ReplyHeader;
using test::ServeAndConnect;

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

std::string UnixUri(absl::string_view what) {
  return test::UniqueUnixUri(absl::StrCat("blocking-", what));
}

uint32_t XidOf(const Reply& reply) {
  if (reply.xdr.size() < 4) return 0;
  return LoadBigEndian32(reply.xdr.data());
}

void AnswerNull(IncomingCall call, Responder responder) {
  EXPECT_TRUE(responder.Send(HandlerReply(ReplyHeader(call.xid))).ok());
}

std::set<std::string> TaskIds() {
  std::set<std::string> ids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ids.insert(e->d_name);
    }
    closedir(d);
  }
  return ids;
}

TEST(BlockingCall, ReturnsEachReplyOnTheCallingThread) {
  auto connected = ServeAndConnect(UnixUri("basic"), {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  for (uint32_t xid = 1; xid <= 500; ++xid) {
    absl::StatusOr<Reply> reply = channel->BlockingCall(NullCall(xid));
    ASSERT_TRUE(reply.ok()) << xid << ": " << reply.status();
    ASSERT_EQ(XidOf(*reply), xid);
  }
}

TEST(BlockingCall, ManyThreadsOnOneChannelEachGetTheirOwnReply) {
  // The handler answers from its own thread after a pause, so replies
  // come back in another order than the calls went out and every waiting
  // thread must hand reading over to the others.
  auto connected = ServeAndConnect(
      UnixUri("threads"), {}, [](IncomingCall call, Responder responder) {
        std::thread([xid = call.xid, r = std::move(responder)]() mutable {
          std::this_thread::sleep_for(milliseconds(xid % 3));
          EXPECT_TRUE(r.Send(HandlerReply(ReplyHeader(xid))).ok());
        }).detach();
      });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  constexpr uint32_t kThreads = 6;
  constexpr uint32_t kCallsEach = 60;
  std::atomic<uint32_t> mismatched{0};
  std::atomic<uint32_t> failed{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kCallsEach; ++i) {
        const uint32_t xid = 1 + t * kCallsEach + i;
        absl::StatusOr<Reply> reply = channel->BlockingCall(NullCall(xid));
        if (!reply.ok()) {
          ++failed;
        } else if (XidOf(*reply) != xid) {
          ++mismatched;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_EQ(mismatched.load(), 0u);
}

TEST(BlockingCall, CallbackCallsBesideItStillCompleteOnTheLoop) {
  auto connected = ServeAndConnect(UnixUri("mixed"), {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  std::atomic<int> callbacks{0};
  std::promise<void> all;
  constexpr int kCallbacks = 50;
  for (uint32_t i = 0; i < kCallbacks; ++i) {
    channel->Call(NullCall(1000 + i), [&](absl::StatusOr<Reply> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      if (++callbacks == kCallbacks) all.set_value();
    });
    absl::StatusOr<Reply> reply = channel->BlockingCall(NullCall(1 + i));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(XidOf(*reply), 1 + i);
  }
  EXPECT_EQ(all.get_future().wait_for(seconds(20)), std::future_status::ready);
  // Parked between blocking calls, the connection is watched again for a
  // callback call made after them.
  std::promise<absl::StatusOr<Reply>> late;
  channel->Call(NullCall(7777),
                [&](absl::StatusOr<Reply> r) { late.set_value(std::move(r)); });
  auto f = late.get_future();
  ASSERT_EQ(f.wait_for(seconds(20)), std::future_status::ready);
  EXPECT_TRUE(f.get().ok());
}

TEST(BlockingCall, DeadlinePassesWhileTheServerHoldsTheCall) {
  std::mutex held_mu;
  std::vector<Responder> held;
  // Call 5 is held (never answered while the test runs); others answered.
  auto connected = ServeAndConnect(
      UnixUri("deadline"), {}, [&](IncomingCall call, Responder responder) {
        if (call.xid != 5) {
          AnswerNull(std::move(call), std::move(responder));
          return;
        }
        std::lock_guard<std::mutex> lock(held_mu);
        held.push_back(std::move(responder));
      });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  CallRequest req = NullCall(5);
  req.deadline = Clock::now() + milliseconds(100);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Reply> reply = channel->BlockingCall(std::move(req));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded)
      << reply.status();
  EXPECT_LT(Clock::now() - start, seconds(10));
  // The Channel still works: the next call gets its own reply.
  absl::StatusOr<Reply> next = channel->BlockingCall(NullCall(6));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(XidOf(*next), 6u);
}

// While a test runs, the reading thread's poll() is bounded by 10 s instead
// of 20 ms: a completion that does not wake it shows as a 10 s stall.
class LongBlockingReadBound {
 public:
  LongBlockingReadBound() {
    api_internal::SetBlockingReadBoundForTesting(seconds(10));
  }
  ~LongBlockingReadBound() {
    api_internal::SetBlockingReadBoundForTesting(std::nullopt);
  }
};

// The loop enforces deadlines (the engine has no clock): it completes the
// call while the caller's thread sleeps in poll() on the connection, which
// the passing deadline does not make readable.
TEST(BlockingCall, DeadlineTheLoopEnforcesWakesTheReadingThread) {
  const LongBlockingReadBound bound;
  std::mutex held_mu;
  std::vector<Responder> held;
  auto connected = ServeAndConnect(UnixUri("deadline-wake"), {},
                                   [&](IncomingCall, Responder responder) {
                                     std::lock_guard<std::mutex> lock(held_mu);
                                     held.push_back(std::move(responder));
                                   });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  for (uint32_t xid = 1; xid <= 3; ++xid) {
    CallRequest req = NullCall(xid);
    req.deadline = Clock::now() + milliseconds(50);
    const Clock::time_point start = Clock::now();
    absl::StatusOr<Reply> reply = channel->BlockingCall(std::move(req));
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded)
        << reply.status();
    EXPECT_LT(Clock::now() - start, seconds(5)) << "call " << xid;
  }
}

// A Channel's first call: the loop still watches the connection when the
// call goes out, and may read the reply and complete the call just before
// the caller's thread starts reading for it. That thread must not sleep
// on a connection the loop has already read.
TEST(BlockingCall, FirstCallsOfFreshChannelsNeverWaitForTheReadBound) {
  const LongBlockingReadBound bound;
  auto server = Server::Create(UnixUri("first-calls"), {}, AnswerNull);
  ASSERT_TRUE(server.ok()) << server.status();
  for (int i = 0; i < 200; ++i) {
    auto channel = Channel::Create((*server)->uri(), {});
    ASSERT_TRUE(channel.ok()) << channel.status();
    const Clock::time_point start = Clock::now();
    absl::StatusOr<Reply> reply = (*channel)->BlockingCall(NullCall(1));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_LT(Clock::now() - start, seconds(5)) << "channel " << i;
  }
}

TEST(BlockingCall, LostConnectionEndsTheWait) {
  std::promise<void> arrived;
  std::mutex held_mu;
  std::vector<Responder> held;
  auto connected = ServeAndConnect(UnixUri("lost"), {},
                                   [&](IncomingCall, Responder responder) {
                                     std::lock_guard<std::mutex> lock(held_mu);
                                     held.push_back(std::move(responder));
                                     arrived.set_value();
                                   });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Server>& server = connected->server;
  std::unique_ptr<Channel>& channel = connected->channel;
  std::thread closer([&] {
    arrived.get_future().wait();
    server.reset();  // the connection goes with the Server
  });
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Reply> reply = channel->BlockingCall(NullCall(9));
  closer.join();
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable)
      << reply.status();
  EXPECT_LT(Clock::now() - start, seconds(10));
}

// The reply's Send completes at the server once this side acknowledges it
// (soft fabric: acknowledgements wait at most a moment for output to ride
// on). A Channel whose blocking call read the reply, and which then sends
// nothing more, must still acknowledge it: the server lends the reply's
// memory until then (HandlerReply::on_released), and a synchronous adapter
// (svc_sendreply) waits for that.
TEST(BlockingCall, AcknowledgesTheReplyWithoutAnotherCall) {
  for (const std::string& uri :
       {UnixUri("release"), std::string("soft+tcp://127.0.0.1:0")}) {
    SCOPED_TRACE(uri);
    std::atomic<int> released{0};
    std::vector<uint8_t> lent(200 * 1024, 7);
    auto connected =
        ServeAndConnect(uri, {}, [&](IncomingCall call, Responder responder) {
          std::vector<uint8_t> xdr = ReplyHeader(call.xid);
          test::AppendWord(xdr, static_cast<uint32_t>(lent.size()));
          const uint32_t position = static_cast<uint32_t>(xdr.size());
          (void)responder.Send(HandlerReply(std::move(xdr),
                                            {ReplyItem::Lent(position, lent)},
                                            [&released] { ++released; }));
        });
    ASSERT_TRUE(connected.ok()) << connected.status();
    std::vector<uint8_t> result(lent.size());
    CallRequest request = NullCall(7);
    request.results.push_back(absl::MakeSpan(result));
    ASSERT_TRUE(connected->channel->BlockingCall(std::move(request)).ok());
    const Clock::time_point until = Clock::now() + seconds(5);
    while (released.load() == 0 && Clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_EQ(released.load(), 1);
  }
}

TEST(BlockingCall, FromTheChannelsOwnCallbackIsRefused) {
  auto connected = ServeAndConnect(UnixUri("reentry"), {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  std::promise<absl::Status> inner;
  channel->Call(NullCall(1), [&](absl::StatusOr<Reply>) {
    inner.set_value(channel->BlockingCall(NullCall(2)).status());
  });
  auto f = inner.get_future();
  ASSERT_EQ(f.wait_for(seconds(20)), std::future_status::ready);
  const absl::Status s = f.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// A call whose argument the server pulls with RDMA Reads over soft+tcp,
// many slices of the socket (RFC 8166 §3.4.5), while the calling thread
// reads the connection: the Read that completes inside
// PollConnectionEvent's progress must still reach the engine (it once
// stalled the call), and acknowledgements the endpoint holds back are sent
// by the waiting thread too.
TEST(BlockingCall, LargeReadChunksOverTcpComplete) {
  auto connected = ServeAndConnect("soft+tcp://127.0.0.1:0", {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  std::vector<uint8_t> data(15 << 20, 7);
  for (uint32_t xid = 1; xid <= 8; ++xid) {
    CallRequest request = NullCall(xid);
    test::AppendWord(request.xdr, static_cast<uint32_t>(data.size()));
    request.arguments.push_back(
        {static_cast<uint32_t>(request.xdr.size()), data});
    request.deadline = Clock::now() + seconds(20);
    absl::StatusOr<Reply> reply = channel->BlockingCall(std::move(request));
    ASSERT_TRUE(reply.ok()) << xid << ": " << reply.status();
    EXPECT_EQ(XidOf(*reply), xid);
  }
  EXPECT_EQ(channel->counters().read_chunk_calls, 8u);
}

// StartCall / Await: BlockingCall split in two, several calls in flight.
TEST(StartCallAwait, ManyCallsInFlightAreAwaitedInAnyOrder) {
  // Replies come back in reverse order of the calls: all 32 are in flight
  // at once, held until the last one has arrived.
  constexpr uint32_t kCalls = 32;
  std::mutex held_mu;
  std::vector<std::pair<uint32_t, Responder>> held;
  auto connected = ServeAndConnect(
      UnixUri("start"), {}, [&](IncomingCall call, Responder responder) {
        if (call.xid == 100)
          return AnswerNull(std::move(call), std::move(responder));
        std::lock_guard<std::mutex> lock(held_mu);
        held.emplace_back(call.xid, std::move(responder));
        if (held.size() < kCalls) return;
        for (auto it = held.rbegin(); it != held.rend(); ++it) {
          EXPECT_TRUE(
              it->second.Send(HandlerReply(ReplyHeader(it->first))).ok());
        }
      });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  // One credit until the first reply grants more (RFC 8166 §3.3.1).
  ASSERT_TRUE(channel->Await(channel->StartCall(NullCall(100))).ok());
  std::vector<Channel::CallId> ids;
  for (uint32_t xid = 1; xid <= kCalls; ++xid) {
    ids.push_back(channel->StartCall(NullCall(xid)));
  }
  // Awaited oldest first (the order a synchronous client reads in), by two
  // threads taking turns.
  std::atomic<uint32_t> mismatched{0};
  auto await_every_other = [&](uint32_t first) {
    for (uint32_t i = first; i < kCalls; i += 2) {
      absl::StatusOr<Reply> reply = channel->Await(ids[i]);
      if (!reply.ok() || XidOf(*reply) != i + 1) ++mismatched;
    }
  };
  std::thread other(await_every_other, 1);
  await_every_other(0);
  other.join();
  EXPECT_EQ(mismatched.load(), 0u);
  EXPECT_EQ(channel->counters().peak_calls_outstanding, kCalls);
}

TEST(StartCallAwait, AnOutcomeIsAwaitedOnce) {
  auto connected = ServeAndConnect(UnixUri("once"), {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  const Channel::CallId id = channel->StartCall(NullCall(3));
  absl::StatusOr<Reply> reply = channel->Await(id);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(XidOf(*reply), 3u);
  EXPECT_EQ(channel->Await(id).status().code(), absl::StatusCode::kNotFound);
  // A callback call's id is not StartCall's.
  const Channel::CallId callback_id =
      channel->Call(NullCall(4), [](absl::StatusOr<Reply>) {});
  EXPECT_EQ(channel->Await(callback_id).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(StartCallAwait, CancelAndLostConnectionEndStartedCalls) {
  std::mutex held_mu;
  std::vector<Responder> held;
  auto connected = ServeAndConnect(
      UnixUri("cancel"), {}, [&](IncomingCall call, Responder responder) {
        if (call.xid == 100)
          return AnswerNull(std::move(call), std::move(responder));
        std::lock_guard<std::mutex> lock(held_mu);
        held.push_back(std::move(responder));
      });
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Server>& server = connected->server;
  std::unique_ptr<Channel>& channel = connected->channel;
  // The grant beyond one credit (RFC 8166 §3.3.1), so that the cancelled
  // call's credit is not the only one.
  ASSERT_TRUE(channel->Await(channel->StartCall(NullCall(100))).ok());
  const Channel::CallId cancelled = channel->StartCall(NullCall(1));
  const Channel::CallId lost = channel->StartCall(NullCall(2));
  channel->Cancel(cancelled);
  EXPECT_EQ(channel->Await(cancelled).status().code(),
            absl::StatusCode::kCancelled);
  server.reset();
  EXPECT_EQ(channel->Await(lost).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(StartCallAwait, AwaitFromTheChannelsOwnCallbackIsRefused) {
  auto connected = ServeAndConnect(UnixUri("await-reentry"), {}, AnswerNull);
  ASSERT_TRUE(connected.ok()) << connected.status();
  std::unique_ptr<Channel>& channel = connected->channel;
  const Channel::CallId started = channel->StartCall(NullCall(1));
  std::promise<absl::Status> inner;
  channel->Call(NullCall(2), [&](absl::StatusOr<Reply>) {
    inner.set_value(channel->Await(started).status());
  });
  auto f = inner.get_future();
  ASSERT_EQ(f.wait_for(seconds(20)), std::future_status::ready);
  EXPECT_EQ(f.get().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(channel->Await(started).ok());
}

TEST(BlockingCall, DrivesARuntimeItsUserDrives) {
  auto runtime = Runtime::Create({.loop_threads = 0});
  ASSERT_TRUE(runtime.ok());
  ChannelOptions options;
  options.runtime = *runtime;
  auto connected = ServeAndConnect(UnixUri("user"), {}, AnswerNull, options);
  ASSERT_TRUE(connected.ok()) << connected.status();
  for (uint32_t xid = 1; xid <= 20; ++xid) {
    absl::StatusOr<Reply> reply =
        connected->channel->BlockingCall(NullCall(xid));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(XidOf(*reply), xid);
  }
}

// Voluntary context switches of a Channel's loop thread over `calls`
// sequential callback calls, with execution.busy_poll_us as given.
long LoopSleepsOverCalls(uint32_t busy_poll_us, int calls) {
  auto server = Server::Create(UnixUri("spin"), {}, AnswerNull);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return -1;
  const std::set<std::string> before = TaskIds();
  auto runtime = Runtime::Create({.loop_threads = 1});
  EXPECT_TRUE(runtime.ok());
  if (!runtime.ok()) return -1;
  // The new Runtime's loop thread: new since `before`, and named so (it
  // names itself once running, so wait for that).
  std::string loop_tid;
  for (int attempt = 0; attempt < 400 && loop_tid.empty(); ++attempt) {
    for (const std::string& id : TaskIds()) {
      std::ifstream comm("/proc/self/task/" + id + "/comm");
      std::string name;
      std::getline(comm, name);
      if (!before.contains(id) && name.rfind("rpcrdma-loop", 0) == 0) {
        loop_tid = id;
      }
    }
    if (loop_tid.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  EXPECT_FALSE(loop_tid.empty());
  config::TransportConfig config;
  config.mutable_execution()->set_busy_poll_us(busy_poll_us);
  ChannelOptions options;
  options.runtime = *runtime;
  auto channel = Channel::Create((*server)->uri(), config, options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  if (!channel.ok()) return -1;
  // Warm up: the spin adapts to the traffic it finds.
  for (uint32_t xid = 1; xid <= 20; ++xid) {
    EXPECT_TRUE((*channel)->Call(NullCall(xid)).get().ok());
  }
  const long start = VoluntarySwitches(loop_tid);
  for (int i = 0; i < calls; ++i) {
    EXPECT_TRUE((*channel)->Call(NullCall(100 + i)).get().ok());
  }
  return VoluntarySwitches(loop_tid) - start;
}

TEST(BusyPoll, LoopKeepsPollingBetweenRepliesInsteadOfSleeping) {
  constexpr int kCalls = 200;
  const long sleeping = LoopSleepsOverCalls(0, kCalls);
  const long spinning = LoopSleepsOverCalls(200000, kCalls);
  std::printf("loop sleeps over %d calls: %ld without busy poll, %ld with\n",
              kCalls, sleeping, spinning);
  // Without it the loop sleeps for most replies (on a loaded machine a
  // reply is sometimes there before the loop would sleep); with it, while
  // replies keep coming within the spin, far less often. Under ASan on a
  // loaded two-core machine the loop still slept 77 times over 200 calls
  // with it (223 without), so the bound is half, not a quarter.
  EXPECT_GE(sleeping, kCalls / 4);
  EXPECT_LT(spinning * 2, sleeping);
}

}  // namespace
}  // namespace rpcrdma
