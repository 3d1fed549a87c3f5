// A Channel's connections: the first one (Start, and the version probe of
// version two), each one after it (Reconnect with its backoff), and the end
// of a lost one (Retire). The calls on a live connection are in
// channel_core.cc.
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/api/channel_core.h"
#include "plugin/api/endpoint_setup.h"
#include "plugin/log/logging.h"

namespace rpcrdma::api_internal {

namespace {

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

// Why the first connect to `uri` could not start. A host name that does
// not resolve stays INVALID_ARGUMENT, a host without an RDMA device
// NOT_FOUND: retrying would not help either. Anything else is UNAVAILABLE.
absl::Status FirstConnectFailure(absl::string_view uri,
                                 const absl::Status& status) {
  const absl::StatusCode code = status.code();
  return absl::Status(code == absl::StatusCode::kInvalidArgument ||
                              code == absl::StatusCode::kNotFound
                          ? code
                          : absl::StatusCode::kUnavailable,
                      absl::StrCat("connect to ", uri, ": ", status.message()));
}

// Waits until `until` for the outcome of the connect of `endpoint`; the
// event once established, else why not (disconnecting it on a timeout).
absl::StatusOr<fabric::ConnectionEvent> AwaitEstablished(
    fabric::Endpoint& endpoint, absl::string_view uri,
    std::chrono::milliseconds timeout, Clock::time_point until) {
  std::optional<fabric::ConnectionEvent> ev;
  endpoint.OnEventFdReadable();  // the answer may be there already
  while (!(ev = endpoint.PollConnectionEvent())) {
    if (!WaitForEndpoint(endpoint, until)) {
      endpoint.Disconnect();
      return absl::DeadlineExceededError(absl::StrCat(
          "connect to ", uri, ": no answer within ", timeout.count(), " ms"));
    }
  }
  if (ev->type == fabric::ConnectionEventType::kEstablished) return *ev;
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

}  // namespace

absl::Status ChannelCore::Start(absl::string_view uri,
                                const config::TransportConfig& config) {
  absl::StatusOr<EndpointSetup> setup = SetUpEndpoint(uri, config);
  if (!setup.ok()) return setup.status();
  fabric_ = std::move(setup->fabric);
  capture_ = std::move(setup->capture);
  const config::ResolvedConfig& resolved = setup->resolved;
  address_ = setup->uri.address;
  uri_ = std::string(uri);
  ApplySettings(resolved);
  absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
      fabric_->Connect(address_, private_data_, EndpointOptionsFor(ecfg_));
  if (!ep.ok()) return FirstConnectFailure(uri, ep.status());
  const Clock::time_point until = Clock::now() + resolved.connect_timeout;
  absl::StatusOr<fabric::ConnectionEvent> established =
      AwaitEstablished(**ep, uri, resolved.connect_timeout, until);
  if (!established.ok()) return established.status();
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    driver_.conn() = MakeConnection(std::move(*ep));
    idle_.emplace(idle_timeout_, Clock::now());
    driver_.conn()->Connected(established->private_data, DrawXid());
  }
  if (absl::Status s = AwaitVersion(uri, until); !s.ok()) {
    std::lock_guard<std::mutex> lock(driver_.mu());
    driver_.conn()->Disconnect();
    return s;
  }
  // Joins the loop: from here on the loop and callers share the state.
  {
    std::lock_guard<std::mutex> lock(driver_.mu());
    if (absl::Status s = driver_.loop()->Add(&driver_, -1); !s.ok()) return s;
    driver_.set_registered(true);
    Watch(conn_watch_, driver_.conn()->endpoint());
  }
  driver_.PostWork();
  return absl::OkStatus();
}

void ChannelCore::ApplySettings(const config::ResolvedConfig& resolved) {
  default_deadline_ = resolved.request_deadline;
  reconnect_ = ReconnectSchedule(resolved.connect_timeout,
                                 resolved.reconnect_backoff_initial,
                                 resolved.reconnect_backoff_max);
  idle_timeout_ = resolved.idle_timeout;
  driver_.set_busy_poll_us(resolved.busy_poll_us);
  abandoned_ = AbandonedCallWatch(resolved.abandoned_call_timeout);
  ecfg_ =
      EngineConfigFor(resolved, Role::kRequester, backward_handler_ != nullptr);
  driver_.version_two().Configure(ecfg_);
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
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §7: with version two offered,
// Create returns once the peer has answered the probe.
absl::Status ChannelCore::AwaitVersion(absl::string_view uri,
                                       Clock::time_point until) {
  std::lock_guard<std::mutex> lock(driver_.mu());
  // Not on a loop yet: nobody else touches the connection.
  while (driver_.conn()->engine().negotiating() &&
         !driver_.conn()->disconnected()) {
    if (!WaitForEndpoint(driver_.conn()->endpoint(), until)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "connect to ", uri, ": no answer to the version-two probe"));
    }
    driver_.conn()->Poll();
  }
  if (driver_.conn()->disconnected()) {
    return absl::UnavailableError(absl::StrCat(
        "connect to ", uri, ": connection lost during version negotiation"));
  }
  const absl::Status& st = driver_.conn()->engine().negotiation_status();
  if (!st.ok()) {
    return absl::Status(st.code(),
                        absl::StrCat("connect to ", uri, ": ", st.message()));
  }
  // §7.2: a peer that answered ERR_VERS is not asked again on a reconnect.
  ecfg_.offered_version = driver_.conn()->engine().version();
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
  // Each connection of a Channel is named by its generation, for the
  // handlers of backward calls (RFC 8167) as for the metrics.
  const uint64_t generation = driver_.NextGeneration();
  driver_.set_connection_id(generation);
  conn->SetLogContext(generation, absl::StrCat("channel to ", uri_));
  return conn;
}

