// Socket addresses of the verbs fabric: "IPV4:PORT" or "[IPV6]:PORT",
// numeric only (rdma-cm resolves them to a device).
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ADDRESS_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::fabric::verbs {

struct SocketAddress {
  sockaddr_storage storage;
  std::string host;  // as written, without brackets
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address);
// "HOST:PORT", with brackets around an IPv6 host.
std::string FormatAddress(absl::string_view host, uint16_t port);

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ADDRESS_H_
