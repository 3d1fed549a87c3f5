// Serving protobuf services over an rpcrdma::Server: the base class of
// generated services, the Completion a handler answers with, and the
// ServiceSet that dispatches a Server's calls to several services.
//
//   my::rpcrdma::Greeter::Service greeter;  // your subclass
//   rpcrdma::protobuf::ServiceSet services;
//   if (Status s = services.Register(&greeter); !s.ok()) ...
//   auto server = rpcrdma::Server::Create(uri, config, services.Handler());
//
// Unary handlers run where the Server runs its handler (the connection's
// loop thread, or TransportConfig.execution.handler_threads): one that
// blocks should have those threads. A handler may answer at once or keep
// its Completion and answer later from any thread. A streaming handler
// (server-streaming, client-streaming or bidirectional) runs on a thread
// of its own for its stream (it may block in Read or Write, stream.h); the
// stream ends when it returns.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVICE_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/server_context.h"
#include "rpcrdma/protobuf/status.h"
#include "rpcrdma/protobuf/stream.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/server.h"

namespace rpcrdma::protobuf {

class ServerCallState;

// Answers one call, once, from any thread: Finish(status) sends the
// response (when status is OK) or the error's code and message, with the
// context's trailing metadata. A Completion destroyed unanswered answers
// INTERNAL "the handler of <method> dropped its completion without
// answering", so that no call is left waiting for its deadline.
class Completion {
 public:
  explicit Completion(std::shared_ptr<ServerCallState> state);
  Completion(Completion&&) noexcept = default;
  Completion& operator=(Completion&& other) noexcept;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion();

  void Finish(Status status);
  void operator()(Status status) { Finish(std::move(status)); }

 private:
  std::shared_ptr<ServerCallState> state_;  // null once finished
};

class Service {
 public:
  // The context, request and response stay valid until `done` is called.
  using MethodHandler = std::function<void(
      ServerContext* context, const google::protobuf::Message* request,
      google::protobuf::Message* response, Completion done)>;

  // `program` 0: ProgramNumberFor(descriptor's full name).
  explicit Service(const google::protobuf::ServiceDescriptor* descriptor,
                   uint32_t program = 0);
  virtual ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  const google::protobuf::ServiceDescriptor* descriptor() const {
    return descriptor_;
  }
  uint32_t program() const { return program_; }
  // A server-streaming handler: writes the stream's messages, returns its
  // status. The context and request stay valid until it returns.
  using ServerStreamingHandler = std::function<Status(
      ServerContext* context, const google::protobuf::Message* request,
      ServerStreamWriter* writer)>;

  // A client-streaming handler: reads the client's messages, fills
  // `response`, returns its status (the response goes only when OK).
  using ClientStreamingHandler =
      std::function<Status(ServerContext* context, ServerStreamReader* reader,
                           google::protobuf::Message* response)>;
  // A bidirectional handler: reads the client's messages and writes its
  // own, returns the stream's status.
  using BidiStreamingHandler =
      std::function<Status(ServerContext* context, ServerStreamReader* reader,
                           ServerStreamWriter* writer)>;

  // The handler of the method at `index` of each kind, or null (a method
  // of another kind, or none).
  const MethodHandler* handler(int index) const;
  const ServerStreamingHandler* server_streaming_handler(int index) const;
  const ClientStreamingHandler* client_streaming_handler(int index) const;
  const BidiStreamingHandler* bidi_streaming_handler(int index) const;

 protected:
  void AddMethod(int index, MethodHandler handler);
  void AddServerStreamingMethod(int index, ServerStreamingHandler handler);
  void AddClientStreamingMethod(int index, ClientStreamingHandler handler);
  void AddBidiStreamingMethod(int index, BidiStreamingHandler handler);

 private:
  const google::protobuf::ServiceDescriptor* descriptor_;
  uint32_t program_;
  std::vector<MethodHandler> handlers_;
  std::vector<ServerStreamingHandler> stream_handlers_;
  std::vector<ClientStreamingHandler> client_stream_handlers_;
  std::vector<BidiStreamingHandler> bidi_handlers_;
};

// Bounds on a peer's streams (protobuf/README.md, "Streams"): what one
// connection may hold of a server, however it behaves.
inline constexpr uint32_t kDefaultMaxStreamsPerConnection = 16;
// Streams open at once on the whole ServiceSet, over every connection:
// each has a thread, so that many clients together cannot make the
// server start threads without end.
inline constexpr uint32_t kDefaultMaxStreams = 256;
inline constexpr uint32_t kDefaultStreamBuffer = 4;

struct ServiceSetOptions {
  // As ChannelOptions::bulk_threshold, for the responses' fields.
  size_t bulk_threshold = kDefaultBulkThreshold;
  // Streams open at once on one connection (each has a handler thread);
  // an open beyond is answered RESOURCE_EXHAUSTED. A stream counts until
  // its end was sent (or it was aborted) and its handler has returned.
  uint32_t max_streams_per_connection = kDefaultMaxStreamsPerConnection;
  // The same over every connection together: RESOURCE_EXHAUSTED beyond.
  uint32_t max_streams = kDefaultMaxStreams;
  // Messages a stream holds that its client has not asked for yet (at
  // least 1); the handler's Write blocks beyond. The same bounds the
  // client's messages a stream holds that its handler has not read: the
  // SEND of one beyond is answered only once the handler reads.
  uint32_t stream_buffer = kDefaultStreamBuffer;
};

// What the ServiceSet's streams hold and have held.
struct StreamCounters {
  uint64_t opened = 0;
  uint64_t refused = 0;      // opens answered RESOURCE_EXHAUSTED (or stopping)
  size_t open = 0;           // streams with state now
  size_t buffered = 0;       // messages held now, all streams together
  size_t peak_buffered = 0;  // the most messages one stream has held
  // The client's messages (client-streaming and bidirectional): received
  // and not read now, all streams together (their SEND answered or not);
  // the most one stream has held; SEND calls whose answer is held now.
  size_t received = 0;
  size_t peak_received = 0;
  size_t held_sends = 0;
};

class ServiceSet {
 public:
  explicit ServiceSet(ServiceSetOptions options = {});
  ~ServiceSet();
  ServiceSet(const ServiceSet&) = delete;
  ServiceSet& operator=(const ServiceSet&) = delete;

  // Serves `service` (not owned; it must outlive the Server and this
  // ServiceSet, whose destructor ends every stream and waits for their
  // handlers to return) under its program. ALREADY_EXISTS when another
  // registered service has the same program number. Register every service
  // before the Server starts.
  Status Register(Service* service);
  // The Server's handler. The ServiceSet must outlive the Server.
  ::rpcrdma::CallHandler Handler();
  // For ServerOptions::on_connection: lets ServerContext::peer() name the
  // client's address, and ends a lost connection's streams (without it
  // they end only at their deadline or when the ServiceSet goes).
  std::function<void(const ServerConnectionEvent&)> ConnectionObserver();
  StreamCounters stream_counters() const;

 private:
  class Dispatcher;
  std::shared_ptr<Dispatcher> dispatcher_;
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVICE_H_
