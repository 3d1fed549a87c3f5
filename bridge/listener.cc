#include "bridge/listener.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/config_defaults.h"

namespace rpcrdma::thrift::internal {

std::shared_ptr<void> OnewayBudget::Take(uint64_t octets) {
  std::lock_guard<std::mutex> lock(mu_);
  if (calls_ >= kMaxCalls || octets_ + octets > kMaxOctets) return nullptr;
  ++calls_;
  octets_ += octets;
  std::shared_ptr<OnewayBudget> self = shared_from_this();
  // Not null (callers test it): the budget itself, kept by the deleter.
  OnewayBudget* const budget = self.get();
  return std::shared_ptr<void>(budget, [self, octets](void*) {
    std::lock_guard<std::mutex> released(self->mu_);
    --self->calls_;
    self->octets_ -= octets;
  });
}

void Dispatch(IncomingCall call, Responder responder, ReplyStash& stash,
              const std::function<void(QueuedCall)>& serve,
              OnewayBudget* oneways) {
  absl::StatusOr<wire::DecodedCallHeader> header =
      wire::DecodeCallHeader(call.message);
  if (!header.ok()) {
    (void)responder.Send(
        HandlerReply(wire::ReplyHeader(call.xid, wire::kGarbageArgs)));
    return;
  }
  // RFC 5531 §9: another RPC version, and credentials the bridge does not
  // serve, are denied before anything else is looked at.
  if (header->rpc_version != 2) {
    (void)responder.Send(HandlerReply(wire::RpcMismatchReply(call.xid)));
    return;
  }
  if (uint32_t auth = wire::CheckCallAuth(*header); auth != wire::kAuthOk) {
    (void)responder.Send(HandlerReply(wire::AuthErrorReply(call.xid, auth)));
    return;
  }
  if (header->program != wire::kProgram) {
    (void)responder.Send(
        HandlerReply(wire::ReplyHeader(call.xid, wire::kProgUnavail)));
    return;
  }
  if (header->version != wire::kVersion) {
    (void)responder.Send(
        HandlerReply(wire::ReplyHeader(call.xid, wire::kProgMismatch)));
    return;
  }
  switch (static_cast<wire::Procedure>(header->procedure)) {
    case wire::Procedure::kNull:
      (void)responder.Send(HandlerReply(wire::ReplyHeader(call.xid)));
      return;
    case wire::Procedure::kCall: {
      QueuedCall queued;
      queued.args_offset = header->body_offset;
      queued.responder = std::move(responder);
      queued.call = std::move(call);
      serve(std::move(queued));
      return;
    }
    case wire::Procedure::kOneway: {
      QueuedCall queued;
      queued.args_offset = header->body_offset;
      queued.oneway = true;
      if (oneways != nullptr) {
        queued.acknowledged = oneways->Take(call.message.size());
      }
      if (oneways == nullptr || queued.acknowledged != nullptr) {
        // Answered on receipt: the caller does not wait for the handler,
        // and its credit comes back now (RFC 8166 §3.3.1).
        (void)responder.Send(StatusReply(call.xid, wire::Status::kNoReply));
      } else {
        // Over the connection's bound: answered once processed.
        queued.responder = std::move(responder);
      }
      queued.call = std::move(call);
      serve(std::move(queued));
      return;
    }
    case wire::Procedure::kFetch:
      stash.Fetch(call, std::move(responder), header->body_offset);
      return;
  }
  (void)responder.Send(
      HandlerReply(wire::ReplyHeader(call.xid, wire::kProcUnavail)));
}

std::shared_ptr<ConnectionState>& CurrentConnectionState() {
  thread_local std::shared_ptr<ConnectionState> current;
  return current;
}

absl::StatusOr<std::shared_ptr<Listener>> Listener::Start(
    const std::string& uri, const config::TransportConfig& config,
    std::shared_ptr<Runtime> runtime, Hooks hooks) {
  std::shared_ptr<Listener> listener(new Listener(std::move(hooks)));
  std::weak_ptr<Listener> weak = listener;
  ServerOptions options;
  options.runtime = std::move(runtime);
  options.on_connection = [weak](const ServerConnectionEvent& event) {
    if (std::shared_ptr<Listener> self = weak.lock()) self->OnEvent(event);
  };
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(
      uri, config,
      [weak](IncomingCall call, Responder responder) {
        if (std::shared_ptr<Listener> self = weak.lock()) {
          self->OnCall(std::move(call), std::move(responder));
        }
      },
      std::move(options));
  if (!server.ok()) return server.status();
  listener->uri_ = (*server)->uri();
  listener->header_segments_ = HeaderSegments(config);
  listener->server_ = std::shared_ptr<Server>(*std::move(server));
  return listener;
}

Listener::~Listener() { Stop(); }

void Listener::Stop() {
  std::shared_ptr<Server> server;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    server = std::move(server_);
    if (server != nullptr) final_counters_ = server->counters();
  }
  server.reset();  // disconnects every connection and waits for them
  std::map<ConnectionId, std::shared_ptr<ConnectionState>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(connections_);
  }
  for (auto& [id, state] : left) Close(state, "the server stopped");
}

