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

// Waits up to 100 ms, and not past `until`, for what `endpoint` waits for
// on its descriptor (fabric.h event_fd_events), and tells it when that
// came; false once `until` has passed.
bool WaitForEndpoint(fabric::Endpoint& endpoint, Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - Clock::now());
  if (left.count() <= 0) return false;
  const uint32_t events = endpoint.event_fd_events();
  pollfd p{endpoint.event_fd(),
           static_cast<short>(((events & EPOLLIN) ? POLLIN : 0) |
                              ((events & EPOLLOUT) ? POLLOUT : 0)),
           0};
  if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100))) > 0) {
    endpoint.OnEventFdReadable();
  }
  return true;
}

ChannelCore::ChannelCore(std::shared_ptr<Runtime> runtime,
                         CallHandler backward_handler)
    : runtime_(std::move(runtime)),
      backward_handler_(std::move(backward_handler)) {
  loop_ = RuntimeAccess::Loops(*runtime_).Next();
}

ChannelCore::~ChannelCore() = default;

absl::Status ChannelCore::Start(absl::string_view uri,
                                const config::TransportConfig& config) {
  absl::StatusOr<ParsedUri> parsed = ParseUri(uri);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::unique_ptr<fabric::Fabric>> fab =
      MakeFabricFor(*parsed, config);
  if (!fab.ok()) return fab.status();
  fabric_ = std::move(*fab);
  absl::StatusOr<std::shared_ptr<CaptureTap>> capture = OpenCaptureFor(config);
  if (!capture.ok()) return capture.status();
  capture_ = std::move(*capture);
  const config::ResolvedConfig resolved = config::Resolve(config);
  default_deadline_ = resolved.request_deadline;
  connect_timeout_ = resolved.connect_timeout;
  backoff_initial_ = resolved.reconnect_backoff_initial;
  backoff_max_ = resolved.reconnect_backoff_max;
  backoff_ = backoff_initial_;
  idle_timeout_ = resolved.idle_timeout;
  busy_poll_us_ = resolved.busy_poll_us;
  abandoned_ = AbandonedCallWatch(resolved.abandoned_call_timeout);
  address_ = parsed->address;
  uri_ = std::string(uri);
  ecfg_ =
      EngineConfigFor(resolved, Role::kRequester, backward_handler_ != nullptr);
  v2_.Configure(ecfg_);
  if (resolved.inline_settings.cm_private_data) {
    engine::Engine probe(ecfg_, nullptr);
    auto pd = probe.LocalPrivateData();
    private_data_.assign(pd.begin(), pd.end());
  }
  if (backward_handler_ != nullptr && resolved.handler_threads > 0) {
    handler_pool_ = std::make_unique<runtime::WorkerPool<HandlerJob>>(
        resolved.handler_threads, "rpcrdma-handler", [](HandlerJob& job) {
          (*job.handler)(std::move(job.call), *std::move(job.responder));
        });
  }
  absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
      fabric_->Connect(address_, private_data_, EndpointOptionsFor(ecfg_));
  if (!ep.ok()) {
    // A host name that does not resolve stays INVALID_ARGUMENT.
    return absl::Status(
        ep.status().code() == absl::StatusCode::kInvalidArgument
            ? absl::StatusCode::kInvalidArgument
            : absl::StatusCode::kUnavailable,
        absl::StrCat("connect to ", uri, ": ", ep.status().message()));
  }
  // Wait for the outcome of the connect.
  const Clock::time_point until = Clock::now() + resolved.connect_timeout;
  std::optional<fabric::ConnectionEvent> ev;
  (*ep)->OnEventFdReadable();  // the answer may be there already
  while (!(ev = (*ep)->PollConnectionEvent())) {
    if (!WaitForEndpoint(**ep, until)) {
      (*ep)->Disconnect();
      return absl::DeadlineExceededError(
          absl::StrCat("connect to ", uri, ": no answer within ",
                       resolved.connect_timeout.count(), " ms"));
    }
  }
  if (ev->type != fabric::ConnectionEventType::kEstablished) {
    // A Server names why it rejected (limits.h RejectPrivateData).
    std::optional<std::string> reason;
    if (ev->type == fabric::ConnectionEventType::kRejected) {
      reason = RejectReason(ev->private_data);
    }
    return absl::UnavailableError(absl::StrCat(
        "connect to ", uri, ": ", fabric::ConnectionEventTypeName(ev->type),
        ev->detail.empty() ? "" : ": ", ev->detail,
        reason ? ": the server says: " : "", reason ? *reason : ""));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    conn_ = MakeConnection(std::move(*ep));
    idle_.emplace(idle_timeout_, Clock::now());
    conn_->Connected(ev->private_data, DrawXid());
  }
  if (absl::Status s = AwaitVersion(uri, until); !s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    conn_->Disconnect();
    return s;
  }
  // Joins the loop: from here on the loop and callers share the state.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = loop_->Add(this, -1); !s.ok()) return s;
    registered_ = true;
    Watch(conn_watch_, conn_->endpoint());
  }
  std::weak_ptr<ChannelCore> weak = weak_from_this();
  loop_->Post([weak] {
    if (std::shared_ptr<ChannelCore> self = weak.lock()) self->Work(false);
  });
  return absl::OkStatus();
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §7: with version two offered,
// Create returns once the peer has answered the probe.
absl::Status ChannelCore::AwaitVersion(absl::string_view uri,
                                       Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mu_);
  // Not on a loop yet: nobody else touches the connection.
  while (conn_->engine().negotiating() && !conn_->disconnected()) {
    if (!WaitForEndpoint(conn_->endpoint(), until)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "connect to ", uri, ": no answer to the version-two probe"));
    }
    conn_->Poll();
  }
  if (conn_->disconnected()) {
    return absl::UnavailableError(absl::StrCat(
        "connect to ", uri, ": connection lost during version negotiation"));
  }
  const absl::Status& st = conn_->engine().negotiation_status();
  if (!st.ok()) {
    return absl::Status(st.code(),
                        absl::StrCat("connect to ", uri, ": ", st.message()));
  }
  // §7.2: a peer that answered ERR_VERS is not asked again on a reconnect.
  ecfg_.offered_version = conn_->engine().version();
  return absl::OkStatus();
}

