#include "plugin/api/server_connection.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/server_core.h"

namespace rpcrdma::api_internal {

namespace {

constexpr auto kDrainPoll = std::chrono::milliseconds(10);

}  // namespace

ServerConnection::ServerConnection(ServerCore* server,
                                   std::shared_ptr<ServerShared> shared,
                                   uint64_t id, runtime::EventLoop* loop,
                                   const config::ResolvedConfig& resolved,
                                   std::unique_ptr<Connection> conn)
    : server_(server),
      shared_(std::move(shared)),
      id_(id),
      loop_(loop),
      idle_timeout_(resolved.idle_timeout),
      request_deadline_(resolved.request_deadline),
      backchannel_enabled_(resolved.backchannel_enabled),
      busy_poll_us_(resolved.busy_poll_us),
      conn_(std::move(conn)),
      idle_(resolved.idle_timeout, Clock::now()),
      abandoned_(resolved.abandoned_call_timeout),
      v2_(server->version_two()) {}

ServerConnection::~ServerConnection() = default;

void ServerConnection::UpdateInterest() {
  if (conn_ != nullptr && registered_) {
    loop_->Modify(this, conn_->endpoint().event_fd_events());
  }
}

absl::Status ServerConnection::Start(
    absl::Span<const uint8_t> peer_private_data) {
  std::lock_guard<std::mutex> lock(mu_);
  conn_->Connected(peer_private_data);
  conn_->Poll();
  if (absl::Status s = loop_->Add(this, conn_->endpoint().event_fd(),
                                  conn_->endpoint().event_fd_events());
      !s.ok()) {
    return s;
  }
  registered_ = true;
  std::weak_ptr<ServerConnection> weak = weak_from_this();
  loop_->Post([weak] {
    if (auto self = weak.lock()) self->Work(/*readable=*/false);
  });
  return absl::OkStatus();
}

void ServerConnection::OnDeadline() { Work(/*readable=*/false); }

bool ServerConnection::Spin() {
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

void ServerConnection::WakeBy(Clock::time_point when) {
  if (when.time_since_epoch().count() >= scheduled_ns_.load()) return;
  std::weak_ptr<ServerConnection> weak = weak_from_this();
  loop_->Post([weak] {
    if (auto self = weak.lock()) self->Work(/*readable=*/false);
  });
}

void ServerConnection::Work(bool readable) {
  // Retiring drops the Server's reference; this one keeps the connection
  // alive until the round is over.
  std::shared_ptr<ServerConnection> self = shared_from_this();
  Outcomes o;
  std::optional<Clock::time_point> next;
  bool awaiting = false;
  bool awaiting_changed = false;
  bool budget_released = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!registered_) return;
    next = Drive(Clock::now(), readable, o);
    UpdateInterest();
    // Published under the lock (see ChannelCore::Work).
    scheduled_ns_.store(next ? next->time_since_epoch().count()
                             : std::numeric_limits<int64_t>::max());
    if (conn_ != nullptr) {
      awaiting = conn_->engine().calls_awaiting_memory() > 0;
      awaiting_changed = awaiting != awaiting_memory_;
      awaiting_memory_ = awaiting;
    } else if (awaiting_memory_) {
      awaiting_memory_ = false;
      awaiting_changed = true;
    }
    const uint64_t releases = shared_->budget.releases();
    budget_released = releases != budget_releases_seen_;
    budget_releases_seen_ = releases;
  }
  RunOutcomes(o);
  if (awaiting_changed) server_->AwaitingMemory(self, awaiting);
  // Memory this connection freed may let another's waiting calls start.
  if (budget_released) server_->BudgetReleased(this);
  if (o.retired) {
    server_->Retired(id_);
    return;
  }
  // Exactly the next time this connection needs the loop: a deadline left
  // earlier would wake the loop for nothing.
  loop_->SetDeadline(this, next);
}

void ServerConnection::Defer(Outcomes o) {
  if (o.calls.empty() && o.completions.empty() && o.released.empty() &&
      o.dropped.empty() && !o.closed && o.jobs.empty()) {
    return;
  }
  auto outcomes = std::make_shared<Outcomes>(std::move(o));
  loop_->Post(
      [self = shared_from_this(), outcomes] { self->RunOutcomes(*outcomes); });
}

