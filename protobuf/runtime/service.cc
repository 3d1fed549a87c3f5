#include "rpcrdma/protobuf/service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "protobuf/runtime/server_call.h"
#include "protobuf/runtime/stream_procedures.h"
#include "protobuf/runtime/stream_table.h"
#include "protobuf/runtime/stream_threads.h"
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
      handlers_(static_cast<size_t>(descriptor->method_count())),
      stream_handlers_(static_cast<size_t>(descriptor->method_count())),
      client_stream_handlers_(static_cast<size_t>(descriptor->method_count())),
      bidi_handlers_(static_cast<size_t>(descriptor->method_count())) {}

Service::~Service() = default;

const Service::MethodHandler* Service::handler(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= handlers_.size()) {
    return nullptr;
  }
  const MethodHandler& h = handlers_[static_cast<size_t>(index)];
  return h ? &h : nullptr;
}

namespace {

template <typename Handler>
const Handler* HandlerAt(const std::vector<Handler>& handlers, int index) {
  if (index < 0 || static_cast<size_t>(index) >= handlers.size()) {
    return nullptr;
  }
  const Handler& h = handlers[static_cast<size_t>(index)];
  return h ? &h : nullptr;
}

}  // namespace

const Service::ServerStreamingHandler* Service::server_streaming_handler(
    int index) const {
  return HandlerAt(stream_handlers_, index);
}

const Service::ClientStreamingHandler* Service::client_streaming_handler(
    int index) const {
  return HandlerAt(client_stream_handlers_, index);
}

const Service::BidiStreamingHandler* Service::bidi_streaming_handler(
    int index) const {
  return HandlerAt(bidi_handlers_, index);
}

void Service::AddMethod(int index, MethodHandler handler) {
  handlers_.at(static_cast<size_t>(index)) = std::move(handler);
}

void Service::AddServerStreamingMethod(int index,
                                       ServerStreamingHandler handler) {
  stream_handlers_.at(static_cast<size_t>(index)) = std::move(handler);
}

void Service::AddClientStreamingMethod(int index,
                                       ClientStreamingHandler handler) {
  client_stream_handlers_.at(static_cast<size_t>(index)) = std::move(handler);
}

void Service::AddBidiStreamingMethod(int index, BidiStreamingHandler handler) {
  bidi_handlers_.at(static_cast<size_t>(index)) = std::move(handler);
}

class ServiceSet::Dispatcher {
 public:
  explicit Dispatcher(ServiceSetOptions options)
      : options_(options),
        streams_({.max_per_connection = options.max_streams_per_connection,
                  .max_total = options.max_streams,
                  .buffer = options.stream_buffer,
                  .bulk_threshold = options.bulk_threshold}) {}

  // Ends every stream and waits for their handlers (~ServiceSet).
  void Shutdown() {
    streams_.Shutdown();
    threads_.JoinAll();
  }

  StreamCounters stream_counters() {
    const runtime::StreamTableCounts c = streams_.counts();
    return {.opened = c.opened,
            .refused = c.refused,
            .open = c.open,
            .buffered = c.buffered,
            .peak_buffered = c.peak_buffered,
            .received = c.received,
            .peak_received = c.peak_received,
            .held_sends = c.held_sends};
  }

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
    const bool accepted = event.type == ServerConnectionEvent::Type::kAccepted;
    {
      absl::MutexLock lock(&mu_);
      if (accepted) {
        peers_[event.connection] = event.peer;
      } else {
        peers_.erase(event.connection);
      }
    }
    if (accepted) {
      streams_.ConnectionAccepted(event.connection);
    } else {
      // No NEXT can come for its streams any more: their state goes now,
      // not at a deadline that may never come (protobuf/README.md,
      // "Streams").
      streams_.AbortConnection(
          event.connection, absl::UnavailableError("the connection is lost"));
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
    XdrReader body(call.message.span().subspan(decoded->body_offset));
    if (runtime::ServeStreamProcedure(streams_, call.connection, h.procedure,
                                      h.xid, body, responder)) {
      return;
    }
    const int index = static_cast<int>(h.procedure - 1);
    const bool known =
        h.procedure <=
        static_cast<uint32_t>(service->descriptor()->method_count());
    const Service::MethodHandler* handler =
        known ? service->handler(index) : nullptr;
    StreamBody stream_body = known ? StreamBodyOf(*service, index) : nullptr;
    if (handler == nullptr && stream_body == nullptr) {
      SendRpcError(responder, h.xid, AcceptStat::kProcUnavail);
      return;
    }
    auto state = std::make_shared<ServerCallState>(
        *service->descriptor()->method(index), h.xid, std::move(responder),
        options_.bulk_threshold);
    state->SetWriteChunks(std::move(call.write_chunk_capacities));
    uint32_t timeout_ms = 0;
    Metadata metadata;
    absl::Status s = body.ReadUint32("timeout_ms", &timeout_ms);
    if (s.ok()) s = runtime::ReadMetadata(body, metadata);
    if (s.ok()) s = runtime::ReadPayload(body, state->request());
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
    if (stream_body != nullptr) {
      Open(call.connection, std::move(state), std::move(stream_body));
      return;
    }
    ServerContext* context = &state->context();
    const google::protobuf::Message* request = &state->request();
    google::protobuf::Message* response = &state->response();
    (*handler)(context, request, response, Completion(std::move(state)));
  }

