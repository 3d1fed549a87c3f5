// Picks and makes the fabric a URI scheme names (soft over Unix-domain or
// TCP sockets, or verbs on rdma-core), so that its users see only fabric.h.
#ifndef RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_H_
#define RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/fabric/address.h"
#include "plugin/fabric/fabric.h"

namespace rpcrdma::fabric {

enum class FabricKind {
  kSoftUnix,  // addresses "unix:/path" or "unix:@name"
  kSoftTcp,   // addresses "tcp:HOST:PORT"
  kVerbs,     // addresses "HOST:PORT"
};

// The soft fabric's bounds on its connection handshake (the verbs fabric
// has the RDMA CM's own).
struct FabricTimeouts {
  uint32_t handshake_timeout_ms = 0;
  uint32_t handshake_answer_timeout_ms = 0;
};

// UNIMPLEMENTED for kVerbs in a build without rdma-core.
absl::StatusOr<std::unique_ptr<Fabric>> MakeFabric(
    FabricKind kind, const FabricTimeouts& timeouts);

// The socket address a connect to `address` (in the syntax of `kind`)
// goes to; names are resolved.
absl::StatusOr<ResolvedAddress> ResolveConnectAddress(
    FabricKind kind, absl::string_view address);

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_H_
