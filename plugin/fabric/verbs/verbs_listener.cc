#include "plugin/fabric/verbs/verbs_listener.h"

#include <netinet/in.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/fabric/verbs/cm_events.h"
#include "plugin/fabric/verbs/verbs_address.h"

namespace rpcrdma::fabric::verbs {

VerbsConnectRequest::~VerbsConnectRequest() {
  if (id_ != nullptr) rdma_reject(id_.get(), nullptr, 0);
}

std::string VerbsConnectRequest::peer_address() const {
  if (id_ == nullptr) return "";
  return FormatSocketAddress(rdma_get_peer_addr(id_.get()));
}

absl::StatusOr<std::unique_ptr<Endpoint>> VerbsConnectRequest::Accept(
    absl::Span<const uint8_t> private_data, const EndpointOptions& options) {
  if (id_ == nullptr) {
    return absl::FailedPreconditionError(
        "connect request already accepted or rejected");
  }
  if (private_data.size() > kMaxAcceptPrivateData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "accept private data of ", private_data.size(),
        " octets; rdma-cm carries at most ", kMaxAcceptPrivateData));
  }
  // The endpoint's events come on a channel of its own.
  CmChannel channel(rdma_create_event_channel());
  if (channel == nullptr) return EventChannelError();
  if (rdma_migrate_id(id_.get(), channel.get()) != 0) {
    return ErrnoError("rdma_migrate_id");
  }
  listener_channel_.reset();
  // From here on the id belongs to the endpoint (and dies with it on
  // failure, which rejects the request).
  absl::StatusOr<std::unique_ptr<VerbsEndpoint>> ep = VerbsEndpoint::Create(
      std::move(channel), std::move(id_), options, fabric_options_);
  if (!ep.ok()) return ep.status();
  if (absl::Status s = (*ep)->Accept(private_data, peer_); !s.ok()) return s;
  return std::unique_ptr<Endpoint>(*std::move(ep));
}

absl::Status VerbsConnectRequest::Reject(
    absl::Span<const uint8_t> private_data) {
  if (id_ == nullptr) {
    return absl::FailedPreconditionError(
        "connect request already accepted or rejected");
  }
  if (private_data.size() > kMaxRejectPrivateData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reject private data of ", private_data.size(),
        " octets; rdma-cm carries at most ", kMaxRejectPrivateData));
  }
  const int rc = rdma_reject(
      id_.get(), private_data.empty() ? nullptr : private_data.data(),
      static_cast<uint8_t>(private_data.size()));
  absl::Status status = rc == 0 ? absl::OkStatus() : ErrnoError("rdma_reject");
  id_.reset();
  return status;
}

absl::StatusOr<std::unique_ptr<Listener>> VerbsListener::Create(
    absl::string_view address, const VerbsFabricOptions& fabric_options) {
  absl::StatusOr<SocketAddress> addr = ParseAddress(address, /*passive=*/true);
  if (!addr.ok()) return addr.status();
  std::shared_ptr<rdma_event_channel> channel(rdma_create_event_channel(),
                                              CmChannelDeleter());
  if (channel == nullptr) return EventChannelError();
  if (absl::Status s = SetNonBlocking(channel->fd); !s.ok()) return s;
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    return ErrnoError("rdma_create_id");
  }
  CmId id(raw);
  if (rdma_bind_addr(id.get(), addr->get()) != 0) {
    return ErrnoError("rdma_bind_addr");
  }
  if (rdma_listen(id.get(), 128) != 0) return ErrnoError("rdma_listen");
  const uint16_t port = ntohs(rdma_get_src_port(id.get()));
  return std::unique_ptr<Listener>(
      new VerbsListener(std::move(channel), std::move(id),
                        FormatAddress(addr->host, port), fabric_options));
}

absl::StatusOr<std::unique_ptr<ConnectRequest>>
VerbsListener::PollConnectRequest() {
  rdma_cm_event* raw = nullptr;
  while (rdma_get_cm_event(channel_.get(), &raw) == 0) {
    CmEvent event(raw);
    switch (event->event) {
      case RDMA_CM_EVENT_CONNECT_REQUEST: {
        // The request's id is new; it is ours once the event is
        // acknowledged (which rdma_migrate_id needs, too).
        CmId id(event->id);
        std::vector<uint8_t> data = CmPrivateData(*event);
        const PeerDepths peer{event->param.conn.initiator_depth,
                              event->param.conn.responder_resources};
        event.reset();
        return std::unique_ptr<ConnectRequest>(new VerbsConnectRequest(
            channel_, std::move(id), std::move(data), peer, fabric_options_));
      }
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (event->id == id_.get()) {
          return absl::UnavailableError(CmEventDetail(*event));
        }
        break;
      default:
        // Events of requests not yet accepted (the peer gave up, for
        // instance): the request's owner finds out when it accepts.
        break;
    }
  }
  return std::unique_ptr<ConnectRequest>();
}

}  // namespace rpcrdma::fabric::verbs
