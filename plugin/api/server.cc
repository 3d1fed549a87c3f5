#include "rpcrdma/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/api/budget.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/connection.h"
#include "plugin/api/limits.h"
#include "plugin/api/responder_queue.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace api_internal {

class ServerLoop {
 private:
  struct BackwardCommand {
    uint64_t connection = 0;
    CallRequest request;
    Server::Callback done;
  };
  struct BackwardCall {
    Server::Callback done;
    std::optional<Clock::time_point> deadline;
    bool ending = false;  // cancelled for its deadline, awaiting the engine
    Clock::time_point started;  // call_rtt
  };
  // Loop-thread state of one connection for the limits of issue 9.
  struct Watch {
    Watch(const config::ResolvedConfig& r, Clock::time_point now)
        : idle(r.idle_timeout, now), abandoned(r.abandoned_call_timeout) {}
    IdleWatch idle;
    AbandonedCallWatch abandoned;
    uint64_t calls_in_progress = 0;  // delivered, reply not yet sent
    bool closed_reported = false;    // ServerConnectionEvent::kClosed
    std::string closed_why;          // this side closed it for a limit
  };

 public:
  ServerLoop(Server::Handler handler, ServerOptions options)
      : handler_(std::move(handler)), options_(std::move(options)) {}

  ~ServerLoop() {
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
    resolved_ = config::Resolve(config);
    budget_ = std::make_unique<SharedReassemblyBudget>(
        resolved_.max_server_reassembly_bytes);
    // The responder speaks version one; under V2_WITH_FALLBACK it answers
    // a version-two probe with ERR_VERS 1..1, which is how a client falls
    // back (draft-cel-nfsv4-rpcrdma-version-two-04 §7.2).
    if (resolved_.version_policy == config::TransportConfig::V2) {
      RPCRDMA_LOG(kError, 0,
                  "rejected configuration: version_policy V2 on a Server");
      return absl::UnimplementedError(
          "config: version_policy: V2: this release's Server answers in "
          "version one only (use V1 or V2_WITH_FALLBACK)");
    }
    absl::StatusOr<std::unique_ptr<fabric::Listener>> listener =
        fabric_->Listen(parsed->address);
    if (!listener.ok()) {
      // A host name that does not resolve stays INVALID_ARGUMENT.
      return absl::Status(
          listener.status().code() == absl::StatusCode::kInvalidArgument
              ? absl::StatusCode::kInvalidArgument
              : absl::StatusCode::kUnavailable,
          absl::StrCat("listen on ", uri, ": ", listener.status().message()));
    }
    listener_ = std::move(*listener);
    std::string address = listener_->address();
    switch (parsed->fabric) {
      case config::TransportConfig::SOFT_UNIX:
        uri_ = absl::StrCat("soft+unix://", address.substr(5));
        break;
      case config::TransportConfig::SOFT_TCP:
        uri_ = absl::StrCat("soft+tcp://", address.substr(4));
        break;
      default:
        uri_ = absl::StrCat("rdma://", address);
        break;
    }
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return absl::InternalError("eventfd failed");
    queue_ = std::make_shared<ReplyQueue>(wake_fd_);
    thread_ = std::thread([this] { Loop(); });
    return absl::OkStatus();
  }

  std::string uri() const { return uri_; }

