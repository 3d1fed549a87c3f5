// Socket addresses of the verbs fabric: HOST:PORT as plugin/fabric/address.h
// parses it (a name, IPv4, or bracketed IPv6); rdma-cm maps the resolved
// address to a device.
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
  std::string host;  // numeric, without brackets
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

// `passive`: the address is to listen on (getaddrinfo AI_PASSIVE).
absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address,
                                           bool passive = false);
// "HOST:PORT", with brackets around an IPv6 host.
std::string FormatAddress(absl::string_view host, uint16_t port);
// `address` (IPv4 or IPv6, with its port) as FormatAddress writes it; empty
// for another family.
std::string FormatSocketAddress(const sockaddr* address);

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ADDRESS_H_
