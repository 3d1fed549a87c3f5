// The machinery every owner of a connection shares, a Channel's
// (ChannelCore) and a Server's (ServerConnection): the lock and the
// connection it guards, the rounds of work on the owner's event loop, busy
// polling, the hand-over of what a round produced for the user once the lock
// is released, replies sent by Responders (ReplyTarget), and the operations of
// version two (VersionTwoTarget). What differs between the owners (what a
// round does, what an upcall means, where handlers run) the owner supplies
// through ConnectionDriver::Owner.
//
// Concurrency: one mutex, mu(), guards the connection and the owner's state.
// The loop thread takes it for readiness and deadlines; other threads take it
// to send calls or replies. Whatever a round produces for the user runs after
// it is released (RunOutcomes), in the one order documented there.
#ifndef RPCRDMA_PLUGIN_API_CONNECTION_DRIVER_H_
#define RPCRDMA_PLUGIN_API_CONNECTION_DRIVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "plugin/api/connection.h"
#include "plugin/api/reply_target.h"
#include "plugin/api/version_two_user.h"
#include "plugin/runtime/event_loop.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/responder.h"

namespace rpcrdma::api_internal {

// A call served by a handler: what a loop or a worker runs.
struct HandlerJob {
  const CallHandler* handler = nullptr;
  IncomingCall call;
  std::optional<Responder> responder;
};

// What a round of work leaves to run once the lock is released.
struct DriverOutcomes {
  using Completion = std::function<void(absl::StatusOr<Reply>)>;
  absl::InlinedVector<std::pair<Completion, absl::StatusOr<Reply>>, 4>
      completions;
  absl::InlinedVector<HandlerJob, 4> calls;
  absl::InlinedVector<ReleasingReply, 4> released;
  std::vector<ReleasingReply> dropped;  // a lost connection's replies
  // Version two's handlers and decisions (version_two_user.h).
  std::vector<std::function<void()>> jobs;
  // The owner's own reports (a Server's connection events, and the memory
  // a round released), run last. Inline, as are their small captures: a
  // Server reports released memory after every call.
  absl::InlinedVector<absl::AnyInvocable<void()>, 2> notices;
  // The owner left its loop this round: it asks for no next deadline.
  bool retired = false;
  bool empty() const {
    return completions.empty() && calls.empty() && released.empty() &&
           dropped.empty() && jobs.empty() && notices.empty() && !retired;
  }
};

class ConnectionDriver final : public runtime::Source,
                               public ReplyTarget,
                               public VersionTwoTarget {
 public:
  // What a ChannelCore or a ServerConnection does its own way.
  class Owner {
   public:
    virtual ~Owner() = default;
    // Keeps the owner (and so its driver) alive while posted work waits.
    virtual std::weak_ptr<Owner> WeakOwner() = 0;
    // With mu() held: one round of the loop's work; returns when to run
    // again at the latest.
    virtual std::optional<Clock::time_point> Drive(Clock::time_point now,
                                                   bool readable,
                                                   DriverOutcomes& o) = 0;
    // With mu() held: an upcall that is not version two's. ReplySent has
    // already released its reply.
    virtual void OnUpcall(engine::Action& action, DriverOutcomes& o) = 0;
    // With mu() held: the loop waits for what the endpoints now wait for.
    virtual void UpdateInterest() = 0;
    // Outside the lock: hands `job` to its handler.
    virtual void RunHandler(HandlerJob& job) = 0;
    // With mu() held: why a user's operation cannot have the connection,
    // OK when it can. kReply: FAILED_PRECONDITION once the owner is gone (a
    // reply for a gone connection is dropped silently, without asking);
    // kVersionTwoOperation: whether one may start; kVersionTwoAnswer: the
    // error for a handler's answer whose connection is gone (asked only
    // then).
    enum class Use { kReply, kVersionTwoOperation, kVersionTwoAnswer };
    virtual absl::Status Refuses(Use use) const = 0;
    // With mu() held: a counter that moves when reassembly memory shared
    // with other connections is released (the Server's), 0 if none is.
    virtual uint64_t budget_releases() const { return 0; }
  };

  ConnectionDriver(Owner& owner, runtime::EventLoop* loop,
                   uint32_t busy_poll_us = 0);

  // The state it guards, for the owner.
  std::mutex& mu() const { return mu_; }
  std::unique_ptr<Connection>& conn() { return conn_; }
  const std::unique_ptr<Connection>& conn() const { return conn_; }
  bool Up() const { return conn_ != nullptr && !conn_->disconnected(); }
  // Whether it is added to the loop (mu() held).
  bool registered() const { return registered_; }
  void set_registered(bool registered) { registered_ = registered; }
  // Tells a Channel's connections apart (a Server's connection has one,
  // generation 0); responders carry it back (mu() held).
  uint64_t generation() const { return generation_; }
  uint64_t NextGeneration() { return ++generation_; }
  RepliesInFlight& replies() { return replies_; }
  VersionTwoUser& version_two() { return v2_; }
  void set_busy_poll_us(uint32_t us) { busy_poll_us_ = us; }
  runtime::EventLoop* loop() const { return loop_; }
  void set_loop(runtime::EventLoop* loop) { loop_ = loop; }

  // The connection as the user's handlers see it (<rpcrdma/ids.h>), set by
  // the owner: a Server the id it gave the connection, a Channel the
  // connection's generation (one more per reconnect).
  void set_connection_id(uint64_t id) { connection_id_ = ConnectionId(id); }
  ConnectionId connection_id() const { return connection_id_; }
  // mu() held: takes the connection's upcalls into `o`.
  void CollectUpcalls(DriverOutcomes& o);
  // mu() held: what the owner's own operation on the connection completed,
  // into `o`; returns when the connection must be polled again.
  std::optional<Clock::time_point> PollAfterOperation(DriverOutcomes& o);
  // mu() held, after the owner cancelled a call on the connection: the
  // outcome into `o`, as PollAfterOperation. True when cancelled calls now
  // hold credits (RFC 8166 §3.3.1): the owner then wakes the loop, once
  // the lock is released, to apply the abandoned-call rule.
  bool CollectAfterCancel(DriverOutcomes& o);

  // Loop thread: a round of work and its outcomes, then the next deadline.
  void Work(bool readable);
  // Asks the loop to look again by `when` (any thread).
  void WakeBy(Clock::time_point when);
  // Asks the loop for a round now (any thread).
  void PostWork();
  // Runs `o` outside the lock, in this order:
  //  1. completions of the owner's calls (forward calls of a Channel,
  //     backward calls of a Server),
  //  2. incoming calls, handed to their handler,
  //  3. version two's handlers and decisions,
  //  4. the owner's notices (a Server's kClosed comes after every call that
  //     arrived was handed over),
  // then releases the replies. Completions go first because they are the
  // end of work the engine has already accounted for (the credit and the
  // reply are back): a callback, or the thread a blocking call wakes, must
  // not wait behind a handler that the loop runs inline and that may take
  // long, and a completion may start the next call before new work is
  // dispatched.
  void RunOutcomes(DriverOutcomes& o);
  // What an operation on a caller's thread produced beyond its own refusal
  // runs on the loop, after the current callback: never inside the caller's
  // call, which may hold locks of its own (or be a handler).
  void Defer(DriverOutcomes o);

  // Starts a version-two operation on the connection (`start`, under the
  // lock) and waits for its answer until `deadline`; `who` names the peer
  // in the error when none comes.
  template <typename Answer, typename Operation>
  absl::StatusOr<Answer> AwaitVersionTwo(Operation start, Deadline deadline,
                                         absl::string_view who);

  // runtime::Source
  void OnReadable() override { Work(/*readable=*/true); }
  void OnDeadline() override { Work(/*readable=*/false); }
  bool Spin() override;
  uint32_t busy_poll_us() const override { return busy_poll_us_; }

  // ReplyTarget (handed to Responders aliasing the owner).
  absl::Status SendReply(uint64_t generation, engine::CallId call,
                         HandlerReply reply,
                         Clock::time_point delivered_at) override;
  void SendDroppedReply(uint64_t generation, engine::CallId call, uint32_t xid,
                        HandlerReply reply,
                        Clock::time_point delivered_at) override;
  // A ReplyTarget that keeps the owner alive.
  std::shared_ptr<ReplyTarget> SharedReplyTarget();

  // VersionTwoTarget: a handler's answer.
  absl::Status OnConnection(
      uint64_t generation,
      absl::FunctionRef<absl::Status(Connection&)> op) override;

 private:
  // SendReply's work; with `dropped_xid`, the answer of a Responder dropped
  // unanswered: nothing is said when the owner or the connection is gone, a
  // warning when it is sent.
  absl::Status Answer(uint64_t generation, engine::CallId call,
                      HandlerReply reply, Clock::time_point delivered_at,
                      std::optional<uint32_t> dropped_xid);
  std::weak_ptr<VersionTwoTarget> WeakVersionTwoTarget();

  Owner& owner_;
  runtime::EventLoop* loop_;
  uint32_t busy_poll_us_;

  mutable std::mutex mu_;
  std::unique_ptr<Connection> conn_;
  bool registered_ = false;
  uint64_t generation_ = 0;
  ConnectionId connection_id_;
  // The connection's upcalls, taken each round into the same vector.
  std::vector<engine::Action> upcall_scratch_;
  RepliesInFlight replies_;  // replies being sent
  // Version two: the user's options, and the operations awaiting the peer's
  // answer (filled by CollectUpcalls).
  VersionTwoUser v2_;
  // When the loop will look again at the latest (WakeBy compares).
  std::atomic<int64_t> scheduled_ns_{std::numeric_limits<int64_t>::max()};
  // A round posted by PostWork and not yet begun: the next one waits for
  // it, so that a loop kept from running meanwhile does not find the
  // same round queued once per call.
  std::atomic<bool> work_posted_{false};
};

template <typename Answer, typename Operation>
absl::StatusOr<Answer> ConnectionDriver::AwaitVersionTwo(
    Operation start, Deadline deadline, absl::string_view who) {
  const Clock::time_point started_at = Clock::now();
  std::optional<VersionTwoUser::Wait<Answer>> wait;
  std::optional<Clock::time_point> wake;
  DriverOutcomes o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status refused = owner_.Refuses(Owner::Use::kVersionTwoOperation);
        !refused.ok()) {
      return refused;
    }
    absl::StatusOr<VersionTwoUser::Wait<Answer>> started = start(*conn_);
    if (!started.ok()) return started.status();
    wait = *std::move(started);
    wake = PollAfterOperation(o);
  }
  Defer(std::move(o));
  if (wake) WakeBy(*wake);
  if (wait->answer.wait_until(deadline) != std::future_status::ready) {
    std::lock_guard<std::mutex> lock(mu_);
    // Still awaited: given up. Otherwise answered while this thread took
    // the lock.
    if (v2_.Forget(wait->xid)) {
      return absl::DeadlineExceededError(absl::StrCat(
          who, " by the operation's deadline (waited ",
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                started_at)
              .count(),
          " ms)"));
    }
  }
  return wait->answer.get();
}

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_CONNECTION_DRIVER_H_
