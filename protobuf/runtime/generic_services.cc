// protobuf's generic services over the adapter's Channel and Service
// (rpcrdma/protobuf/generic_services.h).
#include "rpcrdma/protobuf/generic_services.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rpcrdma/protobuf/program.h"

namespace rpcrdma::protobuf {
namespace {

bool IsStreaming(const google::protobuf::MethodDescriptor& method) {
  return method.client_streaming() || method.server_streaming();
}

Status StreamingRefused(const google::protobuf::MethodDescriptor& method) {
  return absl::UnimplementedError(absl::StrCat(
      method.full_name(),
      " is a streaming method: generic services would carry it as a unary "
      "call, which this adapter does not do; use the generated stubs"));
}

// Runs the generic stub's `done` once the call completed.
void Finish(RpcController& controller, Status status,
            google::protobuf::Closure* done) {
  controller.SetStatus(std::move(status));
  if (done != nullptr) done->Run();
}

// The `done` a google::protobuf::Service runs when it has answered: it
// sends the reply (or the controller's failure) through the Completion.
// `completed` tells the controller first (GenericService passes it: only a
// friend of RpcController may).
class AnswerCall final : public google::protobuf::Closure {
 public:
  AnswerCall(Completion done, void (*completed)(RpcController&))
      : done_(std::move(done)), completed_(completed) {}
  RpcController& controller() { return controller_; }

  void Run() override {
    completed_(controller_);
    done_.Finish(controller_.status());
    delete this;
  }

 private:
  RpcController controller_;
  Completion done_;
  void (*const completed_)(RpcController&);
};

}  // namespace

RpcController::RpcController() : client_(std::make_unique<ClientContext>()) {}
RpcController::~RpcController() = default;

void RpcController::Reset() {
  client_ = std::make_unique<ClientContext>();
  server_ = nullptr;
  on_cancel_ = nullptr;
  status_ = absl::OkStatus();
}

void RpcController::SetFailed(const std::string& reason) {
  status_ = absl::UnknownError(reason);
}

bool RpcController::IsCanceled() const {
  return server_ != nullptr && server_->IsCancelled();
}

void RpcController::NotifyOnCancel(google::protobuf::Closure* callback) {
  if (IsCanceled()) {
    callback->Run();
    return;
  }
  on_cancel_ = callback;
}

void RpcController::Completed() {
  if (on_cancel_ != nullptr) std::exchange(on_cancel_, nullptr)->Run();
}

RpcChannel::RpcChannel(std::shared_ptr<Channel> channel)
    : channel_(std::move(channel)) {}
RpcChannel::~RpcChannel() = default;

void RpcChannel::CallMethod(const google::protobuf::MethodDescriptor* method,
                            google::protobuf::RpcController* controller,
                            const google::protobuf::Message* request,
                            google::protobuf::Message* response,
                            google::protobuf::Closure* done) {
  auto* ours = dynamic_cast<RpcController*>(controller);
  if (ours == nullptr) {
    controller->SetFailed(
        "INVALID_ARGUMENT: rpcrdma::protobuf::RpcChannel needs an "
        "rpcrdma::protobuf::RpcController");
    if (done != nullptr) done->Run();
    return;
  }
  if (IsStreaming(*method)) {
    Finish(*ours, StreamingRefused(*method), done);
    return;
  }
  const uint32_t program = ProgramNumberFor(method->service()->full_name());
  if (done == nullptr) {
    ours->SetStatus(channel_->CallUnary(program, *method, ours->context(),
                                        *request, *response));
    return;
  }
  channel_->CallUnaryAsync(
      program, *method, ours->context(), *request, *response,
      [ours, done](Status status) { Finish(*ours, std::move(status), done); });
}

GenericService::GenericService(google::protobuf::Service* service,
                               uint32_t program)
    : Service(service->GetDescriptor(), program), service_(service) {
  const google::protobuf::ServiceDescriptor* descriptor =
      service->GetDescriptor();
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = descriptor->method(i);
    if (IsStreaming(*method)) continue;
    AddMethod(i, [this, method](ServerContext* context,
                                const google::protobuf::Message* request,
                                google::protobuf::Message* response,
                                Completion done) {
      Serve(method, context, request, response, std::move(done));
    });
  }
}

void GenericService::Serve(const google::protobuf::MethodDescriptor* method,
                           ServerContext* context,
                           const google::protobuf::Message* request,
                           google::protobuf::Message* response,
                           Completion done) {
  auto* answer = new AnswerCall(  // deleted by its Run
      std::move(done), [](RpcController& c) { c.Completed(); });
  answer->controller().ServeFor(context);
  service_->CallMethod(method, &answer->controller(), request, response,
                       answer);
}

}  // namespace rpcrdma::protobuf