void ServerConnection::RunOutcomes(Outcomes& o) {
  for (HandlerJob& job : o.calls) server_->RunHandler(job);
  for (auto& [done, result] : o.completions) done(std::move(result));
  for (std::function<void()>& job : o.jobs) job();
  if (o.closed) {
    server_->Notify(ServerConnectionEvent{ServerConnectionEvent::Type::kClosed,
                                          ConnectionId(id_), "",
                                          std::move(*o.closed)});
  }
  // Replies in o.released and o.dropped are released as `o` goes.
}

std::optional<Clock::time_point> ServerConnection::Drive(Clock::time_point now,
                                                         bool readable,
                                                         Outcomes& o) {
  if (conn_ == nullptr) return std::nullopt;
  std::optional<Clock::time_point> next;
  auto sooner = [&next](std::optional<Clock::time_point> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  conn_->Poll(readable);
  CollectUpcalls(o);
  if (!conn_->disconnected() && !shutting_down_) {
    EnforceLimits(now);
    sooner(idle_.deadline());
    sooner(abandoned_.next_check());
  }
  ExpireBackward(now);
  for (const auto& [call, b] : backward_) {
    if (b.deadline && !b.ending) sooner(b.deadline);
  }
  conn_->Poll();  // what this round's own operations completed
  CollectUpcalls(o);
  if (conn_->disconnected()) {
    // Reported once every call that arrived has reached the handler
    // (delivery happens in the polls above, before this).
    if (!closed_reported_) {
      closed_reported_ = true;
      o.closed = ClosedStatus();
    }
    if (!lost_since_) lost_since_ = now;
    if (conn_->finished()) {
      Retire(o);
      return std::nullopt;
    }
    sooner(now + kDrainPoll);
  }
  sooner(conn_->poll_deadline());
  return next;
}

absl::Status ServerConnection::ClosedStatus() const {
  if (!closed_why_.empty()) {
    return absl::UnavailableError(
        absl::StrCat("connection closed: ", closed_why_));
  }
  if (!conn_->orderly_end()) {
    return absl::UnavailableError(absl::StrCat(
        "connection lost: ",
        conn_->lost_reason().empty() ? "cause unknown" : conn_->lost_reason()));
  }
  return absl::OkStatus();
}

void ServerConnection::CollectUpcalls(Outcomes& o) {
  if (conn_ == nullptr || !conn_->has_upcalls()) return;
  std::vector<engine::Action>& upcalls = upcall_scratch_;
  conn_->TakeUpcalls(upcalls);
  for (engine::Action& a : upcalls) {
    if (v2_.Collect(a, ConnectionId(id_), /*generation=*/0, weak_from_this(),
                    o.jobs)) {
      continue;
    }
    if (auto* d = std::get_if<engine::DeliverCall>(&a)) {
      ++calls_in_progress_;
      o.calls.push_back(HandlerJob{
          &server_->handler(),
          IncomingCall{ConnectionId(id_), d->xid, std::move(d->message),
                       std::move(d->write_chunk_capacities),
                       d->reply_chunk_capacity},
          ResponderAccess::Make(shared_from_this(), /*generation=*/0, d->call,
                                d->xid, Clock::now())});
    } else if (auto* r = std::get_if<engine::ReplySent>(&a)) {
      if (calls_in_progress_ > 0) --calls_in_progress_;
      if (auto released = replies_.Sent(*conn_, r->call)) {
        o.released.push_back(std::move(*released));
      }
    } else if (auto* c = std::get_if<engine::CompleteCall>(&a)) {
      auto it = backward_.find(c->call);
      if (it == backward_.end()) continue;
      conn_->RecordCallRtt(Clock::now() - it->second.started);
      o.completions.emplace_back(
          std::move(it->second.done),
          Reply{std::move(c->reply), std::move(c->result_lengths)});
      backward_.erase(it);
    } else if (auto* f = std::get_if<engine::FailCall>(&a)) {
      auto it = backward_.find(f->call);
      if (it == backward_.end()) continue;
      o.completions.emplace_back(std::move(it->second.done),
                                 std::move(f->status));
      backward_.erase(it);
    }
  }
}

// Idle connections and abandoned backward calls (server.h).
void ServerConnection::EnforceLimits(Clock::time_point now) {
  const engine::Engine& e = conn_->engine();
  const bool busy = calls_in_progress_ > 0 || e.calls_outstanding() > 0 ||
                    e.calls_queued() > 0 || e.calls_awaiting_memory() > 0;
  if (idle_.Expired(conn_->activity(), busy, now)) {
    conn_->Count(&Counters::idle_closes);
    closed_why_ = absl::StrCat("idle for ", idle_timeout_.count(), " ms");
    ReportConnectionEvent(absl::StrCat("server ", server_->uri(),
                                       ": closing connection ", id_, ": ",
                                       closed_why_));
    conn_->Disconnect();
    return;
  }
  if (std::optional<std::string> why = abandoned_.Check(e, now)) {
    conn_->Count(&Counters::abandoned_call_disconnects);
    closed_why_ = *why;
    ReportConnectionEvent(absl::StrCat(
        "server ", server_->uri(), ": closing connection ", id_, ": ", *why));
    conn_->Disconnect();
  }
}

// Deadlines of backward calls, enforced here: the engine has no clock.
void ServerConnection::ExpireBackward(Clock::time_point now) {
  std::vector<engine::CallId> expired;
  for (auto& [call, b] : backward_) {
    if (b.deadline && *b.deadline <= now && !b.ending) {
      b.ending = true;
      expired.push_back(call);
    }
  }
  for (engine::CallId call : expired) {
    conn_->Cancel(call,
                  absl::DeadlineExceededError("server: deadline exceeded"));
  }
}

void ServerConnection::Retire(Outcomes& o) {
  final_counters_ = conn_->counters();
  for (ReleasingReply& r : replies_.TakeAll())
    o.dropped.push_back(std::move(r));
  // Backward calls whose connection outlived the drain guard.
  for (auto& [call, b] : backward_) {
    o.completions.emplace_back(std::move(b.done),
                               absl::UnavailableError("server: shut down"));
  }
  backward_.clear();
  loop_->Remove(this);
  registered_ = false;
  conn_.reset();
  o.retired = true;
}

void ServerConnection::Call(CallRequest request, Server::Callback done) {
  Outcomes o;
  absl::Status refused;
  std::optional<Clock::time_point> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!backchannel_enabled_) {
      refused = absl::FailedPreconditionError(
          "server: backchannel disabled in the configuration");
    } else if (conn_ == nullptr || conn_->disconnected() || shutting_down_) {
      refused =
          absl::NotFoundError(absl::StrCat("server: no connection ", id_));
    } else {
      engine::OutgoingCall call;
      call.xdr = std::move(request.xdr);
      for (const CallArgument& a : request.arguments) {
        call.arguments.push_back(engine::DdpArgument{
            a.position, absl::Span<uint8_t>(const_cast<uint8_t*>(a.data.data()),
                                            a.data.size())});
      }
      call.results = request.results;
      call.max_reply_size = request.max_reply_size;
      const Clock::time_point started = Clock::now();
      absl::StatusOr<engine::CallId> eid = conn_->StartCall(std::move(call));
      if (!eid.ok()) {
        refused = eid.status();
      } else {
        std::optional<Clock::time_point> deadline = request.deadline;
        if (!deadline && request_deadline_.count() > 0) {
          deadline = started + request_deadline_;
        }
        backward_[*eid] = Backward{std::move(done), deadline, false, started};
        wake = deadline;
      }
      conn_->Poll();
      CollectUpcalls(o);
      if (auto due = conn_->poll_deadline(); due && (!wake || *due < *wake)) {
        wake = due;
      }
      UpdateInterest();
    }
  }
  if (!refused.ok()) done(std::move(refused));
  Defer(std::move(o));
  if (wake) WakeBy(*wake);
}

