#include "plugin/fabric/verbs/verbs_fabric.h"

#include <poll.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/fabric/verbs/cm_events.h"
#include "plugin/fabric/verbs/verbs_address.h"
#include "plugin/fabric/verbs/verbs_endpoint.h"
#include "plugin/fabric/verbs/verbs_listener.h"
#include "plugin/fabric/verbs/verbs_resources.h"

namespace rpcrdma::fabric {
namespace {

using verbs::CmChannel;
using verbs::CmEvent;
using verbs::CmId;
using verbs::VerbsEndpoint;

// Waits for the next event on `channel` (non-blocking fd) and checks that
// it is `expected`; otherwise the detail of what came instead.
absl::StatusOr<bool> AwaitEvent(rdma_event_channel* channel,
                                rdma_cm_event_type expected, int timeout_ms,
                                std::string* detail) {
  pollfd p{channel->fd, POLLIN, 0};
  const int ready = poll(&p, 1, timeout_ms);
  if (ready < 0) return verbs::ErrnoError("poll");
  if (ready == 0) {
    *detail = absl::StrCat("no ", rdma_event_str(expected), " within ",
                           timeout_ms, " ms");
    return false;
  }
  rdma_cm_event* raw = nullptr;
  if (rdma_get_cm_event(channel, &raw) != 0) {
    return verbs::ErrnoError("rdma_get_cm_event");
  }
  CmEvent event(raw);
  if (event->event == expected && event->status == 0) return true;
  *detail = verbs::CmEventDetail(*event);
  return false;
}

class VerbsFabric final : public Fabric {
 public:
  explicit VerbsFabric(const VerbsFabricOptions& options) : options_(options) {}

  absl::string_view name() const override { return "verbs"; }

  absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, absl::Span<const uint8_t> private_data,
      const EndpointOptions& options) override {
    if (private_data.size() > kMaxConnectPrivateData) {
      return absl::InvalidArgumentError(absl::StrCat(
          "connect private data of ", private_data.size(),
          " octets; rdma-cm carries at most ", kMaxConnectPrivateData));
    }
    absl::StatusOr<verbs::SocketAddress> addr = verbs::ParseAddress(address);
    if (!addr.ok()) return addr.status();
    CmChannel channel(rdma_create_event_channel());
    if (channel == nullptr) return verbs::EventChannelError();
    if (absl::Status s = verbs::SetNonBlocking(channel->fd); !s.ok()) return s;
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
      return verbs::ErrnoError("rdma_create_id");
    }
    CmId id(raw);
    std::string detail;
    if (rdma_resolve_addr(id.get(), nullptr, addr->get(),
                          options_.resolve_timeout_ms) != 0) {
      detail = std::string(verbs::ErrnoError("rdma_resolve_addr").message());
      return VerbsEndpoint::CreateUnreachable(std::move(detail));
    }
    // The CM reports the timeout itself; the extra second covers a late
    // event.
    const int wait_ms = options_.resolve_timeout_ms + 1000;
    absl::StatusOr<bool> resolved = AwaitEvent(
        channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED, wait_ms, &detail);
    if (!resolved.ok()) return resolved.status();
    if (!*resolved) return VerbsEndpoint::CreateUnreachable(std::move(detail));
    if (rdma_resolve_route(id.get(), options_.resolve_timeout_ms) != 0) {
      detail = std::string(verbs::ErrnoError("rdma_resolve_route").message());
      return VerbsEndpoint::CreateUnreachable(std::move(detail));
    }
    resolved = AwaitEvent(channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, wait_ms,
                          &detail);
    if (!resolved.ok()) return resolved.status();
    if (!*resolved) return VerbsEndpoint::CreateUnreachable(std::move(detail));
    absl::StatusOr<std::unique_ptr<VerbsEndpoint>> ep = VerbsEndpoint::Create(
        std::move(channel), std::move(id), options, options_);
    if (!ep.ok()) return ep.status();
    if (absl::Status s = (*ep)->Connect(private_data); !s.ok()) return s;
    return std::unique_ptr<Endpoint>(*std::move(ep));
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address) override {
    return verbs::VerbsListener::Create(address, options_);
  }

 private:
  VerbsFabricOptions options_;
};

}  // namespace

std::unique_ptr<Fabric> MakeVerbsFabric(VerbsFabricOptions options) {
  return std::make_unique<VerbsFabric>(options);
}

}  // namespace rpcrdma::fabric
