// The event loop under Channels and Servers (plugin/runtime): a loop told
// to stop while it is busy stops, whatever instant the request lands at.
#include "plugin/runtime/event_loop.h"

#include <poll.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace rpcrdma::runtime {
namespace {

// A loop destroyed right after work was posted to it, while it is still
// running that work, must not go to sleep past the stop request: it did
// once (the request landed between the loop's last look at it and its
// sleep, leaving a Runtime's destructor waiting on the loop for an hour).
TEST(EventLoop, StopsWhenDestroyedWhileBusy) {
  constexpr int kLoops = 3000;
  for (int i = 0; i < kLoops; ++i) {
    auto loop = EventLoop::Create(/*own_thread=*/true, "test-loop");
    ASSERT_TRUE(loop.ok()) << loop.status();
    std::atomic<int> ran{0};
    for (int t = 0; t < 1 + i % 8; ++t) (*loop)->Post([&ran] { ++ran; });
    // Destroyed on a thread of its own, so a lost stop fails the test
    // instead of hanging it.
    std::promise<void> destroyed;
    std::thread destroyer([&] {
      loop->reset();
      destroyed.set_value();
    });
    const bool stopped =
        destroyed.get_future().wait_for(std::chrono::seconds(10)) ==
        std::future_status::ready;
    if (!stopped) {
      destroyer.detach();
      FAIL() << "loop " << i << " did not stop within 10 s of its destructor";
    }
    destroyer.join();
    EXPECT_EQ(ran.load(), 1 + i % 8) << "posted work is run before the stop";
  }
}

// A loop without a thread sets its timer again only for an earlier
// deadline: a later one, or none, leaves it (it fires early at most once).
TEST(EventLoop, TimerIsSetAgainOnlyForAnEarlierDeadline) {
  const Clock::time_point now = Clock::now();
  const Clock::time_point never = Clock::time_point::max();
  const Clock::time_point soon = now + std::chrono::seconds(1);
  const Clock::time_point later = now + std::chrono::seconds(60);
  EXPECT_TRUE(TimerNeedsArming(never, soon));   // not armed
  EXPECT_TRUE(TimerNeedsArming(later, soon));   // earlier
  EXPECT_FALSE(TimerNeedsArming(soon, soon));   // the same
  EXPECT_FALSE(TimerNeedsArming(soon, later));  // later: fires early once
  EXPECT_FALSE(TimerNeedsArming(soon, never));  // none: fires early once
  EXPECT_FALSE(TimerNeedsArming(never, never));
}

class CountingSource : public Source {
 public:
  void OnReadable() override {}
  void OnDeadline() override { ++deadlines; }
  int deadlines = 0;
};

bool ReadableWithin(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// The lazy timer still wakes its user in time: a deadline moved earlier
// makes event_fd() readable by then, and one moved later costs at most the
// one early wake-up that the next round turns into the later deadline.
TEST(EventLoop, ThreadlessLoopWakesForItsEarliestDeadline) {
  auto loop = EventLoop::Create(/*own_thread=*/false, "test-loop");
  ASSERT_TRUE(loop.ok()) << loop.status();
  CountingSource source;
  ASSERT_TRUE((*loop)->Add(&source, -1).ok());
  (*loop)->SetDeadline(&source, Clock::now() + std::chrono::hours(1));
  (*loop)->RunOnce(std::chrono::nanoseconds(0));
  (*loop)->SetDeadline(&source, Clock::now() + std::chrono::milliseconds(20));
  (*loop)->RunOnce(std::chrono::nanoseconds(0));
  ASSERT_TRUE(ReadableWithin((*loop)->event_fd(), std::chrono::seconds(30)));
  (*loop)->RunOnce(std::chrono::nanoseconds(0));
  EXPECT_EQ(source.deadlines, 1);

  (*loop)->SetDeadline(&source, Clock::now() + std::chrono::milliseconds(20));
  (*loop)->RunOnce(std::chrono::nanoseconds(0));
  (*loop)->SetDeadline(&source, Clock::now() + std::chrono::hours(1));
  (*loop)->RunOnce(std::chrono::nanoseconds(0));
  // At most the one early wake-up: no deadline is due then, and the round
  // sets the timer for the hour, so the loop is quiet after it.
  if (ReadableWithin((*loop)->event_fd(), std::chrono::seconds(1))) {
    (*loop)->RunOnce(std::chrono::nanoseconds(0));
  }
  EXPECT_EQ(source.deadlines, 1);
  EXPECT_FALSE(
      ReadableWithin((*loop)->event_fd(), std::chrono::milliseconds(100)));
  (*loop)->Remove(&source);
}

}  // namespace
}  // namespace rpcrdma::runtime
