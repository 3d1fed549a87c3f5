#include "plugin/api/connection_driver.h"

#include <utility>

namespace rpcrdma::api_internal {

ConnectionDriver::ConnectionDriver(Owner& owner, runtime::EventLoop* loop,
                                   uint32_t busy_poll_us)
    : owner_(owner), loop_(loop), busy_poll_us_(busy_poll_us) {}

std::shared_ptr<ReplyTarget> ConnectionDriver::SharedReplyTarget() {
  // Shares the owner's lifetime: a Responder keeps the owner alive.
  return std::shared_ptr<ReplyTarget>(owner_.WeakOwner().lock(), this);
}

std::weak_ptr<VersionTwoTarget> ConnectionDriver::WeakVersionTwoTarget() {
  return std::shared_ptr<VersionTwoTarget>(owner_.WeakOwner().lock(), this);
}

void ConnectionDriver::CollectUpcalls(DriverOutcomes& o) {
  if (conn_ == nullptr || !conn_->has_upcalls()) return;
  std::vector<engine::Action>& upcalls = upcall_scratch_;
  conn_->TakeUpcalls(upcalls);
  for (engine::Action& a : upcalls) {
    if (v2_.Collect(a, connection_id(), generation_, WeakVersionTwoTarget(),
                    o.jobs)) {
      continue;
    }
    if (auto* r = std::get_if<engine::ReplySent>(&a)) {
      if (auto released = replies_.Sent(*conn_, r->call)) {
        o.released.push_back(std::move(*released));
      }
    }
    owner_.OnUpcall(a, o);
  }
}

std::optional<Clock::time_point> ConnectionDriver::PollAfterOperation(
    DriverOutcomes& o) {
  conn_->Poll();  // what this operation's own posts completed
  CollectUpcalls(o);
  std::optional<Clock::time_point> due = conn_->poll_deadline();
  owner_.UpdateInterest();
  return due;
}

bool ConnectionDriver::CollectAfterCancel(DriverOutcomes& o) {
  PollAfterOperation(o);
  return conn_->engine().calls_abandoned() > 0;
}

bool ConnectionDriver::Spin() {
  DriverOutcomes o;
  bool found = false;
  {
    // A thread sending a call or a reply holds the lock for a moment: the
    // spin tries again rather than sleep on the lock (which would cost the
    // very wake-up the spin is there to save).
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    if (!Up()) return false;
    found = conn_->Spin();
    CollectUpcalls(o);
    owner_.UpdateInterest();
  }
  RunOutcomes(o);
  return found;
}

void ConnectionDriver::Work(bool readable) {
  // Retiring may drop the last other reference to the owner; this one
  // keeps it alive until the round is over.
  std::shared_ptr<Owner> keep = owner_.WeakOwner().lock();
  DriverOutcomes o;
  std::optional<Clock::time_point> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!registered_) return;
    next = owner_.Drive(Clock::now(), readable, o);
    owner_.UpdateInterest();
    // Published under the lock: an operation after this round is seen by
    // WakeBy against it, or by the next round's Drive.
    scheduled_ns_.store(next ? next->time_since_epoch().count()
                             : std::numeric_limits<int64_t>::max());
  }
  const bool retired = o.retired;
  RunOutcomes(o);
  if (retired) return;
  // Exactly the next time the owner needs the loop: a deadline left
  // earlier would wake the loop for nothing.
  loop_->SetDeadline(this, next);
}

void ConnectionDriver::WakeBy(Clock::time_point when) {
  if (when.time_since_epoch().count() >= scheduled_ns_.load()) return;
  PostWork();
}