// XIDs of version probes: drawn at random, as RPC clients draw their first
// XID, so that they do not repeat across connections.
uint32_t ChannelCore::DrawXid() {
  if (ecfg_.offered_version < 2) return 0;
  return static_cast<uint32_t>(rng_());
}

std::unique_ptr<Connection> ChannelCore::MakeConnection(
    std::unique_ptr<fabric::Endpoint> endpoint) {
  // The remote invalidation bit must match what was sent, so the
  // connection recomputes nothing: the engine config is used as sent.
  Connection::Hooks hooks;
  AttachCapture(capture_, Role::kRequester, hooks);
  auto conn = std::make_unique<Connection>(std::move(endpoint), ecfg_,
                                           Role::kRequester, std::move(hooks));
  conn->SetLogContext(++generation_, absl::StrCat("channel to ", uri_));
  return conn;
}

void ChannelCore::Watch(std::unique_ptr<runtime::FdWatch>& watch,
                        fabric::Endpoint& endpoint) {
  if (&watch == &conn_watch_) parked_for_blocking_calls_ = false;
  watch = std::make_unique<runtime::FdWatch>(
      [this] { Work(/*readable=*/true); }, [this] { return Spin(); },
      busy_poll_us_);
  if (absl::Status s = loop_->Add(watch.get(), endpoint.event_fd(),
                                  endpoint.event_fd_events());
      !s.ok()) {
    // Without a watch the connection is still driven by its deadlines
    // (every kDrainPoll while it matters), only later.
    RPCRDMA_LOG(kError, generation_, "channel to ", uri_, ": ", s.message());
  }
}

void ChannelCore::UpdateInterest() {
  // While a blocking call's thread reads, and between blocking calls, the
  // loop does not watch.
  if (conn_ != nullptr && conn_watch_ != nullptr &&
      !reading_for_blocking_calls_ && !parked_for_blocking_calls_) {
    loop_->Modify(conn_watch_.get(), conn_->endpoint().event_fd_events());
  }
  if (connecting_ != nullptr && connecting_watch_ != nullptr) {
    loop_->Modify(connecting_watch_.get(), connecting_->event_fd_events());
  }
}

