#include "plugin/fabric/verbs/verbs_address.h"

#include <netdb.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include "plugin/fabric/address.h"

namespace rpcrdma::fabric::verbs {

absl::StatusOr<SocketAddress> ParseAddress(absl::string_view address,
                                           bool passive) {
  // The one HOST:PORT parser (plugin/fabric/address.h); names resolve here
  // with getaddrinfo, and rdma_resolve_addr/rdma_bind_addr then map the
  // address to a device, as the kernel client does with a mount's address.
  absl::StatusOr<HostPort> host_port = ParseHostPort(address);
  if (!host_port.ok()) return host_port.status();
  absl::StatusOr<ResolvedAddress> resolved =
      ResolveHostPort(*host_port, passive);
  if (!resolved.ok()) return resolved.status();
  SocketAddress out;
  std::memset(&out.storage, 0, sizeof(out.storage));
  std::memcpy(&out.storage, &resolved->storage, resolved->length);
  char numeric[NI_MAXHOST] = {};
  if (getnameinfo(resolved->get(), resolved->length, numeric, sizeof numeric,
                  nullptr, 0, NI_NUMERICHOST) == 0) {
    out.host = numeric;
  } else {
    out.host = host_port->host;
  }
  return out;
}

std::string FormatAddress(absl::string_view host, uint16_t port) {
  return FormatHostPort(host, port);
}

std::string FormatSocketAddress(const sockaddr* address) {
  if (address == nullptr ||
      (address->sa_family != AF_INET && address->sa_family != AF_INET6)) {
    return "";
  }
  const socklen_t length = address->sa_family == AF_INET ? sizeof(sockaddr_in)
                                                         : sizeof(sockaddr_in6);
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (getnameinfo(address, length, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "";
  }
  return FormatHostPort(host, static_cast<uint16_t>(std::atoi(port)));
}

}  // namespace rpcrdma::fabric::verbs
