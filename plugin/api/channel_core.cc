#include "plugin/api/channel_core.h"

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/runtime_loops.h"
#include "plugin/log/logging.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::api_internal {

namespace {

// How long a lost or closing connection may take to drain (every posted
// operation flushes after a disconnect; the bound is a guard against a
// provider that never reports) and how often it is looked at meanwhile.
constexpr auto kDrainGuard = std::chrono::seconds(10);
constexpr auto kDrainPoll = std::chrono::milliseconds(10);

}  // namespace

ChannelCore::ChannelCore(std::shared_ptr<Runtime> runtime,
                         CallHandler backward_handler)
    : runtime_(std::move(runtime)),
      backward_handler_(std::move(backward_handler)),
      driver_(*this, RuntimeAccess::Loops(*runtime_).Next()) {}

ChannelCore::~ChannelCore() = default;

void ChannelCore::Watch(std::unique_ptr<runtime::FdWatch>& watch,
                        fabric::Endpoint& endpoint) {
  if (&watch == &conn_watch_) parked_for_blocking_calls_ = false;
  watch = std::make_unique<runtime::FdWatch>(
      [this] { driver_.Work(/*readable=*/true); },
      [this] { return driver_.Spin(); }, driver_.busy_poll_us());
  if (absl::Status s = driver_.loop()->Add(watch.get(), endpoint.event_fd(),
                                           endpoint.event_fd_events());
      !s.ok()) {
    // Without a watch the connection is still driven by its deadlines
    // (every kDrainPoll while it matters), only later.
    RPCRDMA_LOG(kError, driver_.generation(), "channel to ", uri_, ": ",
                s.message());
  }
}

void ChannelCore::UpdateInterest() {
  // While a blocking call's thread reads, and between blocking calls, the
  // loop does not watch.
  if (driver_.conn() != nullptr && conn_watch_ != nullptr &&
      !reading_for_blocking_calls_ && !parked_for_blocking_calls_) {
    driver_.loop()->Modify(conn_watch_.get(),
                           driver_.conn()->endpoint().event_fd_events());
  }
  if (connecting_ != nullptr && connecting_watch_ != nullptr) {
    driver_.loop()->Modify(connecting_watch_.get(),
                           connecting_->event_fd_events());
  }
}

void ChannelCore::Unwatch(std::unique_ptr<runtime::FdWatch>& watch) {
  if (watch == nullptr) return;
  driver_.loop()->Remove(watch.get());
  // Freed after the current callback, which may be this watch's own.
  driver_.loop()->Post([w = watch.release()] { delete w; });
}

void ChannelCore::RunHandler(HandlerJob& job) {
  if (handler_pool_ != nullptr) {
    handler_pool_->Submit(std::move(job));
  } else {
    (*job.handler)(std::move(job.call), *std::move(job.responder));
  }
}

absl::Status ChannelCore::Refuses(Use use) const {
  switch (use) {
    case Use::kReply:
      if (shutting_down_) {
        return absl::FailedPreconditionError("responder: the Channel is gone");
      }
      return absl::OkStatus();
    case Use::kVersionTwoOperation:
      if (!Up()) return absl::UnavailableError("channel: not connected");
      return absl::OkStatus();
    case Use::kVersionTwoAnswer:
      break;
  }
  return absl::UnavailableError("channel: the connection is gone");
}

void ChannelCore::OnUpcall(engine::Action& a, Outcomes& o) {
  if (auto* c = std::get_if<engine::CompleteCall>(&a)) {
    Finish(c->call, Reply{std::move(c->reply), std::move(c->result_lengths)},
           o);
  } else if (auto* f = std::get_if<engine::FailCall>(&a)) {
    Finish(f->call, std::move(f->status), o,
           f->never_sent ? &f->unsent_xdr : nullptr);
  } else if (auto* d = std::get_if<engine::DeliverCall>(&a)) {
    // Backward calls (RFC 8167); none are served once the Channel goes.
    if (shutting_down_ || backward_handler_ == nullptr) return;
    o.calls.push_back(HandlerJob{
        &backward_handler_,
        IncomingCall{driver_.connection_id(), d->xid, std::move(d->message),
                     std::move(d->write_chunk_capacities),
                     d->reply_chunk_capacity},
        ResponderAccess::Make(driver_.SharedReplyTarget(), driver_.generation(),
                              d->call, d->xid, Clock::now())});
  }
}

// Delivers the outcome of the call and forgets it.
void ChannelCore::Complete(Channel::CallId id, absl::StatusOr<Reply> result,
                           Outcomes& o) {
  auto p = pending_.find(id);
  if (p == pending_.end()) return;
  o.completions.emplace_back(std::move(p->second.done), std::move(result));
  pending_.erase(p);
}