void ChannelCore::Unwatch(std::unique_ptr<runtime::FdWatch>& watch) {
  if (watch == nullptr) return;
  loop_->Remove(watch.get());
  // Freed after the current callback, which may be this watch's own.
  loop_->Post([w = watch.release()] { delete w; });
}

void ChannelCore::OnDeadline() { Work(/*readable=*/false); }

bool ChannelCore::Spin() {
  Outcomes o;
  bool found = false;
  {
    // A thread sending a call or a reply holds the lock for a moment: the
    // spin tries again rather than sleep on the lock (which would cost the
    // very wake-up the spin is there to save).
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    if (conn_ == nullptr || conn_->disconnected()) return false;
    found = conn_->Spin();
    CollectUpcalls(o);
    UpdateInterest();
  }
  RunOutcomes(o);
  return found;
}

void ChannelCore::Work(bool readable) {
  Outcomes o;
  std::optional<Clock::time_point> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!registered_) return;
    next = Drive(Clock::now(), readable, o);
    UpdateInterest();
    // Published under the lock: a call made after this round is seen by
    // WakeBy against it, or by the next round's Drive.
    scheduled_ns_.store(next ? next->time_since_epoch().count()
                             : std::numeric_limits<int64_t>::max());
  }
  RunOutcomes(o);
  // Exactly the next time this Channel needs the loop: a deadline left
  // earlier would wake the loop for nothing.
  loop_->SetDeadline(this, next);
}

void ChannelCore::WakeBy(Clock::time_point when) {
  if (when.time_since_epoch().count() >= scheduled_ns_.load()) return;
  std::weak_ptr<ChannelCore> weak = weak_from_this();
  loop_->Post([weak] {
    if (std::shared_ptr<ChannelCore> self = weak.lock()) self->Work(false);
  });
}

void ChannelCore::RunHandler(HandlerJob& job) {
  if (handler_pool_ != nullptr) {
    handler_pool_->Submit(std::move(job));
  } else {
    (*job.handler)(std::move(job.call), *std::move(job.responder));
  }
}

void ChannelCore::Defer(Outcomes o) {
  if (o.empty()) return;
  // The core stays alive until they ran: every callback runs once.
  auto outcomes = std::make_shared<Outcomes>(std::move(o));
  loop_->Post(
      [self = shared_from_this(), outcomes] { self->RunOutcomes(*outcomes); });
}

void ChannelCore::RunOutcomes(Outcomes& o) {
  for (auto& [done, result] : o.completions) done(std::move(result));
  for (HandlerJob& job : o.calls) RunHandler(job);
  for (std::function<void()>& job : o.jobs) job();
  // o.released and o.dropped release their replies as `o` goes.
}

