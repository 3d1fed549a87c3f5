#include "rpcrdma/channel.h"

#include <memory>
#include <utility>

#include "plugin/api/channel_core.h"
#include "plugin/api/start_core.h"

namespace rpcrdma {

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config) {
  return Create(uri, config, ChannelOptions{});
}

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config,
    BackwardHandler backward_handler) {
  ChannelOptions options;
  options.backward_handler = std::move(backward_handler);
  return Create(uri, config, std::move(options));
}

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    absl::string_view uri, const config::TransportConfig& config,
    ChannelOptions options) {
  absl::StatusOr<std::shared_ptr<api_internal::ChannelCore>> core =
      api_internal::StartCore(
          uri, config, options.version_two, options.runtime,
          DeadlineIn(kShutdownDrain), [&](std::shared_ptr<Runtime> runtime) {
            auto made = std::make_shared<api_internal::ChannelCore>(
                std::move(runtime), std::move(options.backward_handler));
            made->SetVersionTwo(std::move(options.version_two));
            return made;
          });
  if (!core.ok()) return core.status();
  return std::unique_ptr<Channel>(new Channel(*std::move(core)));
}

Channel::Channel(std::shared_ptr<api_internal::ChannelCore> core)
    : core_(std::move(core)) {}

// The drain's outcome has nowhere to go from a destructor; a program that
// wants it calls Shutdown first.
Channel::~Channel() {
  core_->Shutdown(DeadlineIn(kShutdownDrain)).IgnoreError();
}

absl::Status Channel::Shutdown(Deadline deadline) {
  if (core_->InOwnThread()) {
    return absl::FailedPreconditionError(
        "channel: Shutdown from a callback or backward handler of the "
        "Channel");
  }
  return core_->Shutdown(deadline);
}

Channel::CallId Channel::Call(CallRequest request, Callback done) {
  return core_->Submit(std::move(request), std::move(done));
}

CallFuture Channel::Call(CallRequest request) {
  Callback done;
  std::future<absl::StatusOr<Reply>> reply = core_->promises().Start(done);
  const CallId id = core_->Submit(std::move(request), std::move(done));
  return CallFuture(id, std::move(reply));
}

absl::StatusOr<Reply> Channel::BlockingCall(CallRequest request) {
  return core_->BlockingCall(std::move(request));
}

Channel::CallId Channel::StartCall(CallRequest request) {
  return core_->StartCall(std::move(request));
}

absl::StatusOr<Reply> Channel::Await(CallId call) { return core_->Await(call); }

void Channel::Cancel(CallId call) { core_->Cancel(call); }

Counters Channel::counters() const { return core_->counters(); }
Metrics Channel::metrics() const { return core_->metrics(); }
bool Channel::connected() const { return core_->connected(); }
ConnectionInfo Channel::connection_info() const {
  return core_->connection_info();
}

absl::Status Channel::RequestPeerReceiveSize(uint32_t octets,
                                             Deadline deadline) {
  return core_->RequestPeerReceiveSize(octets, deadline);
}

absl::Status Channel::UpdateReceiveSize(uint32_t octets, Deadline deadline) {
  return core_->UpdateReceiveSize(octets, deadline);
}

absl::Status Channel::UpdateProperties(
    std::vector<TransportProperty> properties, Deadline deadline) {
  return core_->UpdateProperties(std::move(properties), deadline);
}

absl::StatusOr<PropertyAnswer> Channel::RequestPeerProperties(
    std::vector<TransportProperty> properties, Deadline deadline) {
  return core_->RequestPeerProperties(std::move(properties), deadline);
}

absl::StatusOr<OptionalMessage> Channel::SendOptional(OptionalMessage message,
                                                      Deadline deadline) {
  return core_->SendOptional(std::move(message), deadline);
}

}  // namespace rpcrdma
