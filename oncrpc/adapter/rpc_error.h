// How the transport's statuses read as libtirpc's rpc_err (clnt_rdma.h
// lists the mapping).
#ifndef RPCRDMA_ONCRPC_ADAPTER_RPC_ERROR_H_
#define RPCRDMA_ONCRPC_ADAPTER_RPC_ERROR_H_

#include <rpc/rpc.h>

#include "absl/status/status.h"

namespace rpcrdma::oncrpc {

rpc_err RpcErrorOf(const absl::Status& status);

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_RPC_ERROR_H_