void ChannelCore::CollectUpcalls(Outcomes& o) {
  if (conn_ == nullptr || !conn_->has_upcalls()) return;
  std::vector<engine::Action>& upcalls = upcall_scratch_;
  conn_->TakeUpcalls(upcalls);
  for (engine::Action& a : upcalls) {
    if (v2_.Collect(a, /*connection=*/0, generation_, weak_from_this(),
                    o.jobs)) {
      continue;
    }
    if (auto* c = std::get_if<engine::CompleteCall>(&a)) {
      Finish(c->call, Reply{std::move(c->reply), std::move(c->result_lengths)},
             o);
    } else if (auto* f = std::get_if<engine::FailCall>(&a)) {
      Finish(f->call, std::move(f->status), o,
             f->never_sent ? &f->unsent_xdr : nullptr);
    } else if (auto* d = std::get_if<engine::DeliverCall>(&a)) {
      // Backward calls (RFC 8167); none are served once the Channel goes.
      if (shutting_down_ || backward_handler_ == nullptr) continue;
      o.calls.push_back(
          HandlerJob{&backward_handler_,
                     IncomingCall{0, d->xid, std::move(d->message),
                                  std::move(d->write_chunk_capacities),
                                  d->reply_chunk_capacity},
                     ResponderAccess::Make(shared_from_this(), generation_,
                                           d->call, Clock::now())});
    } else if (auto* r = std::get_if<engine::ReplySent>(&a)) {
      if (auto released = replies_.Sent(*conn_, r->call)) {
        o.released.push_back(std::move(*released));
      }
    }
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
      !shutting_down_ && conn_->lost()) {
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
  if (result.ok()) conn_->RecordCallRtt(Clock::now() - p->second.sent_at);
  Complete(id, std::move(result), o);
}

Channel::CallId ChannelCore::Submit(CallRequest request, Channel::Callback done,
                                    bool blocking) {
  Outcomes refused;  // this call's own, run here before Submit returns
  Outcomes deferred;
  Channel::CallId id;
  std::optional<Clock::time_point> wake;
  {
    std::unique_lock<std::mutex> lock(mu_);
    id = next_id_++;
    // While the connection is down only calls that allow a retry wait.
    if (shutting_down_ ||
        (!connected_.load() && !idle_closed_ && !request.retry_on_reconnect)) {
      lock.unlock();
      done(absl::UnavailableError(shutting_down_ ? "channel: shut down"
                                                 : "channel: connection lost"));
      return id;
    }
    // A call whose callback the loop delivers needs the loop watching.
    if (!blocking) parked_for_blocking_calls_ = false;
    Accept(id, std::move(request), std::move(done), refused);
    if (auto p = pending_.find(id); p != pending_.end() && p->second.deadline) {
      wake = p->second.deadline;
    }
    if ((conn_ == nullptr && idle_closed_) ||
        (conn_ != nullptr && conn_->engine().calls_abandoned() > 0)) {
      // The loop reconnects, or checks whether abandoned calls now hold
      // every credit while this one waits (channel.h).
      wake = Clock::now();
    }
    if (conn_ != nullptr) {
      conn_->Poll();  // what this call's own posts completed
      CollectUpcalls(deferred);
      if (auto due = conn_->poll_deadline(); due && (!wake || *due < *wake)) {
        wake = due;
      }
      UpdateInterest();
    }
  }
  RunOutcomes(refused);
  Defer(std::move(deferred));
  if (wake) WakeBy(*wake);
  return id;
}

void ChannelCore::Cancel(Channel::CallId id) {
  Outcomes o;
  bool abandoned = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    CancelCall(id, absl::CancelledError("channel: call cancelled"), o);
    if (conn_ != nullptr) {
      conn_->Poll();
      CollectUpcalls(o);
      abandoned = conn_->engine().calls_abandoned() > 0;
      UpdateInterest();
    }
  }
  Defer(std::move(o));
  // A call cancelled after it was sent keeps its credit: the loop applies
  // the abandoned-call rule (channel.h).
  if (abandoned) WakeBy(Clock::now());
}