void ConnectionDriver::PostWork() {
  // One weak pointer that shares the owner's lifetime and points at this
  // driver: the task fits the loop's inline storage, so that the work a
  // blocking call leaves to the loop after each reply allocates nothing.
  if (work_posted_.exchange(true)) return;  // that round will do
  std::weak_ptr<ConnectionDriver> weak =
      std::shared_ptr<ConnectionDriver>(owner_.WeakOwner().lock(), this);
  loop_->Post([weak = std::move(weak)] {
    if (std::shared_ptr<ConnectionDriver> self = weak.lock()) {
      // Cleared first: what is asked after this point gets a round of
      // its own.
      self->work_posted_.store(false);
      self->Work(/*readable=*/false);
    }
  });
}

void ConnectionDriver::RunOutcomes(DriverOutcomes& o) {
  // The order is documented in connection_driver.h.
  for (auto& [done, result] : o.completions) done(std::move(result));
  for (HandlerJob& job : o.calls) owner_.RunHandler(job);
  for (std::function<void()>& job : o.jobs) job();
  for (absl::AnyInvocable<void()>& notice : o.notices) notice();
  // o.released and o.dropped release their replies as `o` goes.
}

void ConnectionDriver::Defer(DriverOutcomes o) {
  o.retired = false;  // a round's only (Work)
  if (o.empty()) return;
  // The owner stays alive until they ran: every callback runs once.
  auto outcomes = std::make_shared<DriverOutcomes>(std::move(o));
  loop_->Post([keep = owner_.WeakOwner().lock(), this, outcomes] {
    RunOutcomes(*outcomes);
  });
}

absl::Status ConnectionDriver::OnConnection(
    uint64_t generation, absl::FunctionRef<absl::Status(Connection&)> op) {
  DriverOutcomes o;
  absl::Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || !Up()) {
      return owner_.Refuses(Owner::Use::kVersionTwoAnswer);
    }
    s = op(*conn_);
    conn_->Poll();
    CollectUpcalls(o);
    owner_.UpdateInterest();
  }
  Defer(std::move(o));
  return s;
}

absl::Status ConnectionDriver::SendReply(uint64_t generation,
                                         engine::CallId call,
                                         HandlerReply reply,
                                         Clock::time_point delivered_at) {
  return Answer(generation, call, std::move(reply), delivered_at, std::nullopt);
}

void ConnectionDriver::SendDroppedReply(uint64_t generation,
                                        engine::CallId call, uint32_t xid,
                                        HandlerReply reply,
                                        Clock::time_point delivered_at) {
  // A destructor's: nobody to tell of a refusal.
  (void)Answer(generation, call, std::move(reply), delivered_at, xid);
}

absl::Status ConnectionDriver::Answer(uint64_t generation, engine::CallId call,
                                      HandlerReply reply,
                                      Clock::time_point delivered_at,
                                      std::optional<uint32_t> dropped_xid) {
  DriverOutcomes o;  // a refused reply, released here
  DriverOutcomes deferred;
  absl::Status st;
  std::optional<Clock::time_point> wake;
  bool budget_released = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status gone = owner_.Refuses(Owner::Use::kReply); !gone.ok()) {
      o.released.emplace_back(std::move(reply));
      st = gone;
    } else if (generation != generation_ || !Up()) {
      // Its connection is gone: the reply is dropped.
      o.released.emplace_back(std::move(reply));
    } else {
      const uint64_t releases = owner_.budget_releases();
      std::optional<ReleasingReply> refused;
      st = replies_.Send(*conn_, call, std::move(reply), delivered_at, refused);
      if (dropped_xid && st.ok() && !refused) {
        conn_->LogDroppedResponder(*dropped_xid);
      }
      if (refused) o.released.push_back(std::move(*refused));
      wake = PollAfterOperation(deferred);
      // An ERR_CHUNK answer ends the call at once and frees its memory,
      // which calls of other connections may be waiting for.
      budget_released = owner_.budget_releases() != releases;
    }
  }
  RunOutcomes(o);
  Defer(std::move(deferred));
  if (budget_released) WakeBy(Clock::now());
  if (wake) WakeBy(*wake);
  return st;
}

}  // namespace rpcrdma::api_internal
