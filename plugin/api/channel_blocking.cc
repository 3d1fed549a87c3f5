// Channel's synchronous calls (BlockingCall, StartCall/Await): the waiting
// thread reads the connection itself while the loop leaves it parked, so
// that a reply wakes the thread that waits for it and no other.
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "plugin/api/channel_core.h"
#include "plugin/api/runtime_loops.h"

namespace rpcrdma::api_internal {

namespace {

// How long the reading thread sleeps in poll() at most: a guard, since
// every completion and every change it must notice wakes it
// (WakeBlockingCalls), besides the endpoint's own descriptor.
constexpr int kDefaultReadBoundMs = 20;
std::atomic<int> read_bound_ms{kDefaultReadBoundMs};

}  // namespace

void SetBlockingReadBoundForTesting(
    std::optional<std::chrono::milliseconds> bound) {
  read_bound_ms.store(bound ? static_cast<int>(bound->count())
                            : kDefaultReadBoundMs);
}

void ChannelCore::BlockingCompletion::operator()(
    absl::StatusOr<Reply> result) const {
  std::lock_guard<std::mutex> lock(core->driver_.mu());
  slot->result = std::move(result);
  slot->done = true;
  core->WakeBlockingCalls();
}

void ChannelCore::WakeBlockingCalls() {
  // The loop may complete a blocking call (it read the reply before the
  // caller's thread took the reading over, a deadline passed, the
  // connection was lost) while the reading thread sleeps in poll() on a
  // descriptor that has nothing more to say.
  if (reading_for_blocking_calls_ &&
      blocking_reader_ != std::this_thread::get_id()) {
    waking_reader_->Signal();
  }
  blocking_cv_.notify_all();
}

absl::StatusOr<Reply> ChannelCore::BlockingCall(CallRequest request) {
  if (driver_.loop()->InLoopThread()) {
    return absl::FailedPreconditionError(
        "channel: BlockingCall from a callback of the Channel's own loop");
  }
  BlockingSlot slot;
  Submit(std::move(request), BlockingCompletion{this, &slot},
         /*blocking=*/true);
  return WaitForBlockingSlot(slot);
}

Channel::CallId ChannelCore::StartCall(CallRequest request) {
  // The slot exists before Submit, which may complete the call at once.
  std::unique_ptr<BlockingSlot> slot;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    if (!spare_slots_.empty()) {
      slot = std::move(spare_slots_.back());
      spare_slots_.pop_back();
    }
  }
  if (slot == nullptr) slot = std::make_unique<BlockingSlot>();
  BlockingSlot* const filled = slot.get();
  const Channel::CallId id = Submit(
      std::move(request), BlockingCompletion{this, filled}, /*blocking=*/true);
  std::lock_guard<std::mutex> lock(driver_.mu());
  started_.emplace(id, std::move(slot));
  return id;
}

absl::StatusOr<Reply> ChannelCore::Await(Channel::CallId id) {
  if (driver_.loop()->InLoopThread()) {
    return absl::FailedPreconditionError(
        "channel: Await from a callback of the Channel's own loop");
  }
  BlockingSlot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    auto it = started_.find(id);
    if (it == started_.end() || it->second->awaited) {
      return absl::NotFoundError(
          absl::StrCat("channel: call ", id.value(),
                       " was not started by StartCall, or is "
                       "already awaited"));
    }
    slot = it->second.get();
    slot->awaited = true;
  }
  absl::StatusOr<Reply> result = WaitForBlockingSlot(*slot);
  std::lock_guard<std::mutex> lock(driver_.mu());
  auto it = started_.find(id);
  if (spare_slots_.size() < kMostSpareSlots) {
    *it->second = BlockingSlot();
    spare_slots_.push_back(std::move(it->second));
  }
  started_.erase(it);
  return result;
}

