#include "plugin/api/server_connection.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/server_core.h"
#include "plugin/runtime/event_loop.h"

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
      idle_timeout_(resolved.idle_timeout),
      request_deadline_(resolved.request_deadline),
      backchannel_enabled_(resolved.backchannel_enabled),
      driver_(*this, loop, resolved.busy_poll_us),
      idle_(resolved.idle_timeout, Clock::now()),
      abandoned_(resolved.abandoned_call_timeout) {
  driver_.conn() = std::move(conn);
  driver_.version_two() = VersionTwoUser(server->version_two());
  driver_.set_connection_id(id_);
}

ServerConnection::~ServerConnection() = default;

void ServerConnection::UpdateInterest() {
  if (driver_.conn() != nullptr && driver_.registered()) {
    driver_.loop()->Modify(&driver_,
                           driver_.conn()->endpoint().event_fd_events());
  }
}

absl::Status ServerConnection::Start(
    absl::Span<const uint8_t> peer_private_data) {
  std::lock_guard<std::mutex> lock(driver_.mu());
  driver_.conn()->Connected(peer_private_data);
  driver_.conn()->Poll();
  if (absl::Status s =
          driver_.loop()->Add(&driver_, driver_.conn()->endpoint().event_fd(),
                              driver_.conn()->endpoint().event_fd_events());
      !s.ok()) {
    return s;
  }
  driver_.set_registered(true);
  driver_.PostWork();
  return absl::OkStatus();
}

void ServerConnection::RunHandler(HandlerJob& job) { server_->RunHandler(job); }

absl::Status ServerConnection::Refuses(Use use) const {
  switch (use) {
    case Use::kReply:
      if (shared_->stopped.load()) {
        return absl::FailedPreconditionError("responder: the Server is gone");
      }
      return absl::OkStatus();
    case Use::kVersionTwoOperation:
      if (driver_.conn() == nullptr || driver_.conn()->disconnected() ||
          shutting_down_) {
        return absl::NotFoundError(absl::StrCat("server: no connection ", id_));
      }
      return absl::OkStatus();
    case Use::kVersionTwoAnswer:
      break;
  }
  return absl::UnavailableError(
      absl::StrCat("server: connection ", id_, " is gone"));
}

uint64_t ServerConnection::budget_releases() const {
  return shared_->budget.releases();
}

std::optional<Clock::time_point> ServerConnection::Drive(Clock::time_point now,
                                                         bool readable,
                                                         Outcomes& o) {
  std::optional<Clock::time_point> next = DriveConnection(now, readable, o);
  ReportMemory(o);
  if (o.retired) {
    o.notices.push_back([server = server_, id = id_] { server->Retired(id); });
  }
  return next;
}

void ServerConnection::ReportMemory(Outcomes& o) {
  bool awaiting = false;
  bool awaiting_changed = false;
  if (driver_.conn() != nullptr) {
    awaiting = driver_.conn()->engine().calls_awaiting_memory() > 0;
    awaiting_changed = awaiting != awaiting_memory_;
    awaiting_memory_ = awaiting;
  } else if (awaiting_memory_) {
    awaiting_memory_ = false;
    awaiting_changed = true;
  }
  if (awaiting_changed) {
    o.notices.push_back([self = shared_from_this(), awaiting] {
      self->server_->AwaitingMemory(self, awaiting);
    });
  }
  const uint64_t releases = shared_->budget.releases();
  if (releases != budget_releases_seen_) {
    budget_releases_seen_ = releases;
    // Memory this connection freed may let another's waiting calls start.
    o.notices.push_back([self = shared_from_this()] {
      self->server_->BudgetReleased(self.get());
    });
  }
}

void ServerConnection::ReportClosed(Outcomes& o) {
  if (closed_reported_) return;
  closed_reported_ = true;
  o.notices.push_back([server = server_, id = id_, status = ClosedStatus()] {
    server->Notify(ServerConnectionEvent{ServerConnectionEvent::Type::kClosed,
                                         ConnectionId(id), "", status});
  });
}