void ServerConnection::ResumeAwaitingMemory() {
  Outcomes o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (conn_ == nullptr || conn_->disconnected() ||
        conn_->engine().calls_awaiting_memory() == 0) {
      return;
    }
    conn_->OnBudgetReleased();
    conn_->Poll();
    CollectUpcalls(o);
    UpdateInterest();
  }
  Defer(std::move(o));  // called from another connection's loop
}

absl::Status ServerConnection::SendReply(uint64_t /*generation*/,
                                         engine::CallId call,
                                         HandlerReply reply,
                                         Clock::time_point delivered_at) {
  return Answer(call, std::move(reply), delivered_at, std::nullopt);
}

void ServerConnection::SendDroppedReply(uint64_t /*generation*/,
                                        engine::CallId call, uint32_t xid,
                                        HandlerReply reply,
                                        Clock::time_point delivered_at) {
  // A destructor's: nobody to tell of a refusal.
  (void)Answer(call, std::move(reply), delivered_at, xid);
}

absl::Status ServerConnection::Answer(engine::CallId call, HandlerReply reply,
                                      Clock::time_point delivered_at,
                                      std::optional<uint32_t> dropped_xid) {
  Outcomes o;  // a refused reply, released here
  Outcomes deferred;
  absl::Status st;
  std::optional<Clock::time_point> wake;
  bool budget_released = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shared_->stopped.load()) {
      o.released.emplace_back(std::move(reply));
      st = absl::FailedPreconditionError("responder: the Server is gone");
    } else if (conn_ == nullptr || conn_->disconnected()) {
      o.released.emplace_back(std::move(reply));  // dropped with its connection
    } else {
      const uint64_t releases = shared_->budget.releases();
      std::optional<ReleasingReply> refused;
      st = replies_.Send(*conn_, call, std::move(reply), delivered_at, refused);
      if (dropped_xid && st.ok() && !refused) {
        conn_->LogDroppedResponder(*dropped_xid);
      }
      if (refused) o.released.push_back(std::move(*refused));
      conn_->Poll();
      CollectUpcalls(deferred);
      wake = conn_->poll_deadline();
      UpdateInterest();
      // An ERR_CHUNK answer ends the call at once and frees its memory.
      budget_released = shared_->budget.releases() != releases;
    }
  }
  RunOutcomes(o);
  Defer(std::move(deferred));
  if (budget_released) WakeBy(Clock::now());
  if (wake) WakeBy(*wake);
  return st;
}

