#include "plugin/fabric/fabric_factory.h"

#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "plugin/fabric/fabric_factory_testing.h"
#include "plugin/fabric/soft/soft_fabric.h"
#include "plugin/fabric/soft/soft_socket.h"
#ifdef RPCRDMA_FABRIC_HAVE_VERBS
#include "plugin/fabric/verbs/verbs_fabric.h"
#endif

namespace rpcrdma::fabric {
namespace {

std::mutex soft_options_mu;
std::optional<SoftFabricOptions> soft_options_for_testing;

}  // namespace

void SetSoftFabricOptionsForTesting(std::optional<SoftFabricOptions> options) {
  std::lock_guard<std::mutex> lock(soft_options_mu);
  soft_options_for_testing = std::move(options);
}

absl::StatusOr<std::unique_ptr<Fabric>> MakeFabric(
    FabricKind kind, const FabricTimeouts& timeouts) {
  if (kind == FabricKind::kVerbs) {
#ifdef RPCRDMA_FABRIC_HAVE_VERBS
    return MakeVerbsFabric();
#else
    return absl::UnimplementedError("rdma://: built without rdma-core");
#endif
  }
  SoftFabricOptions options;
  {
    std::lock_guard<std::mutex> lock(soft_options_mu);
    options = soft_options_for_testing.value_or(SoftFabricOptions{});
  }
  options.handshake_timeout_ms = timeouts.handshake_timeout_ms;
  options.handshake_answer_timeout_ms = timeouts.handshake_answer_timeout_ms;
  return MakeSoftFabric(options);
}

absl::StatusOr<ResolvedAddress> ResolveConnectAddress(
    FabricKind kind, absl::string_view address) {
  if (kind == FabricKind::kVerbs) {
    absl::StatusOr<HostPort> host_port = ParseHostPort(address);
    if (!host_port.ok()) return host_port.status();
    return ResolveHostPort(*host_port, /*passive=*/false);
  }
  absl::StatusOr<soft::SocketAddress> soft =
      soft::ParseAddress(address, /*passive=*/false);
  if (!soft.ok()) return soft.status();
  ResolvedAddress out;
  std::memcpy(&out.storage, &soft->storage, soft->length);
  out.length = soft->length;
  out.family = soft->family;
  return out;
}

}  // namespace rpcrdma::fabric
