// When a Channel tries to connect again after it lost its connection, and
// how long one attempt may take (channel.h, "Reconnect"): the first
// attempt at once, then after timeouts.reconnect_backoff_initial_ms,
// doubling up to timeouts.reconnect_backoff_max_ms while attempts fail;
// an attempt unanswered for timeouts.connect_ms has failed. Pure: the
// caller passes the time, so the schedule is tested without waiting.
#ifndef RPCRDMA_PLUGIN_API_RECONNECT_SCHEDULE_H_
#define RPCRDMA_PLUGIN_API_RECONNECT_SCHEDULE_H_

#include <algorithm>
#include <chrono>

namespace rpcrdma::api_internal {

class ReconnectSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  ReconnectSchedule() = default;
  ReconnectSchedule(std::chrono::milliseconds connect_timeout,
                    std::chrono::milliseconds backoff_initial,
                    std::chrono::milliseconds backoff_max)
      : connect_timeout_(connect_timeout),
        backoff_initial_(backoff_initial),
        backoff_max_(backoff_max),
        backoff_(backoff_initial) {}

  // The connection was lost (and has drained) at `now`: the next attempt
  // is at once, and the backoff starts again from its initial value.
  void Lost(Clock::time_point now) {
    backoff_ = backoff_initial_;
    next_attempt_ = now;
  }
  bool Due(Clock::time_point now) const { return next_attempt_ <= now; }
  Clock::time_point next_attempt() const { return next_attempt_; }

  // An attempt starts at `now`; it has failed if unanswered by
  // attempt_deadline().
  void Attempting(Clock::time_point now) {
    attempt_deadline_ = now + connect_timeout_;
  }
  Clock::time_point attempt_deadline() const { return attempt_deadline_; }
  std::chrono::milliseconds connect_timeout() const { return connect_timeout_; }

  // The attempt failed at `now`: returns how long until the next one,
  // which it schedules, and doubles the wait after that (up to the max).
  std::chrono::milliseconds Failed(Clock::time_point now) {
    const std::chrono::milliseconds wait = backoff_;
    next_attempt_ = now + wait;
    backoff_ = std::min(backoff_ * 2, backoff_max_);
    return wait;
  }

 private:
  std::chrono::milliseconds connect_timeout_{0};
  std::chrono::milliseconds backoff_initial_{0};
  std::chrono::milliseconds backoff_max_{0};
  std::chrono::milliseconds backoff_{0};  // before the attempt after next
  Clock::time_point next_attempt_;
  Clock::time_point attempt_deadline_;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_RECONNECT_SCHEDULE_H_
