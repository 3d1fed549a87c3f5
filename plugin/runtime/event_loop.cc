#include "plugin/runtime/event_loop.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::runtime {

// What the loop keeps per source. Freed only once nothing can name it any
// more: not in the epoll set, and not in a batch of events being
// dispatched. Its deadline is its place in the loop's heap (an indexed
// heap: moving a deadline leaves nothing stale behind).
struct Registration {
  Source* source = nullptr;
  int fd = -1;
  uint32_t events = EPOLLIN;
  bool removed = false;
  bool hot = false;  // in hot_
  Clock::time_point due = Clock::time_point::max();
  size_t heap_index = kNotInHeap;
  static constexpr size_t kNotInHeap = static_cast<size_t>(-1);
};

namespace {

// epoll data of the loop's own descriptors.
char kWakeTag;
char kTimerTag;

timespec ToTimespec(std::chrono::nanoseconds d) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(d.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(d.count() % 1000000000);
  return ts;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create(bool own_thread,
                                                             std::string name) {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  if (absl::Status s = loop->Init(own_thread, std::move(name)); !s.ok()) {
    return s;
  }
  return loop;
}

absl::Status EventLoop::Init(bool own_thread, std::string name) {
  // Room for the tasks a busy moment piles up (a blocking call's thread
  // posts one after each reply while the loop is descheduled): a Post
  // then allocates nothing; the two batches swap, so both get it.
  tasks_.reserve(kReservedTasks);
  running_tasks_.reserve(kReservedTasks);
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!own_thread) {
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  }
  if (epoll_ < 0 || wake_fd_ < 0 || (!own_thread && timer_fd_ < 0)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "event loop: epoll/eventfd/timerfd: ", std::strerror(errno)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &kWakeTag;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_fd_, &ev);
  if (timer_fd_ >= 0) {
    ev.data.ptr = &kTimerTag;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, timer_fd_, &ev);
  }
  if (own_thread) {
    thread_ = std::thread([this, name = std::move(name)] {
      // The name shows in top and gdb (at most 15 characters).
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      ThreadMain();
    });
  }
  return absl::OkStatus();
}

EventLoop::~EventLoop() {
  if (thread_.joinable()) {
    // The wake-up is written whether or not the loop sleeps now: it may be
    // about to, past its last look at stopping_ (Iterate checks again
    // under tasks_mu_ too).
    stopping_.store(true);
    const uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof one);
    (void)n;
    thread_.join();
  }
  FreeRemoved();
  for (int fd : {epoll_, wake_fd_, timer_fd_}) {
    if (fd >= 0) close(fd);
  }
}

void EventLoop::ThreadMain() {
  runner_.store(std::this_thread::get_id());
  std::lock_guard<std::mutex> lock(run_mu_);
  while (!stopping_.load(std::memory_order_relaxed)) {
    Iterate(std::chrono::hours(1));
  }
  RunTasks();
}

bool EventLoop::InLoopThread() const {
  return runner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
}

absl::Status EventLoop::Add(Source* source, int fd, uint32_t events) {
  // Directly from any thread: epoll_ctl is thread-safe, and the source is
  // complete before its descriptor can be reported.
  auto* r = new Registration;
  r->source = source;
  r->fd = fd;
  r->events = events;
  source->registration_ = r;
  if (fd >= 0) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = r;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      source->registration_ = nullptr;
      delete r;
      return absl::ResourceExhaustedError(
          absl::StrCat("event loop: epoll_ctl: ", std::strerror(errno)));
    }
  }
  sources_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

void EventLoop::Modify(Source* source, uint32_t events) {
  Registration* r = source->registration_;
  if (r == nullptr || r->fd < 0 || r->events == events) return;
  r->events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = r;
  epoll_ctl(epoll_, EPOLL_CTL_MOD, r->fd, &ev);
}

void EventLoop::Remove(Source* source) {
  RunSync([&] {
    if (source->registration_ != nullptr) Unlink(source->registration_);
  });
}

void EventLoop::Unlink(Registration* r) {
  if (r->removed) return;
  if (r->heap_index != Registration::kNotInHeap) HeapErase(r->heap_index);
  if (r->fd >= 0) epoll_ctl(epoll_, EPOLL_CTL_DEL, r->fd, nullptr);
  r->removed = true;
  r->source->registration_ = nullptr;
  r->source = nullptr;
  removed_.push_back(r);
  sources_.fetch_sub(1, std::memory_order_relaxed);
}

void EventLoop::FreeRemoved() {
  std::erase_if(hot_, [](Registration* r) { return r->removed; });
  for (Registration* r : removed_) delete r;
  removed_.clear();
}

