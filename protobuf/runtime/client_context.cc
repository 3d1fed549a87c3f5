#include "rpcrdma/protobuf/client_context.h"

#include <utility>

#include "rpcrdma/channel.h"

namespace rpcrdma::protobuf {

void ClientContext::TryCancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (channel_ != nullptr && call_.has_value()) channel_->Cancel(*call_);
  if (cancel_stream_) cancel_stream_();
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

namespace rpcrdma::protobuf {

void CallBinding::BindStream(ClientContext& context,
                             std::function<void()> cancel) {
  absl::MutexLock lock(&context.mu_);
  context.cancel_stream_ = std::move(cancel);
  if (context.cancelled_) context.cancel_stream_();
}

void CallBinding::UnbindStream(ClientContext& context) {
  absl::MutexLock lock(&context.mu_);
  context.cancel_stream_ = nullptr;
}

}  // namespace rpcrdma::protobuf
