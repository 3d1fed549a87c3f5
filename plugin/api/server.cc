#include "rpcrdma/server.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/api/endpoint_setup.h"
#include "plugin/api/environment.h"
#include "plugin/api/runtime_loops.h"
#include "plugin/api/server_core.h"
#include "plugin/api/start_core.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace api_internal {

namespace {

// How long connections may take to drain when the Server goes (a guard
// against a provider that never reports its flushes).

}  // namespace

ServerCore::ServerCore(std::shared_ptr<Runtime> runtime,
                       Server::Handler handler, ServerOptions options)
    : runtime_(std::move(runtime)),
      handler_(std::move(handler)),
      options_(std::move(options)),
      v2_options_(
          std::make_shared<const VersionTwoOptions>(options_.version_two)) {
  listener_loop_ = RuntimeAccess::Loops(*runtime_).Next();
}

ServerCore::~ServerCore() = default;

absl::Status ServerCore::Start(absl::string_view uri,
                               const config::TransportConfig& config) {
  absl::StatusOr<EndpointSetup> setup = SetUpEndpoint(uri, config);
  if (!setup.ok()) return setup.status();
  fabric_ = std::move(setup->fabric);
  capture_ = std::move(setup->capture);
  resolved_ = std::move(setup->resolved);
  const ParsedUri& parsed = setup->uri;
  shared_ =
      std::make_shared<ServerShared>(resolved_.max_server_reassembly_bytes);
  absl::StatusOr<std::unique_ptr<fabric::Listener>> listener =
      fabric_->Listen(parsed.address);
  if (!listener.ok()) {
    // A host name that does not resolve stays INVALID_ARGUMENT, a host
    // without an RDMA device NOT_FOUND: retrying would not help either.
    const absl::StatusCode code = listener.status().code();
    return absl::Status(
        code == absl::StatusCode::kInvalidArgument ||
                code == absl::StatusCode::kNotFound
            ? code
            : absl::StatusCode::kUnavailable,
        absl::StrCat("listen on ", uri, ": ", listener.status().message()));
  }
  listener_ = std::move(*listener);
  const std::string address = listener_->address();
  switch (parsed.fabric) {
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
  if (resolved_.handler_threads > 0) {
    pool_ = std::make_unique<runtime::WorkerPool<HandlerJob>>(
        resolved_.handler_threads, "rpcrdma-handler", [](HandlerJob& job) {
          (*job.handler)(std::move(job.call), *std::move(job.responder));
        });
  }
  listener_watch_ = std::make_unique<runtime::FdWatch>([this] { Accept(); });
  return listener_loop_->Add(listener_watch_.get(), listener_->event_fd());
}

bool ServerCore::InServerThread() const {
  for (const auto& loop : RuntimeAccess::Loops(*runtime_).loops()) {
    if (loop->InLoopThread()) return true;
  }
  return pool_ != nullptr && pool_->InWorkerThread();
}

absl::Status ServerCore::Shutdown(Deadline deadline) {
  absl::Status drained;
  std::call_once(shut_down_, [&] { drained = ShutdownOnce(deadline); });
  return drained;
}

absl::Status ServerCore::ShutdownOnce(Deadline deadline) {
  const Clock::time_point since = Clock::now();
  if (listener_watch_ != nullptr) {
    listener_loop_->Remove(listener_watch_.get());
    // Once the loop has run past the removal, Accept is not running: the
    // listener closes now, not after the drain, so that a client
    // connecting meanwhile is refused at once instead of waiting in the
    // backlog for a handshake nobody will answer.
    listener_loop_->RunSync([] {});
    listener_watch_.reset();
    listener_.reset();
  }
  std::vector<std::shared_ptr<ServerConnection>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const auto& [id, c] : conns_) conns.push_back(c);
  }
  for (const auto& c : conns) c->BeginShutdown();
  conns.clear();
  {
    std::unique_lock<std::mutex> lock(mu_);
    retired_cv_.wait_until(lock, deadline, [this] { return conns_.empty(); });
    for (const auto& [id, c] : conns_) conns.push_back(c);
  }
  absl::Status drained;
  if (!conns.empty()) {
    drained = absl::DeadlineExceededError(absl::StrCat(
        "server: ", conns.size(),
        " connection(s) had not drained by the shutdown deadline (waited ",
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                              since)
            .count(),
        " ms for the provider to complete what was posted); released "
        "without it"));
  }
  // Connections whose provider never reported their flushes.
  for (const auto& c : conns) c->ForceRetire();
  if (shared_ != nullptr) shared_->stopped.store(true);
  // What connections handed to their loops (they name this Server) runs
  // before it is gone.
  for (const auto& loop : RuntimeAccess::Loops(*runtime_).loops()) {
    loop->RunSync([] {});
  }
  // Runs what was handed to it, then joins; the pool stays for
  // InServerThread, which another thread may be asking meanwhile.
  if (pool_ != nullptr) pool_->Stop();
  return drained;
}