// The heap of deadlines: timers_[0] is the earliest; each registration
// knows its index, so a deadline moves or goes in O(log n).
void EventLoop::HeapPlace(size_t i) { timers_[i]->heap_index = i; }

void EventLoop::HeapUp(size_t i) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (timers_[parent]->due <= timers_[i]->due) break;
    std::swap(timers_[parent], timers_[i]);
    HeapPlace(i);
    i = parent;
  }
  HeapPlace(i);
}

void EventLoop::HeapDown(size_t i) {
  while (true) {
    const size_t left = 2 * i + 1;
    if (left >= timers_.size()) break;
    size_t least = left;
    if (left + 1 < timers_.size() &&
        timers_[left + 1]->due < timers_[left]->due) {
      least = left + 1;
    }
    if (timers_[i]->due <= timers_[least]->due) break;
    std::swap(timers_[i], timers_[least]);
    HeapPlace(i);
    i = least;
  }
  HeapPlace(i);
}

void EventLoop::HeapErase(size_t i) {
  Registration* gone = timers_[i];
  gone->heap_index = Registration::kNotInHeap;
  gone->due = Clock::time_point::max();
  Registration* last = timers_.back();
  timers_.pop_back();
  if (i == timers_.size()) return;
  timers_[i] = last;
  HeapPlace(i);
  HeapDown(i);
  HeapUp(last->heap_index);
}

void EventLoop::SetDeadline(Source* source,
                            std::optional<Clock::time_point> when) {
  Registration* r = source->registration_;
  if (r == nullptr) return;
  if (!when) {
    if (r->heap_index != Registration::kNotInHeap) HeapErase(r->heap_index);
    return;
  }
  if (r->heap_index == Registration::kNotInHeap) {
    r->due = *when;
    timers_.push_back(r);
    HeapUp(timers_.size() - 1);
    return;
  }
  const bool earlier = *when < r->due;
  r->due = *when;
  if (earlier) {
    HeapUp(r->heap_index);
  } else {
    HeapDown(r->heap_index);
  }
}

void EventLoop::Post(Task task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    tasks_.push_back(std::move(task));
    wake = sleeping_;
    sleeping_ = false;
  }
  if (wake) {
    const uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof one);
    (void)n;
  }
}