absl::StatusOr<Reply> ChannelCore::WaitForBlockingSlot(BlockingSlot& slot) {
  std::unique_lock<std::mutex> lock(driver_.mu());
  if (!RuntimeAccess::Loops(*runtime_).threads()) {
    // A runtime its user drives: this thread drives it while it waits.
    while (!slot.done) {
      lock.unlock();
      runtime_->RunReady(std::chrono::milliseconds(20));
      lock.lock();
    }
  }
  while (!slot.done) {
    if (!reading_for_blocking_calls_ && conn_watch_ != nullptr &&
        driver_.conn() != nullptr && !driver_.conn()->disconnected() &&
        !shutting_down_) {
      ReadForBlockingCalls(lock, slot);
      continue;
    }
    // Another blocking call reads (it wakes this one when its call is
    // done, or hands the reading over), or the loop reconnects.
    blocking_cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  // Work the reads left delayed (the soft fabric's acknowledgement of the
  // reply, which completes the server's Send and returns the memory it
  // lent) is the loop's now: it does not watch a parked connection.
  const std::optional<Clock::time_point> due =
      driver_.conn() != nullptr ? driver_.conn()->poll_deadline()
                                : std::nullopt;
  lock.unlock();
  if (due) driver_.WakeBy(*due);
  return *std::move(slot.result);
}

void ChannelCore::ReadForBlockingCalls(std::unique_lock<std::mutex>& lock,
                                       const BlockingSlot& slot) {
  const runtime::ThreadWake& wake = runtime::ThreadWake::ForThisThread();
  reading_for_blocking_calls_ = true;
  blocking_reader_ = std::this_thread::get_id();
  waking_reader_ = &wake;
  Connection* const conn = driver_.conn().get();
  runtime::FdWatch* const watch = conn_watch_.get();
  driver_.loop()->Modify(watch, 0);  // (if not parked) the loop stops watching
  while (!slot.done && driver_.conn().get() == conn && !conn->disconnected()) {
    // With busy polling configured the waiting thread polls the connection
    // itself first, the way perftest waits for its completion.
    if (driver_.busy_poll_us() > 0 && SpinForBlockingCall(lock, conn)) {
      RunBlockingOutcomes(lock);
      continue;
    }
    if (driver_.conn().get() != conn || slot.done) continue;
    const int fd = conn->endpoint().event_fd();
    const uint32_t events = conn->endpoint().event_fd_events();
    // Bounded, so that the reading thread looks again even if a change
    // were not signalled (a guard), and no later than the work the
    // endpoint holds back (fabric.h poll_deadline: the soft fabric's
    // coalesced acknowledgements, which the peer may be waiting for).
    int timeout_ms = read_bound_ms.load(std::memory_order_relaxed);
    const std::optional<Clock::time_point> due = conn->poll_deadline();
    if (due.has_value()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(*due - Clock::now());
      timeout_ms =
          static_cast<int>(std::clamp<int64_t>(left.count(), 0, timeout_ms));
    }
    lock.unlock();
    pollfd p[2] = {{fd,
                    static_cast<short>(((events & EPOLLIN) ? POLLIN : 0) |
                                       ((events & EPOLLOUT) ? POLLOUT : 0)),
                    0},
                   {wake.fd(), POLLIN, 0}};
    const int polled = poll(p, wake.fd() >= 0 ? 2 : 1, timeout_ms);
    const bool ready = polled > 0 && p[0].revents != 0;
    // Signalled: the loop completed a call or changed the connection; the
    // conditions above say which.
    if (polled > 0 && p[1].revents != 0) wake.Drain();
    lock.lock();
    if (driver_.conn().get() != conn || (!ready && !due.has_value())) continue;
    conn->Poll(/*readable=*/ready);
    RunBlockingOutcomes(lock);
  }
  reading_for_blocking_calls_ = false;
  waking_reader_ = nullptr;
  // Parked: the loop keeps not watching until a call that needs it. Not
  // with a backward handler, whose calls may come at any time, nor in
  // version two, whose peer may send property and optional messages at
  // any time (draft-04 §5.3, §4.1), some awaiting this side's answer.
  parked_for_blocking_calls_ =
      backward_handler_ == nullptr &&
      (driver_.conn() == nullptr ||
       driver_.conn()->engine().version() != wire::kRpcRdmaVersion2);
  if (driver_.conn().get() == conn && conn_watch_.get() == watch)
    UpdateInterest();
  // Whoever waits takes the reading over.
  blocking_cv_.notify_all();
}

// Polls `conn` without sleeping for up to busy_poll_us; true when that
// found work (left for RunBlockingOutcomes).
bool ChannelCore::SpinForBlockingCall(std::unique_lock<std::mutex>& lock,
                                      Connection* conn) {
  const Clock::time_point until =
      Clock::now() + std::chrono::microseconds(driver_.busy_poll_us());
  do {
    if (conn->Spin()) return true;
    // Other threads may be waiting for the lock to send their calls.
    lock.unlock();
    lock.lock();
    if (driver_.conn().get() != conn || conn->disconnected()) return false;
  } while (Clock::now() < until);
  return false;
}

// After the waiting thread polled `conn`: blocking calls' completions only
// fill their slots and run here; the rest (other callbacks, backward calls)
// belongs to the loop.
void ChannelCore::RunBlockingOutcomes(std::unique_lock<std::mutex>& lock) {
  Outcomes o;
  driver_.CollectUpcalls(o);
  Outcomes mine;
  for (auto it = o.completions.begin(); it != o.completions.end();) {
    if (it->first.target<BlockingCompletion>() != nullptr) {
      mine.completions.push_back(std::move(*it));
      it = o.completions.erase(it);
    } else {
      ++it;
    }
  }
  lock.unlock();
  driver_.RunOutcomes(mine);
  driver_.Defer(std::move(o));
  lock.lock();
}

}  // namespace rpcrdma::api_internal