// The lost connection has drained (or the guard ran out): its endpoint,
// and with it every registration and handle of it, goes away.
void ChannelCore::Retire(Clock::time_point now, Outcomes& o) {
  past_ += driver_.conn()->counters();
  last_loss_ = driver_.conn()->lost_reason();
  last_info_ = driver_.conn()->info();
  Unwatch(conn_watch_);
  for (ReleasingReply& r : driver_.replies().TakeAll())
    o.dropped.push_back(std::move(r));
  driver_.conn().reset();
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
  reconnect_.Lost(now);  // the first attempt at once
}

absl::Status ChannelCore::NotConnectedError(Clock::time_point now) const {
  std::string next;
  if (connecting_ != nullptr) {
    next = "connecting now";
  } else if (reconnect_.Due(now)) {
    next = "next attempt now";
  } else {
    next = absl::StrCat("next attempt in ",
                        std::chrono::ceil<std::chrono::milliseconds>(
                            reconnect_.next_attempt() - now)
                            .count(),
                        " ms");
  }
  // While the lost connection drains it is still driver_.conn().
  const std::string why =
      driver_.conn() != nullptr ? driver_.conn()->lost_reason() : last_loss_;
  return absl::UnavailableError(absl::StrCat(
      "channel to ", uri_, ": connection lost (",
      why.empty() ? "cause unknown" : why, "); reconnecting, ", next,
      "; a call with CallRequest::wait_for_ready waits for the connection "
      "until its deadline"));
}

void ChannelCore::Backoff(Clock::time_point now, absl::string_view cause) {
  const std::chrono::milliseconds wait = reconnect_.Failed(now);
  RPCRDMA_LOG(kWarning, 0, "channel to ", uri_, ": reconnect failed: ", cause,
              "; next attempt in ", wait.count(), " ms");
}

// Without a connection: drives the connect attempts.
void ChannelCore::Reconnect(Clock::time_point now, Outcomes& o) {
  if (connecting_ == nullptr) {
    if (!reconnect_.Due(now)) return;
    absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
        fabric_->Connect(address_, private_data_, EndpointOptionsFor(ecfg_));
    if (!ep.ok()) {
      Backoff(now, ep.status().message());
      return;
    }
    connecting_ = std::move(*ep);
    reconnect_.Attempting(now);
    Watch(connecting_watch_, *connecting_);
  }
  std::optional<fabric::ConnectionEvent> ev =
      connecting_->PollConnectionEvent();
  if (!ev) {
    if (now >= reconnect_.attempt_deadline()) {
      Unwatch(connecting_watch_);
      connecting_->Disconnect();
      connecting_.reset();
      Backoff(now, absl::StrCat("no answer within ",
                                reconnect_.connect_timeout().count(), " ms"));
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
  driver_.conn() = MakeConnection(std::move(connecting_));
  idle_.emplace(idle_timeout_, now);
  abandoned_.Reset();
  ++reconnects_;
  RPCRDMA_LOG(kWarning, driver_.generation(), "channel to ", uri_,
              ": reconnected after the connection was lost (",
              last_loss_.empty() ? "cause unknown" : last_loss_,
              "); calls waiting to be sent again: ", pending_.size());
  connected_.store(true);
  idle_closed_ = false;
  Watch(conn_watch_, driver_.conn()->endpoint());
  // A fresh engine: credits restart at one and the inline thresholds are
  // negotiated again from this connection's private data (RFC 8166
  // §3.3.1, RFC 8797 §4.2).
  driver_.conn()->Connected(ev->private_data, DrawXid());
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

}  // namespace rpcrdma::api_internal