std::optional<Clock::time_point> ServerConnection::DriveConnection(
    Clock::time_point now, bool readable, Outcomes& o) {
  if (driver_.conn() == nullptr) return std::nullopt;
  std::optional<Clock::time_point> next;
  auto sooner = [&next](std::optional<Clock::time_point> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  driver_.conn()->Poll(readable);
  driver_.CollectUpcalls(o);
  if (!driver_.conn()->disconnected() && !shutting_down_) {
    EnforceLimits(now);
    sooner(idle_.deadline());
    sooner(abandoned_.next_check());
  }
  ExpireBackward(now);
  for (const auto& [call, b] : backward_) {
    if (b.deadline && !b.ending) sooner(b.deadline);
  }
  driver_.conn()->Poll();  // what this round's own operations completed
  driver_.CollectUpcalls(o);
  if (driver_.conn()->disconnected()) {
    // Reported once every call that arrived has reached the handler
    // (delivery happens in the polls above, before this).
    ReportClosed(o);
    if (!lost_since_) lost_since_ = now;
    if (driver_.conn()->finished()) {
      Retire(o);
      return std::nullopt;
    }
    sooner(now + kDrainPoll);
  }
  sooner(driver_.conn()->poll_deadline());
  return next;
}

absl::Status ServerConnection::ClosedStatus() const {
  if (!closed_why_.empty()) {
    return absl::UnavailableError(
        absl::StrCat("connection closed: ", closed_why_));
  }
  if (!driver_.conn()->orderly_end()) {
    return absl::UnavailableError(
        absl::StrCat("connection lost: ", driver_.conn()->lost_reason().empty()
                                              ? "cause unknown"
                                              : driver_.conn()->lost_reason()));
  }
  return absl::OkStatus();
}

void ServerConnection::OnUpcall(engine::Action& a, Outcomes& o) {
  if (auto* d = std::get_if<engine::DeliverCall>(&a)) {
    ++calls_in_progress_;
    o.calls.push_back(HandlerJob{
        &server_->handler(),
        IncomingCall{ConnectionId(id_), d->xid, std::move(d->message),
                     std::move(d->write_chunk_capacities),
                     d->reply_chunk_capacity},
        ResponderAccess::Make(driver_.SharedReplyTarget(),
                              /*generation=*/0, d->call, d->xid,
                              Clock::now())});
  } else if (std::holds_alternative<engine::ReplySent>(a)) {
    if (calls_in_progress_ > 0) --calls_in_progress_;
  } else if (auto* c = std::get_if<engine::CompleteCall>(&a)) {
    auto it = backward_.find(c->call);
    if (it == backward_.end()) return;
    driver_.conn()->RecordCallRtt(Clock::now() - it->second.started);
    o.completions.emplace_back(
        std::move(it->second.done),
        Reply{std::move(c->reply), std::move(c->result_lengths)});
    backward_.erase(it);
  } else if (auto* f = std::get_if<engine::FailCall>(&a)) {
    auto it = backward_.find(f->call);
    if (it == backward_.end()) return;
    o.completions.emplace_back(std::move(it->second.done),
                               std::move(f->status));
    backward_.erase(it);
  }
}

// Idle connections and abandoned backward calls (server.h).
void ServerConnection::EnforceLimits(Clock::time_point now) {
  const engine::Engine& e = driver_.conn()->engine();
  const bool busy = calls_in_progress_ > 0 || e.calls_outstanding() > 0 ||
                    e.calls_queued() > 0 || e.calls_awaiting_memory() > 0;
  if (idle_.Expired(driver_.conn()->activity(), busy, now)) {
    driver_.conn()->Count(&Counters::idle_closes);
    closed_why_ = absl::StrCat("idle for ", idle_timeout_.count(), " ms");
    ReportConnectionEvent(absl::StrCat("server ", server_->uri(),
                                       ": closing connection ", id_, ": ",
                                       closed_why_));
    driver_.conn()->Disconnect();
    return;
  }
  if (std::optional<std::string> why = abandoned_.Check(e, now)) {
    driver_.conn()->Count(&Counters::abandoned_call_disconnects);
    closed_why_ = *why;
    ReportConnectionEvent(absl::StrCat(
        "server ", server_->uri(), ": closing connection ", id_, ": ", *why));
    driver_.conn()->Disconnect();
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
    driver_.conn()->Cancel(
        call, absl::DeadlineExceededError("server: deadline exceeded"));
  }
}

void ServerConnection::Retire(Outcomes& o) {
  final_counters_ = driver_.conn()->counters();
  for (ReleasingReply& r : driver_.replies().TakeAll())
    o.dropped.push_back(std::move(r));
  // Backward calls whose connection outlived the drain guard.
  for (auto& [call, b] : backward_) {
    o.completions.emplace_back(std::move(b.done),
                               absl::UnavailableError("server: shut down"));
  }
  backward_.clear();
  driver_.loop()->Remove(&driver_);
  driver_.set_registered(false);
  driver_.conn().reset();
  o.retired = true;
}

CallId ServerConnection::Call(CallRequest request, Server::Callback done) {
  CallId id;
  Outcomes o;
  absl::Status refused;
  std::optional<Clock::time_point> wake;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    if (!backchannel_enabled_) {
      refused = absl::FailedPreconditionError(
          "server: backchannel disabled in the configuration");
    } else if (driver_.conn() == nullptr || driver_.conn()->disconnected() ||
               shutting_down_) {
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
      absl::StatusOr<engine::CallId> eid =
          driver_.conn()->StartCall(std::move(call));
      if (!eid.ok()) {
        refused = eid.status();
      } else {
        std::optional<Clock::time_point> deadline = request.deadline;
        if (!deadline && request_deadline_.count() > 0) {
          deadline = started + request_deadline_;
        }
        backward_[*eid] = Backward{std::move(done), deadline, false, started};
        // The engine numbers the connection's calls from 1, never again.
        id = CallId(eid->value());
        wake = deadline;
      }
      if (auto due = driver_.PollAfterOperation(o);
          due && (!wake || *due < *wake)) {
        wake = due;
      }
    }
  }
  if (!refused.ok()) done(std::move(refused));
  driver_.Defer(std::move(o));
  if (wake) driver_.WakeBy(*wake);
  return id;
}

