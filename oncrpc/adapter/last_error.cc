#include "oncrpc/adapter/last_error.h"

#include <utility>

#include "rpcrdma/oncrpc/ddp_policy.h"

namespace rpcrdma::oncrpc {
namespace {

std::string& LastError() {
  thread_local std::string message;
  return message;
}

}  // namespace

void SetLastError(std::string message) { LastError() = std::move(message); }

void SetLastError(const absl::Status& status) {
  SetLastError(status.message().empty() ? status.ToString()
                                        : std::string(status.message()));
}

}  // namespace rpcrdma::oncrpc

extern "C" const char* rdma_oncrpc_error(void) {
  return rpcrdma::oncrpc::LastError().c_str();
}