void ServerCore::CountServer(uint64_t Counters::*field) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(server_counters_.*field);
}

// What the listener reports besides connect requests: an accept that
// failed for want of descriptors (the listener backs off by itself;
// reported once per episode) or a socket closed for a handshake that never
// came.
void ServerCore::NoteListenerError(const absl::Status& st) {
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

// A client's address (the fabric's syntax) as a URI of this Server's
// scheme; an unnamed Unix-domain client is known by the Server's URI.
std::string ServerCore::PeerUri(absl::string_view address) const {
  if (absl::ConsumePrefix(&address, "tcp:")) {
    return absl::StrCat("soft+tcp://", address);
  }
  if (address.empty() || absl::StartsWith(address, "unix:")) return uri_;
  return absl::StrCat("rdma://", address);
}

void ServerCore::Accept() {
  RuntimeLoops& loops = RuntimeAccess::Loops(*runtime_);
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
    VersionTwoUser(v2_options_).Configure(ecfg);
    std::vector<uint8_t> private_data;
    if (resolved_.inline_settings.cm_private_data) {
      engine::Engine probe(ecfg, nullptr);
      auto pd = probe.LocalPrivateData();
      private_data.assign(pd.begin(), pd.end());
    }
    size_t open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = conns_.size();
    }
    if (open >= resolved_.max_connections) {
      // Refused before anything is allocated for it; the client reports
      // the reason (channel.h). Counted before the reject goes out, so that
      // a client that has seen it also sees it counted.
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
    const uint64_t id = next_conn_++;
    Connection::Hooks hooks;
    AttachCapture(capture_, Role::kResponder, hooks);
    auto conn =
        std::make_unique<Connection>(std::move(*ep), ecfg, Role::kResponder,
                                     std::move(hooks), &shared_->budget);
    conn->SetLogContext(id, absl::StrCat("server ", uri_));
    auto sc = std::make_shared<ServerConnection>(
        this, shared_, id, loops.Next(), resolved_, std::move(conn));
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns_[id] = sc;
    }
    Notify(ServerConnectionEvent{ServerConnectionEvent::Type::kAccepted,
                                 ConnectionId(id),
                                 peer_uri,
                                 {}});
    if (absl::Status s = sc->Start(peer); !s.ok()) {
      RPCRDMA_LOG(kError, id, "server ", uri_, ": ", s.message());
      sc->ForceRetire();
    }
  }
}

void ServerCore::RunHandler(HandlerJob& job) {
  if (pool_ != nullptr) {
    pool_->Submit(std::move(job));
  } else {
    (*job.handler)(std::move(job.call), *std::move(job.responder));
  }
}

void ServerCore::Notify(const ServerConnectionEvent& event) {
  if (options_.on_connection) options_.on_connection(event);
}

void ServerCore::Retired(uint64_t id) {
  std::shared_ptr<ServerConnection> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    gone = std::move(it->second);
    conns_.erase(it);
    closed_counters_ += gone->counters();
    awaiting_.erase(gone.get());
  }
  retired_cv_.notify_all();
}

void ServerCore::AwaitingMemory(
    const std::shared_ptr<ServerConnection>& connection, bool awaiting) {
  std::lock_guard<std::mutex> lock(mu_);
  if (awaiting) {
    awaiting_[connection.get()] = connection;
  } else {
    awaiting_.erase(connection.get());
  }
}

void ServerCore::BudgetReleased(ServerConnection* by) {
  std::vector<std::shared_ptr<ServerConnection>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [raw, weak] : awaiting_) {
      if (raw == by) continue;
      if (auto c = weak.lock()) waiting.push_back(std::move(c));
    }
  }
  for (const auto& c : waiting) c->ResumeAwaitingMemory();
}

Counters ServerCore::counters() const {
  std::vector<std::shared_ptr<ServerConnection>> conns;
  Counters total;
  {
    std::lock_guard<std::mutex> lock(mu_);
    total = closed_counters_;
    total += server_counters_;
    for (const auto& [id, c] : conns_) conns.push_back(c);
  }
  for (const auto& c : conns) total += c->counters();
  return total;
}

