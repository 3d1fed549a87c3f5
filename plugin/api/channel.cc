#include "rpcrdma/channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/connection.h"
#include "plugin/api/limits.h"
#include "plugin/api/responder_queue.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace api_internal {

// Waits up to 100 ms, and not past `until`, for `fd` to become readable;
// false once `until` has passed.
bool WaitReadable(int fd, Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - Clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, POLLIN, 0};
  poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
  return true;
}

class ChannelLoop {
 public:
  explicit ChannelLoop(Channel::BackwardHandler backward_handler)
      : backward_handler_(std::move(backward_handler)) {}

  ~ChannelLoop() {
    if (queue_ != nullptr) queue_->Close();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    Wake();
    if (thread_.joinable()) thread_.join();
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  absl::Status Start(absl::string_view uri,
                     const config::TransportConfig& config) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return absl::InternalError("eventfd failed");
    queue_ = std::make_shared<ReplyQueue>(wake_fd_);
    absl::StatusOr<ParsedUri> parsed = ParseUri(uri);
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<std::unique_ptr<fabric::Fabric>> fab =
        MakeFabricFor(*parsed, config);
    if (!fab.ok()) return fab.status();
    fabric_ = std::move(*fab);
    absl::StatusOr<std::shared_ptr<CaptureTap>> capture =
        OpenCaptureFor(config);
    if (!capture.ok()) return capture.status();
    capture_ = std::move(*capture);
    config::ResolvedConfig resolved = config::Resolve(config);
    default_deadline_ = resolved.request_deadline;
    connect_timeout_ = resolved.connect_timeout;
    backoff_initial_ = resolved.reconnect_backoff_initial;
    backoff_max_ = resolved.reconnect_backoff_max;
    backoff_ = backoff_initial_;
    idle_timeout_ = resolved.idle_timeout;
    abandoned_ = AbandonedCallWatch(resolved.abandoned_call_timeout);
    address_ = parsed->address;
    uri_ = std::string(uri);
    ecfg_ = EngineConfigFor(resolved, Role::kRequester,
                            backward_handler_ != nullptr);
    if (resolved.inline_settings.cm_private_data) {
      engine::Engine probe(ecfg_, nullptr);
      auto pd = probe.LocalPrivateData();
      private_data_.assign(pd.begin(), pd.end());
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
    Clock::time_point until = Clock::now() + resolved.connect_timeout;
    std::optional<fabric::ConnectionEvent> ev;
    while (!(ev = (*ep)->PollConnectionEvent())) {
      if (!WaitReadable((*ep)->event_fd(), until)) {
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
    conn_ = MakeConnection(std::move(*ep));
    idle_.emplace(idle_timeout_, Clock::now());
    conn_->Connected(ev->private_data, DrawXid());
    if (absl::Status s = AwaitVersion(uri, until); !s.ok()) {
      conn_->Disconnect();
      return s;
    }
    thread_ = std::thread([this] { Loop(); });
    return absl::OkStatus();
  }

  // draft-cel-nfsv4-rpcrdma-version-two-04 §7: with version two offered,
  // Create returns once the peer has answered the probe.
  absl::Status AwaitVersion(absl::string_view uri, Clock::time_point until) {
    while (conn_->engine().negotiating() && !conn_->disconnected()) {
      if (!WaitReadable(conn_->endpoint().event_fd(), until)) {
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
    // §7.2: a peer that answered ERR_VERS is not asked again on a
    // reconnect.
    ecfg_.offered_version = conn_->engine().version();
    return absl::OkStatus();
  }

  // XIDs of version probes: drawn at random, as RPC clients draw their
  // first XID, so that they do not repeat across connections.
  uint32_t DrawXid() {
    if (ecfg_.offered_version < 2) return 0;
    return static_cast<uint32_t>(rng_());
  }

  Channel::CallId Submit(CallRequest request, Channel::Callback done) {
    std::unique_lock<std::mutex> lock(mu_);
    Channel::CallId id = next_id_++;
    // While the connection is down only calls that allow a retry wait.
    if (stopping_ ||
        (!connected_ && !idle_closed_ && !request.retry_on_reconnect)) {
      lock.unlock();
      done(absl::UnavailableError("channel: connection lost"));
      return id;
    }
    commands_.push_back(
        Command{id, std::move(request), std::move(done), false});
    lock.unlock();
    Wake();
    return id;
  }

  void Cancel(Channel::CallId id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(Command{id, {}, nullptr, true});
    }
    Wake();
  }

  // Summed over every connection of the Channel; credits_granted is the
  // current connection's (0 while there is none or before its first reply).
  Counters counters() const {
    std::lock_guard<std::mutex> lock(counters_mu_);
    Counters c = past_;
    c.credits_granted = 0;
    if (conn_ != nullptr) c += conn_->counters();
    c.reconnects = reconnects_;
    return c;
  }
  Metrics metrics() const {
    Metrics m;
    m.counters = counters();
    std::lock_guard<std::mutex> lock(counters_mu_);
    if (conn_ != nullptr) m.connections.push_back(conn_->metrics());
    return m;
  }
  bool connected() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connected_;
  }
  ConnectionInfo connection_info() const {
    std::lock_guard<std::mutex> lock(counters_mu_);
    return conn_ != nullptr ? conn_->info() : last_info_;
  }

 private:
  struct Command {
    Channel::CallId id = 0;
    CallRequest request;
    Channel::Callback done;
    bool cancel = false;
  };
  struct Pending {
    // Unset while the call waits for a connection (held for a re-send).
    std::optional<engine::CallId> engine_id;
    Channel::Callback done;
    std::optional<Clock::time_point> deadline;
    // Kept for a re-send when the caller allows it; otherwise moved into
    // the engine when the call is started.
    CallRequest request;
    // Set when a deadline or Cancel() ended the call while the engine still
    // had it: the status it ends with, even if the connection goes first.
    std::optional<absl::Status> ending;
    Clock::time_point sent_at;  // handed to the current engine (call_rtt)
  };

  void Wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) {
      ssize_t n = write(wake_fd_, &one, sizeof one);
      (void)n;
    }
  }

  std::unique_ptr<Connection> MakeConnection(
      std::unique_ptr<fabric::Endpoint> endpoint) {
    // The remote invalidation bit must match what was sent, so the
    // connection recomputes nothing: the engine config is used as sent.
    Connection::Hooks hooks;
    hooks.complete = [this](engine::CompleteCall& c) {
      Finish(c.call, Reply{std::move(c.reply), std::move(c.result_lengths)});
    };
    hooks.fail = [this](engine::FailCall& f) {
      Finish(f.call, std::move(f.status));
    };
    // Backward calls (RFC 8167). Replies name the connection they belong
    // to, so that one for a lost connection is dropped.
    const uint64_t generation = ++generation_;
    if (backward_handler_) {
      hooks.deliver = [this, generation](engine::DeliverCall& d) {
        IncomingCall call{0, d.xid, std::move(d.message),
                          std::move(d.write_chunk_capacities),
                          d.reply_chunk_capacity};
        backward_handler_(std::move(call),
                          ResponderAccess::Make(queue_, generation, d.call));
      };
      hooks.reply_sent = [this, generation](engine::ReplySent& r) {
        replies_.Sent(generation, r.call);
      };
    }
    AttachCapture(capture_, Role::kRequester, hooks);
    auto conn = std::make_unique<Connection>(
        std::move(endpoint), ecfg_, Role::kRequester, std::move(hooks));
    conn->SetLogContext(generation, absl::StrCat("channel to ", uri_));
    return conn;
  }

  // Delivers the outcome of the call and forgets it.
  void Complete(Channel::CallId id, absl::StatusOr<Reply> result) {
    auto p = pending_.find(id);
    if (p == pending_.end()) return;
    Channel::Callback done = std::move(p->second.done);
    pending_.erase(p);
    done(std::move(result));
  }

  void Finish(engine::CallId engine_id, absl::StatusOr<Reply> result) {
    auto it = by_engine_.find(engine_id);
    if (it == by_engine_.end()) return;
    Channel::CallId id = it->second;
    by_engine_.erase(it);
    auto p = pending_.find(id);
    if (p == pending_.end()) return;
    // The engine reports a lost connection as UNAVAILABLE once every handle
    // of the call is invalidated; a call that allows it waits for the
    // reconnect instead.
    if (!result.ok() &&
        result.status().code() == absl::StatusCode::kUnavailable &&
        p->second.request.retry_on_reconnect && !shutting_down_ &&
        conn_->lost()) {
      if (p->second.ending) {
        absl::Status ending = *p->second.ending;
        Complete(id, std::move(ending));
        return;
      }
      p->second.engine_id.reset();
      return;
    }
    if (result.ok()) conn_->RecordCallRtt(Clock::now() - p->second.sent_at);
    Complete(id, std::move(result));
  }

  bool Up() const { return conn_ != nullptr && !conn_->disconnected(); }
  bool IdleClosed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return idle_closed_;
  }

