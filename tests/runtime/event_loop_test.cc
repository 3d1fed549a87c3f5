// The event loop under Channels and Servers (plugin/runtime): a loop told
// to stop while it is busy stops, whatever instant the request lands at.
#include "plugin/runtime/event_loop.h"

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

}  // namespace
}  // namespace rpcrdma::runtime