void EventLoop::RunSync(absl::FunctionRef<void()> task) {
  if (InLoopThread()) {
    task();
    return;
  }
  // Whoever runs first claims the task: the loop (it was posted), or, on a
  // loop without a thread, this thread once no other thread is running it
  // (nobody may be driving the loop at all).
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool claimed = false;
    bool done = false;
  };
  auto shared = std::make_shared<Shared>();
  auto claim = [shared] {
    std::lock_guard<std::mutex> lock(shared->mu);
    return !std::exchange(shared->claimed, true);
  };
  Post([shared, claim, &task] {
    if (!claim()) return;
    task();
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->done = true;
    shared->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mu);
  while (!shared->done) {
    if (thread_.joinable()) {
      shared->cv.wait(lock);
      continue;
    }
    lock.unlock();
    {
      std::unique_lock<std::mutex> run(run_mu_, std::try_to_lock);
      if (run.owns_lock()) {
        runner_.store(std::this_thread::get_id());
        RunTasks();  // the posted task among them, in order
        runner_.store(std::thread::id());
      }
    }
    lock.lock();
    if (!shared->done) {
      shared->cv.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
}

void EventLoop::RunOnce(std::chrono::nanoseconds timeout) {
  if (thread_.joinable() || InLoopThread()) return;
  std::unique_lock<std::mutex> lock(run_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  runner_.store(std::this_thread::get_id());
  Iterate(timeout);
  runner_.store(std::thread::id());
}

void EventLoop::RunTasks() {
  // Tasks posted while running run in the same call, a bounded number of
  // rounds so that a task reposting itself cannot starve the sources.
  for (int round = 0; round < 4; ++round) {
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (tasks_.empty()) return;
      running_tasks_.swap(tasks_);
    }
    for (Task& task : running_tasks_) task();
    running_tasks_.clear();
  }
}

std::chrono::nanoseconds EventLoop::TimeToNextDeadline(
    Clock::time_point now) const {
  if (timers_.empty()) return std::chrono::nanoseconds::max();
  return std::max(std::chrono::nanoseconds(0), timers_.front()->due - now);
}

void EventLoop::RunDeadlines(Clock::time_point now) {
  while (!timers_.empty() && timers_.front()->due <= now) {
    Registration* r = timers_.front();
    HeapErase(0);
    r->source->OnDeadline();
  }
}

bool TimerNeedsArming(Clock::time_point armed, Clock::time_point next) {
  return next < armed;
}

void EventLoop::ArmTimerFd(Clock::time_point now) {
  const Clock::time_point next =
      timers_.empty() ? Clock::time_point::max() : timers_.front()->due;
  if (!TimerNeedsArming(armed_for_, next)) return;
  armed_for_ = next;
  itimerspec spec{};
  if (next != Clock::time_point::max()) {
    // At least a nanosecond: an all-zero value would disarm the timer.
    spec.it_value = ToTimespec(std::max(
        std::chrono::nanoseconds(1),
        std::chrono::duration_cast<std::chrono::nanoseconds>(next - now)));
  }
  timerfd_settime(timer_fd_, 0, &spec, nullptr);
}

// Adaptive busy polling: after a round with work, a loop whose sources ask
// for it keeps polling them (without system calls on verbs: the completion
// queue is read in user space) for up to their busy_poll_us before it
// sleeps, the way perftest waits; while the spins keep finding work the
// loop does not sleep at all. A spin that finds nothing halves the next
// one, so a connection gone quiet soon costs no CPU, and the first spin
// that finds work restores the whole budget.
bool EventLoop::SpinBeforeSleep() {
  uint32_t budget_us = 0;
  for (Registration* r : hot_) {
    if (!r->removed) budget_us = std::max(budget_us, r->source->busy_poll_us());
  }
  if (budget_us == 0) return false;
  if (spin_limit_us_ == 0) spin_limit_us_ = budget_us;
  const Clock::time_point until =
      Clock::now() + std::chrono::microseconds(spin_limit_us_);
  while (Clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (!tasks_.empty()) return true;
    }
    bool found = false;
    for (size_t i = 0; i < hot_.size(); ++i) {
      Registration* r = hot_[i];
      if (!r->removed && r->source->Spin()) found = true;
    }
    if (found) {
      spin_limit_us_ = budget_us;
      return true;
    }
  }
  spin_limit_us_ = std::max<uint32_t>(spin_limit_us_ / 2, 1);
  return false;
}

void EventLoop::Iterate(std::chrono::nanoseconds timeout) {
  RunTasks();
  RunDeadlines(Clock::now());
  // Work found by spinning: the hot sources stay hot and the loop only
  // looks at its other descriptors (no sleep) before spinning again.
  const bool spun_into_work = SpinBeforeSleep();
  if (!spun_into_work) {
    for (Registration* r : hot_) r->hot = false;
    hot_.clear();
  }
  Clock::time_point now = Clock::now();
  timeout = std::min(timeout, TimeToNextDeadline(now));
  if (spun_into_work) timeout = std::chrono::nanoseconds(0);
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    if (!tasks_.empty() || stopping_.load()) {
      timeout = std::chrono::nanoseconds(0);
    } else if (timeout.count() > 0) {
      sleeping_ = true;
    }
  }
  std::array<epoll_event, 64> events;
  const timespec ts = ToTimespec(timeout);
  const bool forever = timeout == std::chrono::nanoseconds::max();
  int n = epoll_pwait2(epoll_, events.data(), static_cast<int>(events.size()),
                       forever ? nullptr : &ts, nullptr);
  {
    std::lock_guard<std::mutex> lock(tasks_mu_);
    sleeping_ = false;
  }
  for (int i = 0; i < n; ++i) {
    void* tag = events[static_cast<size_t>(i)].data.ptr;
    if (tag == &kWakeTag) {
      uint64_t value;
      ssize_t got = read(wake_fd_, &value, sizeof value);
      (void)got;
      continue;
    }
    if (tag == &kTimerTag) {
      uint64_t expirations;
      ssize_t got = read(timer_fd_, &expirations, sizeof expirations);
      (void)got;
      armed_for_ = Clock::time_point::max();
      continue;
    }
    auto* r = static_cast<Registration*>(tag);
    if (r->removed) continue;  // removed earlier in this batch
    r->source->OnReadable();
    if (!r->removed && r->source != nullptr && !r->hot &&
        r->source->busy_poll_us() > 0) {
      r->hot = true;
      hot_.push_back(r);
    }
  }
  now = Clock::now();
  RunDeadlines(now);
  RunTasks();
  FreeRemoved();
  if (timer_fd_ >= 0) ArmTimerFd(now);
  if (!thread_.joinable()) {
    // A loop driven by its user is asleep between RunOnce calls: a task
    // posted meanwhile must make event_fd() readable.
    std::lock_guard<std::mutex> lock(tasks_mu_);
    sleeping_ = tasks_.empty();
    if (!sleeping_) {
      const uint64_t one = 1;
      ssize_t wrote = write(wake_fd_, &one, sizeof one);
      (void)wrote;
    }
  }
}

}  // namespace rpcrdma::runtime
