// No heap allocation per call in steady state: after a warm-up, null calls
// over soft+unix through each way of calling (BlockingCall, Call with a
// callback, Call returning a future, StartCall then Await), answered by a
// handler through its Responder, allocate nothing, client and server in
// this one process counted together. What the test's own code allocates
// (the request stream it builds, the handler's reply stream, which the API
// takes by value) is the caller's cost and is not counted (NotCounted).
// A count, not a time: label `soft`, as the API's other tests.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/testing/heap_allocations.h"

namespace rpcrdma {
namespace {

using ::rpcrdma::test::HeapAllocations;
using ::rpcrdma::test::NotCounted;

// Enough calls that the pools every per-call structure comes from have
// reached their steady size (credits, receive buffers, free lists).
constexpr int kWarmUpCalls = 300;
constexpr int kCountedCalls = 1000;

void AnswerNull(IncomingCall call, Responder responder) {
  HandlerReply reply;
  {
    NotCounted handlers_own;
    reply.xdr = test::ReplyHeader(call.xid);
  }
  EXPECT_TRUE(responder.Send(std::move(reply)).ok());
}

// Waits for a callback call's completion; reused, so that waiting
// allocates nothing of its own.
class Completion {
 public:
  Channel::Callback Callback() {
    return [this](absl::StatusOr<Reply> reply) {
      std::lock_guard<std::mutex> lock(mu_);
      ok_ = reply.ok();
      done_ = true;
      cv_.notify_one();
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    done_ = false;
    return ok_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool ok_ = false;
};

// One null call made the way a test names; true when it succeeded.
using NullCaller = std::function<bool(Channel&, CallRequest)>;

// Heap allocations per call over kCountedCalls null calls made by `call`
// after kWarmUpCalls; -1 when this build does not count them.
double AllocationsPerCall(const std::string& what, const NullCaller& call) {
  auto connected = test::ServeAndConnect(
      test::UniqueUnixUri(absl::StrCat("allocation-free-", what)), {},
      AnswerNull);
  EXPECT_TRUE(connected.ok()) << connected.status();
  if (!connected.ok()) return -1;
  Channel& channel = *connected->channel;
  uint32_t xid = 1;
  for (int i = 0; i < kWarmUpCalls; ++i) {
    EXPECT_TRUE(call(channel, test::NullCall(xid++))) << what;
  }
  int64_t allocations = 0;
  for (int i = 0; i < kCountedCalls; ++i) {
    CallRequest request;
    {
      NotCounted callers_own;
      request = test::NullCall(xid++);
    }
    const int64_t before = HeapAllocations();
    if (before < 0) return -1;
    EXPECT_TRUE(call(channel, std::move(request))) << what;
    allocations += HeapAllocations() - before;
  }
  return static_cast<double>(allocations) / kCountedCalls;
}

// Allows the rare allocation that is not the call's (a timer's first
// arming, a log line on the loop), never one per call.
constexpr double kMostPerCall = 0.01;

void ExpectNoAllocationPerCall(const std::string& what,
                               const NullCaller& call) {
  const double per_call = AllocationsPerCall(what, call);
  if (per_call < 0) GTEST_SKIP() << "heap allocations are not counted here";
  std::printf("%s: %.3f heap allocations per null call\n", what.c_str(),
              per_call);
  EXPECT_LE(per_call, kMostPerCall)
      << what << ": " << per_call << " heap allocations per null call";
}

TEST(AllocationFreeCalls, BlockingCall) {
  ExpectNoAllocationPerCall("blocking", [](Channel& c, CallRequest request) {
    return c.BlockingCall(std::move(request)).ok();
  });
}

TEST(AllocationFreeCalls, CallWithCallback) {
  Completion completion;
  ExpectNoAllocationPerCall("callback",
                            [&completion](Channel& c, CallRequest request) {
                              c.Call(std::move(request), completion.Callback());
                              return completion.Wait();
                            });
}

TEST(AllocationFreeCalls, CallReturningFuture) {
  ExpectNoAllocationPerCall("future", [](Channel& c, CallRequest request) {
    return c.Call(std::move(request)).get().ok();
  });
}

TEST(AllocationFreeCalls, StartCallThenAwait) {
  ExpectNoAllocationPerCall("await", [](Channel& c, CallRequest request) {
    return c.Await(c.StartCall(std::move(request))).ok();
  });
}

}  // namespace
}  // namespace rpcrdma
