// The calling thread's last failure, as rdma_oncrpc_error() reports it.
#ifndef RPCRDMA_ONCRPC_ADAPTER_LAST_ERROR_H_
#define RPCRDMA_ONCRPC_ADAPTER_LAST_ERROR_H_

#include <string>

#include "absl/status/status.h"

namespace rpcrdma::oncrpc {

void SetLastError(std::string message);
// The status's message (its code name first when it has no message).
void SetLastError(const absl::Status& status);

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_LAST_ERROR_H_
