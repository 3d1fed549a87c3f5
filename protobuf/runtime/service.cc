#include "rpcrdma/protobuf/service.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "protobuf/runtime/server_call.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf {

Completion::Completion(std::shared_ptr<ServerCallState> state)
    : state_(std::move(state)) {}

Completion& Completion::operator=(Completion&& other) noexcept {
  if (this != &other) {
    Completion dropped(std::move(*this));
    state_ = std::move(other.state_);
  }
  return *this;
}

Completion::~Completion() {
  if (state_ == nullptr) return;
  Finish(absl::InternalError(
      absl::StrCat("the handler of ", state_->method().full_name(),
                   " dropped its completion without answering")));
}

void Completion::Finish(Status status) {
  if (state_ == nullptr) return;  // answered already
  std::shared_ptr<ServerCallState> state = std::move(state_);
  state->Answer(std::move(status));
}

Service::Service(const google::protobuf::ServiceDescriptor* descriptor,
                 uint32_t program)
    : descriptor_(descriptor),
      program_(program != 0 ? program
                            : ProgramNumberFor(descriptor->full_name())),
      handlers_(static_cast<size_t>(descriptor->method_count())) {}

Service::~Service() = default;

const Service::MethodHandler* Service::handler(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= handlers_.size()) {
    return nullptr;
  }
  const MethodHandler& h = handlers_[static_cast<size_t>(index)];
  return h ? &h : nullptr;
}

void Service::AddMethod(int index, MethodHandler handler) {
  handlers_.at(static_cast<size_t>(index)) = std::move(handler);
}

class ServiceSet::Dispatcher {
 public:
  explicit Dispatcher(ServiceSetOptions options) : options_(options) {}

  Status Register(Service* service) {
    absl::MutexLock lock(&mu_);
    auto [it, added] = services_.try_emplace(service->program(), service);
    if (!added) {
      return absl::AlreadyExistsError(absl::StrCat(
          service->descriptor()->full_name(), " and ",
          it->second->descriptor()->full_name(), " have the same program ",
          service->program(),
          "; give one another number (the Service's and Stub's program "
          "argument)"));
    }
    return absl::OkStatus();
  }

  void OnConnection(const ServerConnectionEvent& event) {
    absl::MutexLock lock(&mu_);
    if (event.type == ServerConnectionEvent::Type::kAccepted) {
      peers_[event.connection] = event.peer;
    } else {
      peers_.erase(event.connection);
    }
  }

  void Handle(IncomingCall call, Responder responder) {
    absl::StatusOr<DecodedCall> decoded = DecodeCallHeader(call.message.span());
    if (!decoded.ok()) {
      SendRpcError(responder, call.xid, AcceptStat::kGarbageArgs);
      return;
    }
    const CallHeader& h = decoded->header;
    Service* service = nullptr;
    std::string peer;
    {
      absl::MutexLock lock(&mu_);
      auto it = services_.find(h.program);
      if (it != services_.end()) service = it->second;
      auto p = peers_.find(call.connection);
      if (p != peers_.end()) peer = p->second;
    }
    if (service == nullptr) {
      SendRpcError(responder, h.xid, AcceptStat::kProgUnavail);
      return;
    }
    if (h.version != kProgramVersion) {
      SendRpcError(responder, h.xid, AcceptStat::kProgMismatch);
      return;
    }
    if (h.procedure == 0) {  // RFC 5531's NULL procedure: an empty reply
      SendRpcError(responder, h.xid, AcceptStat::kSuccess);
      return;
    }
    const int index = static_cast<int>(h.procedure - 1);
    const Service::MethodHandler* handler =
        h.procedure >
                static_cast<uint32_t>(service->descriptor()->method_count())
            ? nullptr
            : service->handler(index);
    if (handler == nullptr) {
      SendRpcError(responder, h.xid, AcceptStat::kProcUnavail);
      return;
    }
    auto state = std::make_shared<ServerCallState>(
        *service->descriptor()->method(index), h.xid, std::move(responder),
        options_.bulk_threshold);
    XdrReader in(call.message.span().subspan(decoded->body_offset));
    uint32_t timeout_ms = 0;
    Metadata metadata;
    absl::Status s = in.ReadUint32("timeout_ms", &timeout_ms);
    if (s.ok()) s = runtime::ReadMetadata(in, metadata);
    if (s.ok()) s = runtime::ReadPayload(in, state->request());
    if (!s.ok()) {
      // In the status, not as GARBAGE_ARGS, so the caller reads what was
      // wrong with its call.
      state->Answer(absl::InvalidArgumentError(
          absl::StrCat("the call of ", state->method().full_name(),
                       " is malformed: ", s.message())));
      return;
    }
    state->SetCallInfo(call.connection, std::move(peer), timeout_ms,
                       std::move(metadata));
    ServerContext* context = &state->context();
    const google::protobuf::Message* request = &state->request();
    google::protobuf::Message* response = &state->response();
    (*handler)(context, request, response, Completion(std::move(state)));
  }

 private:
  const ServiceSetOptions options_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, Service*> services_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ConnectionId, std::string> peers_ ABSL_GUARDED_BY(mu_);
};

ServiceSet::ServiceSet(ServiceSetOptions options)
    : dispatcher_(std::make_shared<Dispatcher>(options)) {}

ServiceSet::~ServiceSet() = default;

Status ServiceSet::Register(Service* service) {
  return dispatcher_->Register(service);
}

::rpcrdma::CallHandler ServiceSet::Handler() {
  return [d = dispatcher_](IncomingCall call, Responder responder) {
    d->Handle(std::move(call), std::move(responder));
  };
}

std::function<void(const ServerConnectionEvent&)>
ServiceSet::ConnectionObserver() {
  return [d = dispatcher_](const ServerConnectionEvent& event) {
    d->OnConnection(event);
  };
}

}  // namespace rpcrdma::protobuf