  // The rules of channel.h on abandoned calls and idleness, after a round
  // of work on the live connection; returns when to look again.
  std::optional<Clock::time_point> EnforceLimits(Clock::time_point now) {
    if (!Up()) return std::nullopt;
    if (std::optional<std::string> why =
            abandoned_.Check(conn_->engine(), now)) {
      conn_->Count(&Counters::abandoned_call_disconnects);
      ReportConnectionEvent(
          absl::StrCat("channel to ", address_,
                       ": disconnecting to recover credits: ", *why));
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
      {
        std::lock_guard<std::mutex> lock(mu_);
        idle_closed_ = true;
      }
      conn_->Disconnect();
      return std::nullopt;
    }
    if (idle_) {
      std::optional<Clock::time_point> idle_due = idle_->deadline();
      if (idle_due && (!next || *idle_due < *next)) next = idle_due;
    }
    return next;
  }

  void Accept(Command& c) {
    std::optional<Clock::time_point> deadline = c.request.deadline;
    if (!deadline && default_deadline_.count() > 0) {
      deadline = Clock::now() + default_deadline_;
    }
    bool retry = c.request.retry_on_reconnect;
    if (!Up() && !retry && !IdleClosed()) {
      c.done(absl::UnavailableError("channel: connection lost"));
      return;
    }
    Pending& p = pending_[c.id];
    p.done = std::move(c.done);
    p.deadline = deadline;
    p.request = std::move(c.request);
    if (Up()) Send(c.id);
  }