void ChannelCore::Finish(engine::CallId engine_id, absl::StatusOr<Reply> result,
                         Outcomes& o, std::vector<uint8_t>* unsent_xdr) {
  auto it = by_engine_.find(engine_id);
  if (it == by_engine_.end()) return;
  const Channel::CallId id = it->second;
  by_engine_.erase(it);
  auto p = pending_.find(id);
  if (p == pending_.end()) return;
  // The engine reports a lost connection as UNAVAILABLE once every handle
  // of the call is invalidated; a call that allows it waits for the
  // reconnect instead, and so does one that never left (it was waiting for
  // a credit), which the server cannot have run: the kernel client keeps
  // such RPCs on its backlog across a reconnect (xprt->backlog).
  if (!result.ok() &&
      result.status().code() == absl::StatusCode::kUnavailable &&
      (p->second.request.retry_on_reconnect || unsent_xdr != nullptr) &&
      !shutting_down_ && driver_.conn()->lost()) {
    if (p->second.ending) {
      absl::Status ending = *p->second.ending;
      Complete(id, std::move(ending), o);
      return;
    }
    // Sent again on the next connection: a call that never left gets back
    // the stream it gave the engine without a copy.
    if (unsent_xdr != nullptr && !p->second.request.retry_on_reconnect) {
      p->second.request.xdr = std::move(*unsent_xdr);
    }
    p->second.engine_id.reset();
    return;
  }
  if (result.ok())
    driver_.conn()->RecordCallRtt(Clock::now() - p->second.sent_at);
  Complete(id, std::move(result), o);
}

Channel::CallId ChannelCore::Submit(CallRequest request, Channel::Callback done,
                                    bool blocking) {
  Outcomes refused;  // this call's own, run here before Submit returns
  Outcomes deferred;
  Channel::CallId id;
  std::optional<Clock::time_point> wake;
  {
    std::unique_lock<std::mutex> lock(driver_.mu());
    id = Channel::CallId(next_id_++);
    // While the connection is down only calls that allow a retry wait.
    if (shutting_down_ ||
        (!connected_.load() && !idle_closed_ && !WaitsForConnection(request))) {
      absl::Status refused_now =
          shutting_down_ ? absl::UnavailableError("channel: shut down")
                         : NotConnectedError(Clock::now());
      lock.unlock();
      done(std::move(refused_now));
      return id;
    }
    // A call whose callback the loop delivers needs the loop watching.
    if (!blocking) parked_for_blocking_calls_ = false;
    Accept(id, std::move(request), std::move(done), refused);
    if (auto p = pending_.find(id); p != pending_.end() && p->second.deadline) {
      wake = p->second.deadline;
    }
    if ((driver_.conn() == nullptr && idle_closed_) ||
        (driver_.conn() != nullptr &&
         driver_.conn()->engine().calls_abandoned() > 0)) {
      // The loop reconnects, or checks whether abandoned calls now hold
      // every credit while this one waits (channel.h).
      wake = Clock::now();
    }
    if (driver_.conn() != nullptr) {
      driver_.conn()->Poll();  // what this call's own posts completed
      driver_.CollectUpcalls(deferred);
      if (auto due = driver_.conn()->poll_deadline();
          due && (!wake || *due < *wake)) {
        wake = due;
      }
      UpdateInterest();
    }
  }
  driver_.RunOutcomes(refused);
  driver_.Defer(std::move(deferred));
  if (wake) driver_.WakeBy(*wake);
  return id;
}

void ChannelCore::Cancel(Channel::CallId id) {
  Outcomes o;
  bool abandoned = false;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    CancelCall(id, absl::CancelledError("channel: call cancelled"), o);
    if (driver_.conn() != nullptr) abandoned = driver_.CollectAfterCancel(o);
  }
  driver_.Defer(std::move(o));
  // The abandoned-call rule (channel.h).
  if (abandoned) driver_.WakeBy(Clock::now());
}

void ChannelCore::Accept(Channel::CallId id, CallRequest request,
                         Channel::Callback done, Outcomes& o) {
  std::optional<Clock::time_point> deadline = request.deadline;
  if (!deadline && default_deadline_.count() > 0) {
    deadline = Clock::now() + default_deadline_;
  }
  if (!Up() && !WaitsForConnection(request) && !idle_closed_) {
    o.completions.emplace_back(std::move(done),
                               NotConnectedError(Clock::now()));
    return;
  }
  Pending& p = pending_[id];
  p.done = std::move(done);
  p.deadline = deadline;
  p.request = std::move(request);
  if (Up()) Send(id, o);
}