Counters Listener::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_ != nullptr ? server_->counters() : final_counters_;
}

size_t Listener::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_.size();
}

std::shared_ptr<Server> Listener::server() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_;
}

absl::Status Listener::Disconnect(ConnectionId connection,
                                  absl::string_view reason) {
  std::shared_ptr<Server> server = this->server();
  if (server == nullptr) return absl::UnavailableError("server stopped");
  return server->Disconnect(connection, reason);
}

void Listener::InterruptChildren() {
  std::vector<std::shared_ptr<ConnectionState>> states;
  {
    std::lock_guard<std::mutex> lock(mu_);
    children_interrupted_ = true;
    for (auto& [id, state] : connections_) states.push_back(state);
  }
  for (const std::shared_ptr<ConnectionState>& state : states) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->interrupted = true;
    state->cv.notify_all();
  }
}

void Listener::RefuseNewConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  refusing_ = true;
}

void Listener::OnEvent(const ServerConnectionEvent& event) {
  if (event.type == ServerConnectionEvent::Type::kAccepted) {
    auto state = std::make_shared<ConnectionState>(event.connection, event.peer,
                                                   weak_from_this());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      state->interrupted = children_interrupted_;
      state->refused = refusing_;
      connections_[event.connection] = state;
    }
    if (hooks_.accepted && !state->refused) hooks_.accepted(state);
    return;
  }
  std::shared_ptr<ConnectionState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(event.connection);
    if (it == connections_.end()) return;
    state = std::move(it->second);
    connections_.erase(it);
  }
  Close(state, event.status.ok() ? std::string("the client disconnected")
                                 : std::string(event.status.message()));
}

void Listener::Close(const std::shared_ptr<ConnectionState>& state,
                     const std::string& why) {
  std::deque<QueuedCall> dropped;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->closed) return;
    state->closed = true;
    state->closed_why = why;
    dropped.swap(state->calls);
    state->cv.notify_all();
  }
  state->stash->Close();
  if (hooks_.closed) hooks_.closed(state);
}

void Listener::OnCall(IncomingCall call, Responder responder) {
  std::shared_ptr<ConnectionState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(call.connection);
    if (it != connections_.end()) state = it->second;
  }
  if (state == nullptr) return;  // closing: its replies are dropped anyway
  if (state->refused) {
    (void)responder.Send(StatusReply(call.xid, wire::Status::kRefused,
                                     "the server stopped listening"));
    return;
  }
  Dispatch(
      std::move(call), std::move(responder), *state->stash,
      [&](QueuedCall queued) { hooks_.call(state, std::move(queued)); },
      state->oneways.get());
}

WorkerPool::WorkerPool(uint32_t threads, const std::string& name) {
  for (uint32_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, name] {
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        lock.lock();
      }
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

}  // namespace rpcrdma::thrift::internal