  Counters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    Counters total = closed_counters_;
    total += server_counters_;
    for (const auto& [id, c] : conns_) total += c->counters();
    return total;
  }
  Metrics metrics() const {
    Metrics m;
    std::lock_guard<std::mutex> lock(mu_);
    m.counters = closed_counters_;
    for (const auto& [id, c] : conns_) {
      m.connections.push_back(c->metrics());
      m.counters += m.connections.back().counters;
    }
    return m;
  }
  size_t connections() const {
    std::lock_guard<std::mutex> lock(mu_);
    return conns_.size();
  }

  void SubmitBackward(uint64_t connection, CallRequest request,
                      Server::Callback done) {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) {
      lock.unlock();
      done(absl::UnavailableError("server: shut down"));
      return;
    }
    backward_commands_.push_back(
        BackwardCommand{connection, std::move(request), std::move(done)});
    lock.unlock();
    Wake();
  }

 private:
  void CountServer(uint64_t Counters::*field) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(server_counters_.*field);
  }

  // What the listener reports besides connect requests: an accept that
  // failed for want of descriptors (the listener backs off by itself;
  // reported once per episode) or a socket closed for a handshake that
  // never came.
  void NoteListenerError(const absl::Status& st) {
    if (st.code() == absl::StatusCode::kDeadlineExceeded) {
      CountServer(&Counters::handshake_timeouts);
      return;
    }
    CountServer(&Counters::accept_errors);
    if (!accept_failing_) {
      accept_failing_ = true;
      ReportConnectionEvent(absl::StrCat(
          "server ", uri_, ": cannot accept connections: ", st.message()));
    }
  }

  void Accept() {
    while (true) {
      absl::StatusOr<std::unique_ptr<fabric::ConnectRequest>> req =
          listener_->PollConnectRequest();
      if (!req.ok()) {
        NoteListenerError(req.status());
        continue;
      }
      if (*req == nullptr) return;
      accept_failing_ = false;
      engine::Config ecfg = EngineConfigFor(resolved_, Role::kResponder);
      std::vector<uint8_t> private_data;
      if (resolved_.inline_settings.cm_private_data) {
        engine::Engine probe(ecfg, nullptr);
        auto pd = probe.LocalPrivateData();
        private_data.assign(pd.begin(), pd.end());
      }
      if (conns_.size() >= resolved_.max_connections) {
        // Refused before anything is allocated for it; the client reports
        // the reason (channel.h). Counted before the reject goes out, so
        // that a client that has seen it also sees it counted.
        CountServer(&Counters::connections_rejected);
        absl::Status rejected = (*req)->Reject(RejectPrivateData(
            private_data, absl::StrCat("connection limit reached (",
                                       resolved_.max_connections, ")")));
        (void)rejected;  // a peer already gone needs no answer
        continue;
      }
      std::vector<uint8_t> peer((*req)->private_data().begin(),
                                (*req)->private_data().end());
      const std::string peer_uri = PeerUri((*req)->peer_address());
      absl::StatusOr<std::unique_ptr<fabric::Endpoint>> ep =
          (*req)->Accept(private_data, EndpointOptionsFor(ecfg));
      if (!ep.ok()) continue;
      uint64_t id = next_conn_++;
      Connection::Hooks hooks;
      hooks.deliver = [this, id](engine::DeliverCall& d) {
        IncomingCall call{id, d.xid, std::move(d.message),
                          std::move(d.write_chunk_capacities),
                          d.reply_chunk_capacity};
        if (auto w = watches_.find(id); w != watches_.end()) {
          ++w->second.calls_in_progress;
        }
        handler_(std::move(call), ResponderAccess::Make(queue_, id, d.call));
      };
      hooks.reply_sent = [this, id](engine::ReplySent& r) {
        replies_.Sent(id, r.call);
        if (auto w = watches_.find(id);
            w != watches_.end() && w->second.calls_in_progress > 0) {
          --w->second.calls_in_progress;
        }
      };
      hooks.complete = [this, id](engine::CompleteCall& c) {
        FinishBackward(id, c.call,
                       Reply{std::move(c.reply), std::move(c.result_lengths)});
      };
      hooks.fail = [this, id](engine::FailCall& f) {
        FinishBackward(id, f.call, std::move(f.status));
      };
      AttachCapture(capture_, Role::kResponder, hooks);
      auto conn = std::make_unique<Connection>(
          std::move(*ep), ecfg, Role::kResponder, hooks, budget_.get());
      conn->SetLogContext(id, absl::StrCat("server ", uri_));
      watches_.emplace(id, Watch(resolved_, Clock::now()));
      Connection* raw = conn.get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        conns_[id] = std::move(conn);
      }
      if (options_.on_connection) {
        options_.on_connection(ServerConnectionEvent{
            ServerConnectionEvent::Type::kAccepted, id, peer_uri, {}});
      }
      // Receives are posted at once: the requester may send as soon as it
      // sees the connection established.
      raw->Connected(peer);
    }
  }

  // A client's address (the fabric's syntax) as a URI of this Server's
  // scheme; an unnamed Unix-domain client is known by the Server's URI.
  std::string PeerUri(absl::string_view address) const {
    if (absl::ConsumePrefix(&address, "tcp:")) {
      return absl::StrCat("soft+tcp://", address);
    }
    if (address.empty() || absl::StartsWith(address, "unix:")) return uri_;
    return absl::StrCat("rdma://", address);
  }

  // ServerConnectionEvent::kClosed, once, as soon as a connection is seen
  // gone (its calls were all delivered before: delivery happens in Poll).
  void ReportClosed(uint64_t id, Connection& c) {
    auto w = watches_.find(id);
    if (w == watches_.end() || w->second.closed_reported) return;
    w->second.closed_reported = true;
    if (!options_.on_connection) return;
    absl::Status status;
    if (!w->second.closed_why.empty()) {
      status = absl::UnavailableError(
          absl::StrCat("connection closed: ", w->second.closed_why));
    } else if (!c.orderly_end()) {
      status = absl::UnavailableError(absl::StrCat(
          "connection lost: ",
          c.lost_reason().empty() ? "cause unknown" : c.lost_reason()));
    }
    options_.on_connection(ServerConnectionEvent{
        ServerConnectionEvent::Type::kClosed, id, "", std::move(status)});
  }

  void SendReplies() {
    replies_.SendQueued(*queue_, [this](uint64_t id) -> Connection* {
      auto it = conns_.find(id);
      return it == conns_.end() ? nullptr : it->second.get();
    });
  }

  // Backward calls (RFC 8167), started on the loop thread.
  void StartBackward(BackwardCommand& c) {
    if (!resolved_.backchannel_enabled) {
      c.done(absl::FailedPreconditionError(
          "server: backchannel disabled in the configuration"));
      return;
    }
    auto it = conns_.find(c.connection);
    if (it == conns_.end() || it->second->disconnected()) {
      c.done(absl::NotFoundError(
          absl::StrCat("server: no connection ", c.connection)));
      return;
    }
    engine::OutgoingCall call;
    call.xdr = std::move(c.request.xdr);
    for (const CallArgument& a : c.request.arguments) {
      call.arguments.push_back(engine::DdpArgument{
          a.position, absl::Span<uint8_t>(const_cast<uint8_t*>(a.data.data()),
                                          a.data.size())});
    }
    call.results = c.request.results;
    call.max_reply_size = c.request.max_reply_size;
    engine::Actions out;
    const Clock::time_point started = Clock::now();
    absl::StatusOr<engine::CallId> eid =
        it->second->engine().StartCall(std::move(call), out);
    if (!eid.ok()) {
      it->second->Run(out);
      c.done(eid.status());
      return;
    }
    std::optional<Clock::time_point> deadline = c.request.deadline;
    if (!deadline && resolved_.request_deadline.count() > 0) {
      deadline = Clock::now() + resolved_.request_deadline;
    }
    backward_[{c.connection, *eid}] =
        BackwardCall{std::move(c.done), deadline, false, started};
    it->second->Run(out);
  }

  void FinishBackward(uint64_t connection, engine::CallId call,
                      absl::StatusOr<Reply> result) {
    auto it = backward_.find({connection, call});
    if (it == backward_.end()) return;
    Server::Callback done = std::move(it->second.done);
    if (result.ok()) {
      auto conn = conns_.find(connection);
      if (conn != conns_.end()) {
        conn->second->RecordCallRtt(Clock::now() - it->second.started);
      }
    }
    backward_.erase(it);
    done(std::move(result));
  }

  // Deadlines of backward calls, enforced here: the engine has no clock.
  void ExpireBackward(Clock::time_point now) {
    std::vector<std::pair<uint64_t, engine::CallId>> expired;
    for (auto& [key, b] : backward_) {
      if (b.deadline && *b.deadline <= now && !b.ending) {
        b.ending = true;
        expired.push_back(key);
      }
    }
    for (const auto& [conn, call] : expired) {
      auto it = conns_.find(conn);
      if (it == conns_.end()) continue;
      engine::Actions out;
      it->second->engine().Cancel(
          call, absl::DeadlineExceededError("server: deadline exceeded"), out);
      it->second->Run(out);
    }
  }

  // Reassembly memory came free: connections whose calls wait for it may
  // go on (engine.h OnBudgetReleased). Repeated while releases keep coming.
  void ResumeWaitingCalls() {
    uint64_t releases;
    while ((releases = budget_->releases()) != budget_releases_seen_) {
      budget_releases_seen_ = releases;
      for (auto& [id, c] : conns_) {
        if (c->disconnected() || c->engine().calls_awaiting_memory() == 0) {
          continue;
        }
        engine::Actions out;
        c->engine().OnBudgetReleased(out);
        c->Run(out);
      }
    }
  }

  // Idle connections and abandoned backward calls (server.h); returns when
  // to look again at the latest.
  std::optional<Clock::time_point> EnforceLimits(Clock::time_point now) {
    std::optional<Clock::time_point> next;
    auto sooner = [&next](std::optional<Clock::time_point> t) {
      if (t && (!next || *t < *next)) next = t;
    };
    for (auto& [id, c] : conns_) {
      auto w = watches_.find(id);
      if (w == watches_.end() || c->disconnected()) continue;
      const engine::Engine& e = c->engine();
      const bool busy = w->second.calls_in_progress > 0 ||
                        e.calls_outstanding() > 0 || e.calls_queued() > 0 ||
                        e.calls_awaiting_memory() > 0;
      if (w->second.idle.Expired(c->activity(), busy, now)) {
        c->Count(&Counters::idle_closes);
        w->second.closed_why =
            absl::StrCat("idle for ", resolved_.idle_timeout.count(), " ms");
        ReportConnectionEvent(absl::StrCat("server ", uri_,
                                           ": closing connection ", id, ": ",
                                           w->second.closed_why));
        c->Disconnect();
        continue;
      }
      sooner(w->second.idle.deadline());
      if (std::optional<std::string> why = w->second.abandoned.Check(e, now)) {
        c->Count(&Counters::abandoned_call_disconnects);
        w->second.closed_why = *why;
        ReportConnectionEvent(absl::StrCat(
            "server ", uri_, ": closing connection ", id, ": ", *why));
        c->Disconnect();
        continue;
      }
      sooner(w->second.abandoned.next_check());
    }
    return next;
  }

  void Wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) {
      ssize_t n = write(wake_fd_, &one, sizeof one);
      (void)n;
    }
  }

  void Loop() {
    std::optional<Clock::time_point> stop_since;
    while (true) {
      bool stop;
      std::vector<BackwardCommand> commands;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop = stopping_;
        commands.swap(backward_commands_);
      }
      for (BackwardCommand& c : commands) {
        if (stop) {
          c.done(absl::UnavailableError("server: shut down"));
        } else {
          StartBackward(c);
        }
      }
      if (!stop) {
        Accept();
        SendReplies();
      }
      for (auto& [id, c] : conns_) {
        c->Poll();
        if (c->disconnected()) ReportClosed(id, *c);
      }
      ResumeWaitingCalls();
      Clock::time_point now = Clock::now();
      if (stop && !stop_since) {
        stop_since = now;
        for (auto& [id, c] : conns_) c->Disconnect();
      }
      // Connections that are gone and drained.
      for (auto it = conns_.begin(); it != conns_.end();) {
        bool expired = stop && now - *stop_since > std::chrono::seconds(10);
        if (it->second->finished() || expired) {
          ReportClosed(it->first, *it->second);
          replies_.Forget(it->first);
          watches_.erase(it->first);
          std::unique_ptr<Connection> dead;
          {
            std::lock_guard<std::mutex> lock(mu_);
            closed_counters_ += it->second->counters();
            dead = std::move(it->second);
            it = conns_.erase(it);
          }
        } else {
          ++it;
        }
      }
      ExpireBackward(now);
      std::optional<Clock::time_point> next_limit;
      if (!stop) next_limit = EnforceLimits(now);
      if (stop && conns_.empty()) break;
      std::vector<pollfd> fds;
      fds.push_back({wake_fd_, POLLIN, 0});
      fds.push_back({listener_->event_fd(), POLLIN, 0});
      for (auto& [id, c] : conns_) {
        fds.push_back({c->endpoint().event_fd(), POLLIN, 0});
      }
      int timeout = stop ? 10 : 1000;
      if (next_limit) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      *next_limit - now)
                      .count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms + 1, 1, timeout));
      }
      for (const auto& [key, b] : backward_) {
        if (!b.deadline || b.ending) continue;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      *b.deadline - now)
                      .count();
        timeout = static_cast<int>(std::clamp<int64_t>(ms + 1, 1, timeout));
      }
      poll(fds.data(), fds.size(), timeout);
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        ssize_t n = read(wake_fd_, &v, sizeof v);
        (void)n;
      }
    }
    replies_.Clear();
    queue_->Take();  // replies that came too late: released as dropped
    // Backward calls whose connection outlived the drain guard.
    std::vector<Server::Callback> left;
    for (auto& [key, b] : backward_) left.push_back(std::move(b.done));
    backward_.clear();
    for (auto& done : left) done(absl::UnavailableError("server: shut down"));
  }

  Server::Handler handler_;
  ServerOptions options_;
  int wake_fd_ = -1;
  std::shared_ptr<ReplyQueue> queue_;
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::Listener> listener_;
  config::ResolvedConfig resolved_;
  std::shared_ptr<CaptureTap> capture_;  // null without capture_path
  std::unique_ptr<SharedReassemblyBudget> budget_;
  std::string uri_;
  std::thread thread_;
  uint64_t next_conn_ = 1;

  // Guards conns_ membership, closed_counters_, stopping_ and
  // backward_commands_.
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Connection>> conns_;
  Counters closed_counters_;
  Counters server_counters_;  // the listener's: rejects, accept errors
  bool stopping_ = false;
  std::vector<BackwardCommand> backward_commands_;

  // Loop thread only.
  ReplySender replies_;
  std::map<std::pair<uint64_t, engine::CallId>, BackwardCall> backward_;
  std::map<uint64_t, Watch> watches_;
  uint64_t budget_releases_seen_ = 0;
  bool accept_failing_ = false;
};

}  // namespace api_internal

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view uri, const config::TransportConfig& config,
    Handler handler) {
  return Create(uri, config, std::move(handler), ServerOptions{});
}

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view uri, const config::TransportConfig& config,
    Handler handler, ServerOptions options) {
  auto loop = std::make_unique<api_internal::ServerLoop>(std::move(handler),
                                                         std::move(options));
  if (absl::Status s = loop->Start(uri, config); !s.ok()) return s;
  return std::unique_ptr<Server>(new Server(std::move(loop)));
}

Server::Server(std::unique_ptr<api_internal::ServerLoop> loop)
    : loop_(std::move(loop)) {}
Server::~Server() = default;

std::string Server::uri() const { return loop_->uri(); }
Counters Server::counters() const { return loop_->counters(); }
Metrics Server::metrics() const { return loop_->metrics(); }

void Server::Call(uint64_t connection, CallRequest request, Callback done) {
  loop_->SubmitBackward(connection, std::move(request), std::move(done));
}

std::future<absl::StatusOr<Reply>> Server::Call(uint64_t connection,
                                                CallRequest request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<Reply>>>();
  std::future<absl::StatusOr<Reply>> future = promise->get_future();
  loop_->SubmitBackward(
      connection, std::move(request),
      [promise](absl::StatusOr<Reply> r) { promise->set_value(std::move(r)); });
  return future;
}
size_t Server::connections() const { return loop_->connections(); }

}  // namespace rpcrdma