// Hands a call that is not in an engine to the current connection.
void ChannelCore::Send(Channel::CallId id, Outcomes& o) {
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.engine_id) return;
  Pending& p = it->second;
  if (p.deadline && *p.deadline <= Clock::now()) {
    Complete(id,
             absl::DeadlineExceededError(
                 "channel: deadline passed before the call was sent"),
             o);
    return;
  }
  engine::OutgoingCall call;
  // The same XID on every connection (it is in the stream): the server's
  // duplicate request cache recognizes a re-sent call.
  if (p.request.retry_on_reconnect) {
    call.xdr = p.request.xdr;
  } else {
    call.xdr = std::move(p.request.xdr);
  }
  call.arguments.reserve(p.request.arguments.size());
  for (const CallArgument& a : p.request.arguments) {
    call.arguments.push_back(engine::DdpArgument{
        a.position, absl::Span<uint8_t>(const_cast<uint8_t*>(a.data.data()),
                                        a.data.size())});
  }
  call.results = p.request.results;
  // Unset, a call accepts any reply that comes back inline on this
  // connection (RFC 8166 §3.5.4): ordinary replies work without sizing;
  // a larger one needs max_reply_size (and then gets a reply chunk).
  call.max_reply_size = p.request.max_reply_size != 0
                            ? p.request.max_reply_size
                            : driver_.conn()->engine().max_inline_reply();
  p.sent_at = Clock::now();
  absl::StatusOr<engine::CallId> eid =
      driver_.conn()->StartCall(std::move(call));
  if (!eid.ok()) {
    Complete(id, eid.status(), o);
    return;
  }
  p.engine_id = *eid;
  by_engine_[*eid] = id;
}

void ChannelCore::CancelCall(Channel::CallId id, absl::Status status,
                             Outcomes& o) {
  auto p = pending_.find(id);
  if (p == pending_.end()) return;
  if (!p->second.engine_id) {
    Complete(id, std::move(status), o);
    return;
  }
  if (p->second.ending) return;
  p->second.ending = status;
  driver_.conn()->Cancel(*p->second.engine_id, std::move(status));
}

// The rules of channel.h on abandoned calls and idleness, after a round of
// work on the live connection; returns when to look again.
std::optional<Clock::time_point> ChannelCore::EnforceLimits(
    Clock::time_point now) {
  if (!Up()) return std::nullopt;
  if (std::optional<std::string> why =
          abandoned_.Check(driver_.conn()->engine(), now)) {
    driver_.conn()->Count(&Counters::abandoned_call_disconnects);
    ReportConnectionEvent(absl::StrCat(
        "channel to ", address_, ": disconnecting to recover credits: ", *why));
    abandoned_.Reset();
    driver_.conn()->Disconnect();
    return std::nullopt;
  }
  std::optional<Clock::time_point> next = abandoned_.next_check();
  const bool busy = !pending_.empty() ||
                    driver_.conn()->engine().calls_outstanding() > 0 ||
                    driver_.conn()->engine().calls_abandoned() > 0;
  if (idle_ && idle_->Expired(driver_.conn()->activity(), busy, now)) {
    driver_.conn()->Count(&Counters::idle_closes);
    idle_closed_ = true;
    driver_.conn()->Disconnect();
    return std::nullopt;
  }
  if (idle_) {
    std::optional<Clock::time_point> idle_due = idle_->deadline();
    if (idle_due && (!next || *idle_due < *next)) next = idle_due;
  }
  return next;
}