  // Hands a call that is not in an engine to the current connection.
  void Send(Channel::CallId id) {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.engine_id) return;
    Pending& p = it->second;
    if (p.deadline && *p.deadline <= Clock::now()) {
      Complete(id, absl::DeadlineExceededError(
                       "channel: deadline passed before the call was sent"));
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
    for (const CallArgument& a : p.request.arguments) {
      call.arguments.push_back(engine::DdpArgument{
          a.position, absl::Span<uint8_t>(const_cast<uint8_t*>(a.data.data()),
                                          a.data.size())});
    }
    call.results = p.request.results;
    call.max_reply_size = p.request.max_reply_size;
    engine::Actions out;
    p.sent_at = Clock::now();
    absl::StatusOr<engine::CallId> eid =
        conn_->engine().StartCall(std::move(call), out);
    if (!eid.ok()) {
      conn_->Run(out);
      Complete(id, eid.status());
      return;
    }
    p.engine_id = *eid;
    by_engine_[*eid] = id;
    conn_->Run(out);
  }

  void CancelCall(Channel::CallId id, absl::Status status) {
    auto p = pending_.find(id);
    if (p == pending_.end()) return;
    if (!p->second.engine_id) {
      Complete(id, std::move(status));
      return;
    }
    if (p->second.ending) return;
    p->second.ending = status;
    engine::Actions out;
    conn_->engine().Cancel(*p->second.engine_id, std::move(status), out);
    conn_->Run(out);
  }