bool ServerConnection::Close(absl::string_view reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (conn_ == nullptr || conn_->disconnected() || shutting_down_ ||
        !closed_why_.empty()) {
      return false;
    }
    closed_why_ = absl::StrCat("closed by the server: ", reason);
    ReportConnectionEvent(absl::StrCat("server ", server_->uri(),
                                       ": closing connection ", id_, ": ",
                                       closed_why_));
    conn_->Disconnect();
  }
  std::weak_ptr<ServerConnection> weak = weak_from_this();
  loop_->Post([weak] {
    if (auto self = weak.lock()) self->Work(/*readable=*/false);
  });
  return true;
}

void ServerConnection::BeginShutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  if (conn_ != nullptr) conn_->Disconnect();
  std::weak_ptr<ServerConnection> weak = weak_from_this();
  loop_->Post([weak] {
    if (auto self = weak.lock()) self->Work(/*readable=*/false);
  });
}

void ServerConnection::ForceRetire() {
  std::shared_ptr<ServerConnection> self = shared_from_this();
  loop_->RunSync([this] {
    Outcomes o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (conn_ == nullptr) return;
      if (!closed_reported_) {
        closed_reported_ = true;
        o.closed = ClosedStatus();
      }
      Retire(o);
    }
    RunOutcomes(o);
    server_->Retired(id_);
  });
}

Counters ServerConnection::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conn_ != nullptr ? conn_->counters() : final_counters_;
}

std::optional<ConnectionInfo> ServerConnection::info() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn_ == nullptr) return std::nullopt;
  return conn_->info();
}

ConnectionMetrics ServerConnection::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn_ != nullptr) return conn_->metrics();
  ConnectionMetrics m;
  m.connection = ConnectionId(id_);
  m.counters = final_counters_;
  return m;
}

}  // namespace rpcrdma::api_internal