std::optional<Clock::time_point> ChannelCore::Drive(Clock::time_point now,
                                                    bool readable,
                                                    Outcomes& o) {
  std::optional<Clock::time_point> next;
  auto sooner = [&next](std::optional<Clock::time_point> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  if (driver_.conn() != nullptr) {
    driver_.conn()->Poll(readable);
    driver_.CollectUpcalls(o);
    if (driver_.conn()->disconnected()) {
      connected_.store(false);
      // The thread reading for blocking calls stops reading a lost
      // connection (and fails its call, or waits for the next one).
      WakeBlockingCalls();
      if (!lost_since_) lost_since_ = now;
      if (driver_.conn()->finished() || now - *lost_since_ > kDrainGuard) {
        Retire(now, o);
      } else {
        sooner(now + kDrainPoll);
      }
    }
  }
  // After an idle close the next call brings the connection back.
  if (driver_.conn() == nullptr && !shutting_down_ &&
      !(pending_.empty() && idle_closed_)) {
    if (readable && connecting_ != nullptr) connecting_->OnEventFdReadable();
    Reconnect(now, o);
    if (driver_.conn() != nullptr) driver_.CollectUpcalls(o);
  }
  sooner(EnforceLimits(now));
  // Deadlines, enforced here: the engine has no clock.
  std::vector<Channel::CallId> expired;
  for (auto& [id, p] : pending_) {
    if (!p.deadline || p.ending) continue;
    if (*p.deadline <= now) {
      expired.push_back(id);
    } else {
      sooner(p.deadline);
    }
  }
  for (Channel::CallId id : expired) {
    CancelCall(id, absl::DeadlineExceededError("channel: deadline exceeded"),
               o);
  }
  if (driver_.conn() != nullptr) {
    driver_.conn()->Poll();  // what this round's own operations completed
    driver_.CollectUpcalls(o);
    sooner(driver_.conn()->poll_deadline());
  } else if (connecting_ != nullptr) {
    sooner(reconnect_.attempt_deadline());
    // The soft fabric's bound on the listener's answer.
    sooner(connecting_->poll_deadline());
  } else if (!shutting_down_ && !(pending_.empty() && idle_closed_)) {
    sooner(reconnect_.next_attempt());
  }
  // A call made later gets its default deadline from then on: looking
  // again within that much keeps every such deadline in time without a
  // wake-up per call (see WakeBy).
  if (default_deadline_.count() > 0) sooner(now + default_deadline_);
  return next;
}

absl::Status ChannelCore::Shutdown(Deadline deadline) {
  absl::Status drained;
  std::call_once(shut_down_, [&] { drained = ShutdownOnce(deadline); });
  return drained;
}

absl::Status ChannelCore::ShutdownOnce(Deadline deadline) {
  // First the loop lets go of this Channel, so that everything after runs
  // here alone (callers of Submit aside, which the flag turns away).
  driver_.loop()->RunSync([this] {
    std::lock_guard<std::mutex> lock(driver_.mu());
    shutting_down_ = true;
    WakeBlockingCalls();
    Unwatch(conn_watch_);
    Unwatch(connecting_watch_);
    if (driver_.registered()) driver_.loop()->Remove(&driver_);
    driver_.set_registered(false);
  });
  Outcomes o;
  Clock::time_point since = Clock::now();
  std::unique_lock<std::mutex> lock(driver_.mu());
  if (connecting_ != nullptr) {
    connecting_->Disconnect();
    connecting_.reset();
  }
  // Calls waiting for a connection fail at once; the others fail as the
  // disconnect flushes them.
  std::vector<Channel::CallId> held;
  for (const auto& [id, p] : pending_) {
    if (!p.engine_id) held.push_back(id);
  }
  for (Channel::CallId id : held) {
    Complete(id, absl::UnavailableError("channel: shut down"), o);
  }
  if (driver_.conn() != nullptr) driver_.conn()->Disconnect();
  absl::Status drained;
  while (driver_.conn() != nullptr) {
    driver_.conn()->Poll(/*readable=*/true);
    driver_.CollectUpcalls(o);
    if (driver_.conn()->finished()) break;
    if (Clock::now() >= deadline) {
      drained = absl::DeadlineExceededError(absl::StrCat(
          "channel: the connection had not drained by the shutdown "
          "deadline (waited ",
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                since)
              .count(),
          " ms for the provider to complete what was posted); released "
          "without it"));
      break;
    }
    const int fd = driver_.conn()->endpoint().event_fd();
    lock.unlock();
    driver_.RunOutcomes(o);
    o = Outcomes();
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(kDrainPoll.count()));
    lock.lock();
  }
  // Calls still waiting (none normally: the disconnect failed them).
  for (auto& [id, p] : pending_) {
    o.completions.emplace_back(std::move(p.done),
                               absl::UnavailableError("channel: shut down"));
  }
  pending_.clear();
  for (ReleasingReply& r : driver_.replies().TakeAll())
    o.dropped.push_back(std::move(r));
  if (driver_.conn() != nullptr) {
    past_ += driver_.conn()->counters();
    last_info_ = driver_.conn()->info();
    driver_.conn().reset();
  }
  lock.unlock();
  driver_.RunOutcomes(o);
  // Outcomes handed to the loop before now run before the Channel is gone.
  driver_.loop()->RunSync([] {});
  // Runs what was handed to it, then joins; the pool stays for
  // InOwnThread, which another thread may be asking meanwhile.
  if (handler_pool_ != nullptr) handler_pool_->Stop();
  return drained;
}

Counters ChannelCore::counters() const {
  std::lock_guard<std::mutex> lock(driver_.mu());
  // Summed over every connection of the Channel; credits_granted is the
  // current connection's (0 while there is none or before its first reply).
  Counters c = past_;
  c.credits_granted = 0;
  if (driver_.conn() != nullptr) c += driver_.conn()->counters();
  c.reconnects = reconnects_;
  return c;
}

Metrics ChannelCore::metrics() const {
  Metrics m;
  m.counters = counters();
  std::lock_guard<std::mutex> lock(driver_.mu());
  if (driver_.conn() != nullptr)
    m.connections.push_back(driver_.conn()->metrics());
  return m;
}

ConnectionInfo ChannelCore::connection_info() const {
  std::lock_guard<std::mutex> lock(driver_.mu());
  return driver_.conn() != nullptr ? driver_.conn()->info() : last_info_;
}

}  // namespace rpcrdma::api_internal