void ChannelCore::Accept(Channel::CallId id, CallRequest request,
                         Channel::Callback done, Outcomes& o) {
  std::optional<Clock::time_point> deadline = request.deadline;
  if (!deadline && default_deadline_.count() > 0) {
    deadline = Clock::now() + default_deadline_;
  }
  if (!Up() && !request.retry_on_reconnect && !idle_closed_) {
    o.completions.emplace_back(
        std::move(done), absl::UnavailableError("channel: connection lost"));
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
  call.max_reply_size = p.request.max_reply_size;
  p.sent_at = Clock::now();
  absl::StatusOr<engine::CallId> eid = conn_->StartCall(std::move(call));
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
  conn_->Cancel(*p->second.engine_id, std::move(status));
}

// The rules of channel.h on abandoned calls and idleness, after a round of
// work on the live connection; returns when to look again.
std::optional<Clock::time_point> ChannelCore::EnforceLimits(
    Clock::time_point now) {
  if (!Up()) return std::nullopt;
  if (std::optional<std::string> why = abandoned_.Check(conn_->engine(), now)) {
    conn_->Count(&Counters::abandoned_call_disconnects);
    ReportConnectionEvent(absl::StrCat(
        "channel to ", address_, ": disconnecting to recover credits: ", *why));
    abandoned_.Reset();
    conn_->Disconnect();
    return std::nullopt;
  }
  std::optional<Clock::time_point> next = abandoned_.next_check();
  const bool busy = !pending_.empty() ||
                    conn_->engine().calls_outstanding() > 0 ||
                    conn_->engine().calls_abandoned() > 0;
  if (idle_ && idle_->Expired(conn_->activity(), busy, now)) {
    conn_->Count(&Counters::idle_closes);
    idle_closed_ = true;
    conn_->Disconnect();
    return std::nullopt;
  }
  if (idle_) {
    std::optional<Clock::time_point> idle_due = idle_->deadline();
    if (idle_due && (!next || *idle_due < *next)) next = idle_due;
  }
  return next;
}

// The lost connection has drained (or the guard ran out): its endpoint,
// and with it every registration and handle of it, goes away.
void ChannelCore::Retire(Clock::time_point now, Outcomes& o) {
  past_ += conn_->counters();
  last_loss_ = conn_->lost_reason();
  last_info_ = conn_->info();
  Unwatch(conn_watch_);
  for (ReleasingReply& r : replies_.TakeAll())
    o.dropped.push_back(std::move(r));
  conn_.reset();
  by_engine_.clear();
  lost_since_.reset();
  std::vector<std::pair<Channel::CallId, absl::Status>> failed;
  for (auto& [id, p] : pending_) {
    if (!p.engine_id) continue;
    // Not finished by the engine: only when the drain guard ran out.
    p.engine_id.reset();
    if (p.ending) {
      failed.emplace_back(id, *p.ending);
    } else if (!p.request.retry_on_reconnect || shutting_down_) {
      failed.emplace_back(id,
                          absl::UnavailableError("channel: connection lost"));
    }
  }
  for (auto& [id, status] : failed) Complete(id, std::move(status), o);
  backoff_ = backoff_initial_;
  next_attempt_ = now;  // the first attempt at once
}

void ChannelCore::Backoff(Clock::time_point now, absl::string_view cause) {
  RPCRDMA_LOG(kWarning, 0, "channel to ", uri_, ": reconnect failed: ", cause,
              "; next attempt in ", backoff_.count(), " ms");
  next_attempt_ = now + backoff_;
  backoff_ = std::min(backoff_ * 2, backoff_max_);
}

// Without a connection: drives the connect attempts.
void ChannelCore::Reconnect(Clock::time_point now, Outcomes& o) {
  if (connecting_ == nullptr) {
    if (now < next_attempt_) return;
    absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
        fabric_->Connect(address_, private_data_, EndpointOptionsFor(ecfg_));
    if (!ep.ok()) {
      Backoff(now, ep.status().message());
      return;
    }
    connecting_ = std::move(*ep);
    connect_until_ = now + connect_timeout_;
    Watch(connecting_watch_, *connecting_);
  }
  std::optional<fabric::ConnectionEvent> ev =
      connecting_->PollConnectionEvent();
  if (!ev) {
    if (now >= connect_until_) {
      Unwatch(connecting_watch_);
      connecting_->Disconnect();
      connecting_.reset();
      Backoff(now, absl::StrCat("no answer within ", connect_timeout_.count(),
                                " ms"));
    }
    return;
  }
  Unwatch(connecting_watch_);
  if (ev->type != fabric::ConnectionEventType::kEstablished) {
    connecting_.reset();
    Backoff(now, absl::StrCat(fabric::ConnectionEventTypeName(ev->type),
                              ev->detail.empty() ? "" : ": ", ev->detail));
    return;
  }
  conn_ = MakeConnection(std::move(connecting_));
  idle_.emplace(idle_timeout_, now);
  abandoned_.Reset();
  ++reconnects_;
  RPCRDMA_LOG(kWarning, generation_, "channel to ", uri_,
              ": reconnected after the connection was lost (",
              last_loss_.empty() ? "cause unknown" : last_loss_,
              "); calls waiting to be sent again: ", pending_.size());
  connected_.store(true);
  idle_closed_ = false;
  Watch(conn_watch_, conn_->endpoint());
  // A fresh engine: credits restart at one and the inline thresholds are
  // negotiated again from this connection's private data (RFC 8166
  // §3.3.1, RFC 8797 §4.2).
  conn_->Connected(ev->private_data, DrawXid());
  std::vector<Channel::CallId> held;
  for (const auto& [id, p] : pending_) {
    if (!p.engine_id) held.push_back(id);
  }
  // In the order the calls were made.
  std::sort(held.begin(), held.end());
  for (Channel::CallId id : held) {
    if (!Up()) break;
    Send(id, o);
  }
}

std::optional<Clock::time_point> ChannelCore::Drive(Clock::time_point now,
                                                    bool readable,
                                                    Outcomes& o) {
  std::optional<Clock::time_point> next;
  auto sooner = [&next](std::optional<Clock::time_point> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  if (conn_ != nullptr) {
    conn_->Poll(readable);
    CollectUpcalls(o);
    if (conn_->disconnected()) {
      connected_.store(false);
      if (!lost_since_) lost_since_ = now;
      if (conn_->finished() || now - *lost_since_ > kDrainGuard) {
        Retire(now, o);
      } else {
        sooner(now + kDrainPoll);
      }
    }
  }
  // After an idle close the next call brings the connection back.
  if (conn_ == nullptr && !shutting_down_ &&
      !(pending_.empty() && idle_closed_)) {
    if (readable && connecting_ != nullptr) connecting_->OnEventFdReadable();
    Reconnect(now, o);
    if (conn_ != nullptr) CollectUpcalls(o);
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
  if (conn_ != nullptr) {
    conn_->Poll();  // what this round's own operations completed
    CollectUpcalls(o);
    sooner(conn_->poll_deadline());
  } else if (connecting_ != nullptr) {
    sooner(connect_until_);
  } else if (!shutting_down_ && !(pending_.empty() && idle_closed_)) {
    sooner(next_attempt_);
  }
  // A call made later gets its default deadline from then on: looking
  // again within that much keeps every such deadline in time without a
  // wake-up per call (see WakeBy).
  if (default_deadline_.count() > 0) sooner(now + default_deadline_);
  return next;
}

absl::Status ChannelCore::SendReply(uint64_t generation, engine::CallId call,
                                    ServerReply reply,
                                    Clock::time_point delivered_at) {
  Outcomes o;  // a refused reply, released here
  Outcomes deferred;
  absl::Status st;
  std::optional<Clock::time_point> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) {
      o.released.emplace_back(std::move(reply));
      st = absl::FailedPreconditionError("responder: the Channel is gone");
    } else if (generation != generation_ || !Up()) {
      // Its connection is gone: the reply is dropped.
      o.released.emplace_back(std::move(reply));
    } else {
      std::optional<ReleasingReply> refused;
      st = replies_.Send(*conn_, call, std::move(reply), delivered_at, refused);
      if (refused) o.released.push_back(std::move(*refused));
      conn_->Poll();
      CollectUpcalls(deferred);
      wake = conn_->poll_deadline();
      UpdateInterest();
    }
  }
  RunOutcomes(o);
  Defer(std::move(deferred));
  if (wake) WakeBy(*wake);
  return st;
}

void ChannelCore::Shutdown() {
  // First the loop lets go of this Channel, so that everything after runs
  // here alone (callers of Submit aside, which the flag turns away).
  loop_->RunSync([this] {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    Unwatch(conn_watch_);
    Unwatch(connecting_watch_);
    if (registered_) loop_->Remove(this);
    registered_ = false;
  });
  Outcomes o;
  Clock::time_point since = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
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
  if (conn_ != nullptr) conn_->Disconnect();
  while (conn_ != nullptr) {
    conn_->Poll(/*readable=*/true);
    CollectUpcalls(o);
    if (conn_->finished() || Clock::now() - since > kDrainGuard) break;
    const int fd = conn_->endpoint().event_fd();
    lock.unlock();
    RunOutcomes(o);
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
  for (ReleasingReply& r : replies_.TakeAll())
    o.dropped.push_back(std::move(r));
  if (conn_ != nullptr) {
    past_ += conn_->counters();
    last_info_ = conn_->info();
    conn_.reset();
  }
  lock.unlock();
  RunOutcomes(o);
  // Outcomes handed to the loop before now run before the Channel is gone.
  loop_->RunSync([] {});
  handler_pool_.reset();  // runs what was handed to it, then joins
}

Counters ChannelCore::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Summed over every connection of the Channel; credits_granted is the
  // current connection's (0 while there is none or before its first reply).
  Counters c = past_;
  c.credits_granted = 0;
  if (conn_ != nullptr) c += conn_->counters();
  c.reconnects = reconnects_;
  return c;
}

Metrics ChannelCore::metrics() const {
  Metrics m;
  m.counters = counters();
  std::lock_guard<std::mutex> lock(mu_);
  if (conn_ != nullptr) m.connections.push_back(conn_->metrics());
  return m;
}

ConnectionInfo ChannelCore::connection_info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conn_ != nullptr ? conn_->info() : last_info_;
}

}  // namespace rpcrdma::api_internal
