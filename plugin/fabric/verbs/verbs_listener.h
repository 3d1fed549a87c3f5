// The passive side on rdma-cm: a listening id with its own event channel,
// and the connect requests it reports. An accepted request's id moves to an
// event channel of its own (rdma_migrate_id) and becomes a VerbsEndpoint.
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_LISTENER_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_LISTENER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/verbs/verbs_endpoint.h"
#include "plugin/fabric/verbs/verbs_fabric.h"
#include "plugin/fabric/verbs/verbs_resources.h"

namespace rpcrdma::fabric::verbs {

class VerbsConnectRequest final : public ConnectRequest {
 public:
  VerbsConnectRequest(std::shared_ptr<rdma_event_channel> listener_channel,
                      CmId id, std::vector<uint8_t> private_data,
                      PeerDepths peer, VerbsFabricOptions fabric_options)
      : listener_channel_(std::move(listener_channel)),
        id_(std::move(id)),
        private_data_(std::move(private_data)),
        peer_(peer),
        fabric_options_(fabric_options) {}
  // A request neither accepted nor rejected is rejected without data.
  ~VerbsConnectRequest() override;

  absl::Span<const uint8_t> private_data() const override {
    return private_data_;
  }
  std::string peer_address() const override;
  absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) override;
  absl::Status Reject(absl::Span<const uint8_t> private_data) override;

 private:
  // The id reports on the listener's channel until it is accepted, so the
  // channel lives as long as the id (the listener may go first).
  std::shared_ptr<rdma_event_channel> listener_channel_;
  CmId id_;  // null once accepted or rejected
  std::vector<uint8_t> private_data_;
  PeerDepths peer_;
  VerbsFabricOptions fabric_options_;
};

class VerbsListener final : public Listener {
 public:
  // Binds to `host`:`port` and listens.
  static absl::StatusOr<std::unique_ptr<Listener>> Create(
      absl::string_view address, const VerbsFabricOptions& fabric_options);

  std::string address() const override { return address_; }
  int event_fd() const override { return channel_->fd; }
  absl::StatusOr<std::unique_ptr<ConnectRequest>> PollConnectRequest() override;

 private:
  VerbsListener(std::shared_ptr<rdma_event_channel> channel, CmId id,
                std::string address, const VerbsFabricOptions& fabric_options)
      : channel_(std::move(channel)),
        id_(std::move(id)),
        address_(std::move(address)),
        fabric_options_(fabric_options) {}

  std::shared_ptr<rdma_event_channel> channel_;
  CmId id_;
  std::string address_;
  VerbsFabricOptions fabric_options_;
};

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_LISTENER_H_
