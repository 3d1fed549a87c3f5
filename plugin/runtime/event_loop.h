// An event loop shared by many connections: one epoll set, per-source
// deadlines, tasks posted from other threads, and optional adaptive busy
// polling. Either it runs on a thread of its own, or the user drives it from
// their own event loop (event_fd() plus RunOnce()), which is how a Channel
// embeds in an existing program.
//
// Work is proportional to what is ready: epoll reports the sources whose
// descriptor is readable, deadlines sit in a heap, and nothing scans the
// idle sources. A task posted from another thread wakes the loop only when
// it sleeps (an eventfd write); from the loop's own thread it costs no
// system call.
#ifndef RPCRDMA_PLUGIN_RUNTIME_EVENT_LOOP_H_
#define RPCRDMA_PLUGIN_RUNTIME_EVENT_LOOP_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rpcrdma::runtime {

using Clock = std::chrono::steady_clock;

class EventLoop;

// Something a loop watches: a descriptor, a deadline, or both.
class Source {
 public:
  virtual ~Source() = default;
  // The descriptor given to EventLoop::Add was reported readable
  // (level-triggered: it is reported again while it stays readable).
  virtual void OnReadable() = 0;
  // The deadline given to EventLoop::ScheduleAt has come. The source
  // schedules its next one itself.
  virtual void OnDeadline() {}
  // Busy polling (busy_poll_us() > 0): looks for work without waiting;
  // true when it found and did some.
  virtual bool Spin() { return false; }
  // How long the loop may keep polling this source after it had work,
  // before it sleeps (0: never).
  virtual uint32_t busy_poll_us() const { return 0; }

 private:
  friend class EventLoop;
  struct Registration* registration_ = nullptr;  // the loop's, while added
};

// Whether a loop without a thread sets its timer (the timerfd that makes
// event_fd() readable when a deadline comes) again, armed for `armed`
// (Clock::time_point::max(): not armed) while the earliest deadline is now
// `next`: only for an earlier one. A later deadline (a connection's idle
// deadline moves on with each call it serves) or none leaves the timer as
// it is: it fires early at most once, and the round it wakes arms it for
// the deadline then earliest. This saves a timerfd_settime in most rounds.
bool TimerNeedsArming(Clock::time_point armed, Clock::time_point next);

class EventLoop {
 public:
  // A task whose captures fit two pointers is kept inline: posting it
  // allocates nothing (a std::function allocates for any capture that is
  // not trivially copyable, a weak_ptr's for one).
  using Task = absl::AnyInvocable<void()>;

  // With `own_thread` the loop runs on a thread it starts (named `name`);
  // otherwise whoever calls RunOnce() drives it.
  static absl::StatusOr<std::unique_ptr<EventLoop>> Create(bool own_thread,
                                                           std::string name);
  // Stops the thread (if any). Every source must have been removed.
  ~EventLoop();

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Watches `fd` (none when -1: deadlines only) for `events` (epoll's;
  // OnReadable reports any of them) for `source`, from any thread, without
  // waiting for the loop: `source` must be ready for its callbacks. `fd`
  // stays open until Remove.
  absl::Status Add(Source* source, int fd, uint32_t events = 0x001);
  // Changes the events watched for (any thread).
  void Modify(Source* source, uint32_t events);
  // Stops watching `source` (any thread). When it returns, no callback of
  // the source runs any more, and none is running (unless Remove was
  // called from that callback, which is allowed).
  void Remove(Source* source);
  // Loop thread only: `source`'s OnDeadline runs at `when` (none when
  // nullopt), replacing its previous deadline, earlier or later.
  void SetDeadline(Source* source, std::optional<Clock::time_point> when);

  // Runs `task` on the loop thread, soon (any thread; from the loop thread
  // itself it runs after the current callback, in this iteration).
  void Post(Task task);
  // Runs `task` on the loop thread and waits for it (at once when called
  // on the loop thread).
  void RunSync(absl::FunctionRef<void()> task);
  // True on the loop's thread (or while this thread drives a loop of its
  // own through RunOnce).
  bool InLoopThread() const;
  bool has_thread() const { return thread_.joinable(); }

  // Loops without a thread: readable when RunOnce has work (a source is
  // ready, a task was posted, a deadline came), and at most once early
  // after the earliest deadline moved later (TimerNeedsArming).
  int event_fd() const { return epoll_; }
  // Does the ready work, waiting for some at most `timeout` (zero: none).
  // Concurrent calls are serialised; a nested call (from a callback) does
  // nothing.
  void RunOnce(std::chrono::nanoseconds timeout);

  // Sources currently added (for tests and the runtime's statistics).
  size_t sources() const { return sources_.load(std::memory_order_relaxed); }

 private:
  EventLoop() = default;
  absl::Status Init(bool own_thread, std::string name);
  void ThreadMain();
  // One round: wait (up to `timeout`), dispatch, run tasks and deadlines.
  void Iterate(std::chrono::nanoseconds timeout);
  void RunTasks();
  void RunDeadlines(Clock::time_point now);
  std::chrono::nanoseconds TimeToNextDeadline(Clock::time_point now) const;
  void Unlink(Registration* r);
  void FreeRemoved();
  void HeapPlace(size_t i);
  void HeapUp(size_t i);
  void HeapDown(size_t i);
  void HeapErase(size_t i);
  void ArmTimerFd(Clock::time_point now);
  bool SpinBeforeSleep();  // true when it found work

  int epoll_ = -1;
  int wake_fd_ = -1;   // eventfd: a task was posted to a sleeping loop
  int timer_fd_ = -1;  // loops without a thread: the next deadline
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::thread::id> runner_{};
  std::mutex run_mu_;  // held while a thread runs an iteration

  static constexpr size_t kReservedTasks = 64;
  std::mutex tasks_mu_;
  std::vector<Task> tasks_;
  std::vector<Task> running_tasks_;  // loop thread: the batch being run
  bool sleeping_ = true;             // guarded by tasks_mu_

  // Loop thread only (or under run_mu_).
  std::vector<Registration*> timers_;  // a min-heap on their deadline
  std::vector<Registration*> removed_;
  std::vector<Registration*> hot_;  // had work this round (busy polling)
  uint32_t spin_limit_us_ = 0;      // adaptive, see SpinBeforeSleep
  Clock::time_point armed_for_ = Clock::time_point::max();
  std::atomic<size_t> sources_{0};
};

}  // namespace rpcrdma::runtime

#endif  // RPCRDMA_PLUGIN_RUNTIME_EVENT_LOOP_H_