  // The lost connection has drained (or the guard ran out): its endpoint,
  // and with it every registration and handle of it, goes away.
  void Retire(Clock::time_point now) {
    Counters c = conn_->counters();
    last_loss_ = conn_->lost_reason();
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      past_ += c;
      last_info_ = conn_->info();
      conn_.reset();
    }
    replies_.Forget(generation_);
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
    for (auto& [id, status] : failed) Complete(id, std::move(status));
    backoff_ = backoff_initial_;
    next_attempt_ = now;  // the first attempt at once
  }

  void Backoff(Clock::time_point now, absl::string_view cause) {
    RPCRDMA_LOG(kWarning, 0, "channel to ", uri_, ": reconnect failed: ", cause,
                "; next attempt in ", backoff_.count(), " ms");
    next_attempt_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, backoff_max_);
  }

  // Without a connection: drives the connect attempts.
  void Reconnect(Clock::time_point now) {
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
    }
    std::optional<fabric::ConnectionEvent> ev =
        connecting_->PollConnectionEvent();
    if (!ev) {
      if (now >= connect_until_) {
        connecting_->Disconnect();
        connecting_.reset();
        Backoff(now, absl::StrCat("no answer within ", connect_timeout_.count(),
                                  " ms"));
      }
      return;
    }
    if (ev->type != fabric::ConnectionEventType::kEstablished) {
      connecting_.reset();
      Backoff(now, absl::StrCat(fabric::ConnectionEventTypeName(ev->type),
                                ev->detail.empty() ? "" : ": ", ev->detail));
      return;
    }
    std::unique_ptr<Connection> conn = MakeConnection(std::move(connecting_));
    idle_.emplace(idle_timeout_, now);
    abandoned_.Reset();
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      conn_ = std::move(conn);
      ++reconnects_;
    }
    RPCRDMA_LOG(kWarning, generation_, "channel to ", uri_,
                ": reconnected after the connection was lost (",
                last_loss_.empty() ? "cause unknown" : last_loss_,
                "); calls waiting to be sent again: ", pending_.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      connected_ = true;
      idle_closed_ = false;
    }
    // A fresh engine: credits restart at one and the inline thresholds are
    // negotiated again from this connection's private data (RFC 8166
    // §3.3.1, RFC 8797 §4.2).
    conn_->Connected(ev->private_data, DrawXid());
    std::vector<Channel::CallId> held;
    for (const auto& [id, p] : pending_) {
      if (!p.engine_id) held.push_back(id);
    }
    for (Channel::CallId id : held) {
      if (!Up()) break;
      Send(id);
    }
  }

  void Loop() {
    while (true) {
      std::vector<Command> commands;
      bool stop = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        commands.swap(commands_);
        stop = stopping_;
      }
      if (stop && !shutting_down_) {
        shutting_down_ = true;
        if (connecting_ != nullptr) {
          connecting_->Disconnect();
          connecting_.reset();
        }
        std::vector<Channel::CallId> held;
        for (const auto& [id, p] : pending_) {
          if (!p.engine_id) held.push_back(id);
        }
        for (Channel::CallId id : held) {
          Complete(id, absl::UnavailableError("channel: shut down"));
        }
      }
      for (Command& c : commands) {
        if (c.cancel) {
          CancelCall(c.id, absl::CancelledError("channel: call cancelled"));
        } else if (stop) {
          c.done(absl::UnavailableError("channel: shut down"));
        } else {
          Accept(c);
        }
      }
      Clock::time_point now = Clock::now();
      replies_.SendQueued(*queue_, [this](uint64_t generation) {
        return generation == generation_ ? conn_.get() : nullptr;
      });
      if (conn_ != nullptr) {
        conn_->Poll();
        if (conn_->disconnected()) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            connected_ = false;
          }
          if (!lost_since_) lost_since_ = now;
          // Every posted operation flushes after a disconnect; the bound is
          // a guard against a provider that never reports.
          if (conn_->finished() ||
              now - *lost_since_ > std::chrono::seconds(10)) {
            Retire(now);
          }
        }
      }
      // After an idle close the next call brings the connection back.
      if (conn_ == nullptr && !shutting_down_ &&
          !(pending_.empty() && IdleClosed())) {
        Reconnect(now);
      }
      std::optional<Clock::time_point> limit_check = EnforceLimits(now);
      // Deadlines, enforced here: the engine has no clock.
      now = Clock::now();
      std::optional<Clock::time_point> next;
      std::vector<Channel::CallId> expired;
      for (auto& [id, p] : pending_) {
        if (!p.deadline || p.ending) continue;
        if (*p.deadline <= now) {
          expired.push_back(id);
        } else if (!next || *p.deadline < *next) {
          next = p.deadline;
        }
      }
      for (Channel::CallId id : expired) {
        CancelCall(id,
                   absl::DeadlineExceededError("channel: deadline exceeded"));
      }
      if (!expired.empty()) continue;
      if (limit_check && (!next || *limit_check < *next)) next = limit_check;
      if (shutting_down_) {
        if (conn_ == nullptr) break;
        if (!stop_since_) {
          stop_since_ = now;
          conn_->Disconnect();
        }
        if (conn_->finished() ||
            now - *stop_since_ > std::chrono::seconds(10)) {
          break;
        }
      }
      int fd = -1;
      if (conn_ != nullptr) {
        fd = conn_->endpoint().event_fd();
      } else if (connecting_ != nullptr) {
        fd = connecting_->event_fd();
        if (!next || connect_until_ < *next) next = connect_until_;
      } else if (!(pending_.empty() && IdleClosed()) &&
                 (!next || next_attempt_ < *next)) {
        next = next_attempt_;
      }
      int timeout = -1;
      if (next) {
        auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(*next - now)
                .count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms + 1, 1, 1000));
      }
      if (shutting_down_ || lost_since_) timeout = 10;
      pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, POLLIN, 0}};
      poll(fds, fd >= 0 ? 2 : 1, timeout);
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        ssize_t n = read(wake_fd_, &v, sizeof v);
        (void)n;
      }
    }
    // Calls still waiting (none normally: the disconnect failed them).
    std::vector<Channel::Callback> left;
    for (auto& [id, p] : pending_) left.push_back(std::move(p.done));
    pending_.clear();
    for (auto& done : left) done(absl::UnavailableError("channel: shut down"));
    replies_.Clear();
    queue_->Take();  // backward replies that came too late: dropped
    std::lock_guard<std::mutex> lock(counters_mu_);
    if (conn_ != nullptr) last_info_ = conn_->info();
    conn_.reset();
  }

  Channel::BackwardHandler backward_handler_;
  std::shared_ptr<ReplyQueue> queue_;
  std::mt19937 rng_{std::random_device{}()};
  std::unique_ptr<fabric::Fabric> fabric_;
  std::shared_ptr<CaptureTap> capture_;
  std::string address_;
  std::string uri_;
  std::string last_loss_;  // why the latest connection was lost
  engine::Config ecfg_;
  std::vector<uint8_t> private_data_;
  std::chrono::milliseconds default_deadline_{0};
  std::chrono::milliseconds connect_timeout_{0};
  std::chrono::milliseconds backoff_initial_{0};
  std::chrono::milliseconds backoff_max_{0};
  std::chrono::milliseconds idle_timeout_{0};
  int wake_fd_ = -1;
  std::thread thread_;

  // Loop thread only.
  bool shutting_down_ = false;
  std::optional<Clock::time_point> stop_since_;
  std::optional<Clock::time_point> lost_since_;
  std::unique_ptr<fabric::Endpoint> connecting_;
  Clock::time_point connect_until_;
  Clock::time_point next_attempt_;
  std::chrono::milliseconds backoff_{0};
  AbandonedCallWatch abandoned_{std::chrono::milliseconds(0)};
  std::optional<IdleWatch> idle_;  // of the current connection
  std::map<Channel::CallId, Pending> pending_;
  std::map<engine::CallId, Channel::CallId> by_engine_;
  uint64_t generation_ = 0;  // of the current connection
  ReplySender replies_;      // backward replies being sent

  mutable std::mutex mu_;
  bool stopping_ = false;
  bool connected_ = true;
  // The connection was closed for idleness (timeouts.idle_ms): no
  // reconnect until a call is made, and calls wait for it.
  bool idle_closed_ = false;
  Channel::CallId next_id_ = 1;
  std::vector<Command> commands_;

  // Written by the loop thread under counters_mu_, read by counters().
  mutable std::mutex counters_mu_;
  std::unique_ptr<Connection> conn_;
  Counters past_;  // connections lost
  ConnectionInfo last_info_;
  uint64_t reconnects_ = 0;
};

}  // namespace api_internal

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config) {
  return Create(uri, config, nullptr);
}

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config,
    BackwardHandler backward_handler) {
  auto loop =
      std::make_unique<api_internal::ChannelLoop>(std::move(backward_handler));
  if (absl::Status s = loop->Start(uri, config); !s.ok()) return s;
  return std::unique_ptr<Channel>(new Channel(std::move(loop)));
}

Channel::Channel(std::unique_ptr<api_internal::ChannelLoop> loop)
    : loop_(std::move(loop)) {}

Channel::~Channel() = default;

Channel::CallId Channel::Call(CallRequest request, Callback done) {
  return loop_->Submit(std::move(request), std::move(done));
}

std::future<absl::StatusOr<Reply>> Channel::Call(CallRequest request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<Reply>>>();
  std::future<absl::StatusOr<Reply>> future = promise->get_future();
  loop_->Submit(std::move(request), [promise](absl::StatusOr<Reply> r) {
    promise->set_value(std::move(r));
  });
  return future;
}

void Channel::Cancel(CallId call) { loop_->Cancel(call); }

Counters Channel::counters() const { return loop_->counters(); }
Metrics Channel::metrics() const { return loop_->metrics(); }
bool Channel::connected() const { return loop_->connected(); }
ConnectionInfo Channel::connection_info() const {
  return loop_->connection_info();
}

}  // namespace rpcrdma