Metrics ServerCore::metrics() const {
  std::vector<std::shared_ptr<ServerConnection>> conns;
  Metrics m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    m.counters = closed_counters_;
    for (const auto& [id, c] : conns_) conns.push_back(c);
  }
  for (const auto& c : conns) {
    m.connections.push_back(c->metrics());
    m.counters += m.connections.back().counters;
  }
  return m;
}

size_t ServerCore::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

absl::StatusOr<ConnectionInfo> ServerCore::connection_info(
    ConnectionId connection) const {
  std::shared_ptr<ServerConnection> conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(connection.value());
    if (it != conns_.end()) conn = it->second;
  }
  std::optional<ConnectionInfo> info;
  if (conn != nullptr) info = conn->info();
  if (!info.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("server: no connection ", connection.value()));
  }
  return *info;
}

CallId ServerCore::Call(ConnectionId connection, CallRequest request,
                        Server::Callback done) {
  std::shared_ptr<ServerConnection> conn;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_;
    auto it = conns_.find(connection.value());
    if (it != conns_.end()) conn = it->second;
  }
  if (stopping) {
    done(absl::UnavailableError("server: shut down"));
    return CallId();
  }
  if (!resolved_.backchannel_enabled) {
    done(absl::FailedPreconditionError(
        "server: backchannel disabled in the configuration"));
    return CallId();
  }
  if (conn == nullptr) {
    done(absl::NotFoundError(
        absl::StrCat("server: no connection ", connection.value())));
    return CallId();
  }
  return conn->Call(std::move(request), std::move(done));
}

void ServerCore::Cancel(ConnectionId connection, CallId call) {
  std::shared_ptr<ServerConnection> conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(connection.value());
    if (it != conns_.end()) conn = it->second;
  }
  if (conn != nullptr) conn->Cancel(call);
}

absl::Status ServerCore::Disconnect(ConnectionId connection,
                                    absl::string_view reason) {
  std::shared_ptr<ServerConnection> conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(connection.value());
    if (it != conns_.end()) conn = it->second;
  }
  if (conn == nullptr || !conn->Close(reason)) {
    return absl::NotFoundError(
        absl::StrCat("server: no connection ", connection.value()));
  }
  return absl::OkStatus();
}

}  // namespace api_internal

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view uri, const config::TransportConfig& config,
    Handler handler) {
  return Create(uri, config, std::move(handler), ServerOptions{});
}

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    absl::string_view uri, const config::TransportConfig& config,
    Handler handler, ServerOptions options) {
  // StartCore is done with the options it is passed before `make` moves
  // them into the core.
  absl::StatusOr<std::shared_ptr<api_internal::ServerCore>> core =
      api_internal::StartCore(
          uri, config, options.version_two, options.runtime,
          DeadlineIn(kShutdownDrain), [&](std::shared_ptr<Runtime> chosen) {
            return std::make_shared<api_internal::ServerCore>(
                std::move(chosen), std::move(handler), std::move(options));
          });
  if (!core.ok()) return core.status();
  return std::unique_ptr<Server>(new Server(*std::move(core)));
}

Server::Server(std::shared_ptr<api_internal::ServerCore> core)
    : core_(std::move(core)) {}
// The drain's outcome has nowhere to go from a destructor; a program that
// wants it calls Shutdown first.
Server::~Server() { core_->Shutdown(DeadlineIn(kShutdownDrain)).IgnoreError(); }

absl::Status Server::Shutdown(Deadline deadline) {
  if (core_->InServerThread()) {
    return absl::FailedPreconditionError(
        "server: Shutdown from a handler or callback of the Server");
  }
  return core_->Shutdown(deadline);
}

std::string Server::uri() const { return core_->uri(); }
Counters Server::counters() const { return core_->counters(); }
Metrics Server::metrics() const { return core_->metrics(); }
size_t Server::connections() const { return core_->connections(); }

absl::StatusOr<ConnectionInfo> Server::connection_info(
    ConnectionId connection) const {
  return core_->connection_info(connection);
}

CallId Server::Call(ConnectionId connection, CallRequest request,
                    Callback done) {
  return core_->Call(connection, std::move(request), std::move(done));
}

CallFuture Server::Call(ConnectionId connection, CallRequest request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<Reply>>>();
  std::future<absl::StatusOr<Reply>> reply = promise->get_future();
  const CallId id = core_->Call(
      connection, std::move(request),
      [promise](absl::StatusOr<Reply> r) { promise->set_value(std::move(r)); });
  return CallFuture(id, std::move(reply));
}

void Server::Cancel(ConnectionId connection, CallId call) {
  core_->Cancel(connection, call);
}

absl::Status Server::Disconnect(ConnectionId connection,
                                absl::string_view reason) {
  return core_->Disconnect(connection, reason);
}

}  // namespace rpcrdma