void ServerConnection::Cancel(CallId call) {
  Outcomes o;
  bool abandoned = false;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    auto it = backward_.find(engine::CallId(call.value()));
    if (it == backward_.end() || it->second.ending ||
        driver_.conn() == nullptr) {
      return;
    }
    it->second.ending = true;
    driver_.conn()->Cancel(
        it->first, absl::CancelledError("server: backward call cancelled"));
    abandoned = driver_.CollectAfterCancel(o);
  }
  driver_.Defer(std::move(o));
  // The abandoned-call rule (server.h).
  if (abandoned) driver_.WakeBy(Clock::now());
}

void ServerConnection::ResumeAwaitingMemory() {
  Outcomes o;
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    if (driver_.conn() == nullptr || driver_.conn()->disconnected() ||
        driver_.conn()->engine().calls_awaiting_memory() == 0) {
      return;
    }
    driver_.conn()->OnBudgetReleased();
    driver_.conn()->Poll();
    driver_.CollectUpcalls(o);
    UpdateInterest();
  }
  driver_.Defer(std::move(o));  // called from another connection's loop
}

bool ServerConnection::Close(absl::string_view reason) {
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    if (driver_.conn() == nullptr || driver_.conn()->disconnected() ||
        shutting_down_ || !closed_why_.empty()) {
      return false;
    }
    closed_why_ = absl::StrCat("closed by the server: ", reason);
    ReportConnectionEvent(absl::StrCat("server ", server_->uri(),
                                       ": closing connection ", id_, ": ",
                                       closed_why_));
    driver_.conn()->Disconnect();
  }
  driver_.PostWork();
  return true;
}

void ServerConnection::BeginShutdown() {
  std::lock_guard<std::mutex> lock(driver_.mu());
  shutting_down_ = true;
  if (driver_.conn() != nullptr) driver_.conn()->Disconnect();
  driver_.PostWork();
}

void ServerConnection::ForceRetire() {
  std::shared_ptr<ServerConnection> self = shared_from_this();
  driver_.loop()->RunSync([this] {
    Outcomes o;
    {
      std::lock_guard<std::mutex> lock(driver_.mu());
      if (driver_.conn() == nullptr) return;
      ReportClosed(o);
      Retire(o);
    }
    driver_.RunOutcomes(o);
    server_->Retired(id_);
  });
}

Counters ServerConnection::counters() const {
  std::lock_guard<std::mutex> lock(driver_.mu());
  return driver_.conn() != nullptr ? driver_.conn()->counters()
                                   : final_counters_;
}

std::optional<ConnectionInfo> ServerConnection::info() const {
  std::lock_guard<std::mutex> lock(driver_.mu());
  if (driver_.conn() == nullptr) return std::nullopt;
  return driver_.conn()->info();
}

ConnectionMetrics ServerConnection::metrics() const {
  std::lock_guard<std::mutex> lock(driver_.mu());
  if (driver_.conn() != nullptr) return driver_.conn()->metrics();
  ConnectionMetrics m;
  m.connection = ConnectionId(id_);
  m.counters = final_counters_;
  return m;
}

}  // namespace rpcrdma::api_internal