 private:
  // What a stream's thread runs: the method's handler over the stream,
  // returning the stream's status.
  using StreamBody = std::function<Status(ServerCallState& call,
                                          runtime::ServerStream& stream)>;

  // The body of the streaming method at `index`, null when it has none
  // (unary, or not served).
  static StreamBody StreamBodyOf(const Service& service, int index) {
    if (const auto* h = service.server_streaming_handler(index)) {
      return [h](ServerCallState& call, runtime::ServerStream& stream) {
        return (*h)(&call.context(), &call.request(), &stream);
      };
    }
    if (const auto* h = service.client_streaming_handler(index)) {
      return [h](ServerCallState& call, runtime::ServerStream& stream) {
        Status status = (*h)(&call.context(), stream.inbox(), &call.response());
        if (!status.ok()) return status;
        // The response is the stream's one message, before its end; moved,
        // not copied (its bulk fields may be large).
        std::unique_ptr<google::protobuf::Message> response(
            call.response().New());
        response->GetReflection()->Swap(response.get(), &call.response());
        (void)stream.Write(std::move(response));
        return status;
      };
    }
    if (const auto* h = service.bidi_streaming_handler(index)) {
      return [h](ServerCallState& call, runtime::ServerStream& stream) {
        return (*h)(&call.context(), stream.inbox(), &stream);
      };
    }
    return nullptr;
  }

  // A streaming call: the stream's id goes back at once, and the handler
  // runs on a thread of its own, reading from and writing into the stream.
  void Open(ConnectionId connection, std::shared_ptr<ServerCallState> state,
            StreamBody body) {
    absl::StatusOr<std::shared_ptr<runtime::ServerStream>> stream =
        streams_.Open(connection, state->method(), state->context().deadline());
    if (!stream.ok()) {
      state->Answer(stream.status());
      return;
    }
    state->SetCancelFlag((*stream)->cancelled());
    // The handler may start writing before the open is answered: its
    // messages wait in the buffer for NEXT calls, which only the answer
    // makes possible. The answer touches only the call's responder.
    if (!threads_.Start([state, stream = *stream, body = std::move(body)] {
          Status status = body(*state, *stream);
          stream->Finish(std::move(status),
                         state->context().trailing_metadata());
        })) {
      const Status refused = absl::ResourceExhaustedError(
          "the server has no thread for another stream's handler");
      (*stream)->Abort(refused);
      (*stream)->Finish(refused, {});  // no handler will run: its state goes
      state->Answer(refused);
      return;
    }
    state->AnswerStreamOpened((*stream)->id());
  }

  const ServiceSetOptions options_;
  runtime::StreamTable streams_;
  runtime::StreamThreads threads_;  // joined before streams_ goes
  absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, Service*> services_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ConnectionId, std::string> peers_ ABSL_GUARDED_BY(mu_);
};

ServiceSet::ServiceSet(ServiceSetOptions options)
    : dispatcher_(std::make_shared<Dispatcher>(options)) {}

ServiceSet::~ServiceSet() { dispatcher_->Shutdown(); }

StreamCounters ServiceSet::stream_counters() const {
  return dispatcher_->stream_counters();
}

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
