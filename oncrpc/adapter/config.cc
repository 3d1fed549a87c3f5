#include "rpcrdma/oncrpc/config.h"

#include <utility>

#include "oncrpc/adapter/last_error.h"
#include "rpcrdma/config.h"

namespace {

bool_t Take(rdma_oncrpc_config* config,
            absl::StatusOr<rpcrdma::config::TransportConfig> transport) {
  if (!transport.ok()) {
    rpcrdma::oncrpc::SetLastError(transport.status());
    return FALSE;
  }
  config->config.transport = *std::move(transport);
  return TRUE;
}

}  // namespace

extern "C" {

rdma_oncrpc_config* rdma_oncrpc_config_create(void) {
  return new rdma_oncrpc_config{};
}

void rdma_oncrpc_config_destroy(rdma_oncrpc_config* config) { delete config; }

bool_t rdma_oncrpc_config_load_transport(rdma_oncrpc_config* config,
                                         const char* path) {
  if (path == nullptr) {
    rpcrdma::oncrpc::SetLastError("rdma_oncrpc_config_load_transport: NULL");
    return FALSE;
  }
  return Take(config, rpcrdma::LoadConfigFile(path));
}

bool_t rdma_oncrpc_config_parse_transport(rdma_oncrpc_config* config,
                                          const char* text) {
  if (text == nullptr) {
    rpcrdma::oncrpc::SetLastError("rdma_oncrpc_config_parse_transport: NULL");
    return FALSE;
  }
  return Take(config, rpcrdma::ParseConfig(text, "transport config"));
}

void rdma_oncrpc_config_set_ddp_policy(rdma_oncrpc_config* config,
                                       rpcprog_t prog, rpcvers_t vers,
                                       const rdma_ddp_policy* policy) {
  const rpcrdma::oncrpc::DdpPolicy copy =
      policy != nullptr ? policy->policy : rpcrdma::oncrpc::DdpPolicy{};
  if (prog == 0) {
    config->config.default_policy = copy;
  } else {
    config->config.policies[{prog, vers}] = copy;
  }
}

void rdma_oncrpc_config_set_backchannel(rdma_oncrpc_config* config,
                                        bool_t serve) {
  config->config.backchannel = serve != 0;
}

}  // extern "C"
