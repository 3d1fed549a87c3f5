// The Channel's reconnect schedule (channel.h, "Reconnect";
// plugin/api/reconnect_schedule.h), driven with a clock of the test's own.
#include "plugin/api/reconnect_schedule.h"

#include <chrono>

#include "gtest/gtest.h"

namespace rpcrdma::test {
namespace {

using api_internal::ReconnectSchedule;
using std::chrono::milliseconds;
using Clock = ReconnectSchedule::Clock;

TEST(ReconnectScheduleTest, TheFirstAttemptAfterALossIsAtOnce) {
  ReconnectSchedule schedule(milliseconds(500), milliseconds(100),
                             milliseconds(1000));
  const Clock::time_point lost = Clock::time_point() + std::chrono::hours(1);
  schedule.Lost(lost);
  EXPECT_TRUE(schedule.Due(lost));
  EXPECT_EQ(schedule.next_attempt(), lost);
}

TEST(ReconnectScheduleTest, FailedAttemptsWaitDoublingUpToTheMaximum) {
  ReconnectSchedule schedule(milliseconds(500), milliseconds(100),
                             milliseconds(1000));
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
  schedule.Lost(now);
  for (milliseconds expected :
       {milliseconds(100), milliseconds(200), milliseconds(400),
        milliseconds(800), milliseconds(1000), milliseconds(1000)}) {
    EXPECT_EQ(schedule.Failed(now), expected);
    EXPECT_FALSE(schedule.Due(now + expected - milliseconds(1)));
    now += expected;
    EXPECT_TRUE(schedule.Due(now));
  }
  // A new loss starts the backoff again from its initial value.
  schedule.Lost(now);
  EXPECT_EQ(schedule.Failed(now), milliseconds(100));
}

TEST(ReconnectScheduleTest, AnAttemptHasConnectTimeoutToBeAnswered) {
  ReconnectSchedule schedule(milliseconds(500), milliseconds(100),
                             milliseconds(1000));
  const Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
  schedule.Attempting(now);
  EXPECT_EQ(schedule.attempt_deadline(), now + milliseconds(500));
  EXPECT_EQ(schedule.connect_timeout(), milliseconds(500));
}

}  // namespace
}  // namespace rpcrdma::test
