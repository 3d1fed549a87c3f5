// Serving protobuf services over an rpcrdma::Server: the base class of
// generated services, the Completion a handler answers with, and the
// ServiceSet that dispatches a Server's calls to several services.
//
//   my::rpcrdma::Greeter::Service greeter;  // your subclass
//   rpcrdma::protobuf::ServiceSet services;
//   if (Status s = services.Register(&greeter); !s.ok()) ...
//   auto server = rpcrdma::Server::Create(uri, config, services.Handler());
//
// Handlers run where the Server runs its handler (the connection's loop
// thread, or TransportConfig.execution.handler_threads): one that blocks
// should have those threads. A handler may answer at once or keep its
// Completion and answer later from any thread.
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
  // The handler of the method at `index`, or null (a streaming method,
  // which this version does not serve).
  const MethodHandler* handler(int index) const;

 protected:
  void AddMethod(int index, MethodHandler handler);

 private:
  const google::protobuf::ServiceDescriptor* descriptor_;
  uint32_t program_;
  std::vector<MethodHandler> handlers_;
};

struct ServiceSetOptions {
  // As ChannelOptions::bulk_threshold, for the responses' fields.
  size_t bulk_threshold = kDefaultBulkThreshold;
};

class ServiceSet {
 public:
  explicit ServiceSet(ServiceSetOptions options = {});
  ~ServiceSet();
  ServiceSet(const ServiceSet&) = delete;
  ServiceSet& operator=(const ServiceSet&) = delete;

  // Serves `service` (not owned; it must outlive the Server) under its
  // program. ALREADY_EXISTS when another registered service has the same
  // program number. Register every service before the Server starts.
  Status Register(Service* service);
  // The Server's handler. The ServiceSet must outlive the Server.
  ::rpcrdma::CallHandler Handler();
  // For ServerOptions::on_connection: lets ServerContext::peer() name the
  // client's address.
  std::function<void(const ServerConnectionEvent&)> ConnectionObserver();

 private:
  class Dispatcher;
  std::shared_ptr<Dispatcher> dispatcher_;
};

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_SERVICE_H_
