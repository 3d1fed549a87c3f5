#include "rpcrdma/protobuf/client_context.h"

#include "rpcrdma/channel.h"

namespace rpcrdma::protobuf {

void ClientContext::TryCancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (channel_ != nullptr && call_.has_value()) channel_->Cancel(*call_);
}

bool CallBinding::Cancelled(ClientContext& context) {
  absl::MutexLock lock(&context.mu_);
  return context.cancelled_;
}

void CallBinding::Bind(ClientContext& context, ::rpcrdma::Channel& channel,
                       CallId call) {
  absl::MutexLock lock(&context.mu_);
  context.channel_ = &channel;
  context.call_ = call;
  if (context.cancelled_) channel.Cancel(call);
}

void CallBinding::Unbind(ClientContext& context) {
  absl::MutexLock lock(&context.mu_);
  context.channel_ = nullptr;
  context.call_.reset();
}

}  // namespace rpcrdma::protobuf
