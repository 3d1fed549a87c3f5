// Testing: fault injection into the soft fabrics that MakeFabric makes
// (fabric_factory.h), for tests that reach the fabric only through a URI.
#ifndef RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_TESTING_H_
#define RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_TESTING_H_

#include <optional>

#include "plugin/fabric/soft/soft_fabric.h"

namespace rpcrdma::fabric {

// The options of every soft fabric made from now on (their handshake
// timeouts aside, which MakeFabric's caller sets); nullopt restores the
// defaults.
void SetSoftFabricOptionsForTesting(std::optional<SoftFabricOptions> options);

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_FABRIC_FACTORY_TESTING_H_
