// The one parser of "HOST:PORT" addresses, shared by the URI parser of the
// public API (rdma://, soft+tcp://) and by both fabrics (soft over TCP and
// verbs through rdma-cm), so that every layer accepts the same syntax and
// reports the same precise errors:
//   HOST  a host name (resolved through the system's resolver), a dotted
//         IPv4 literal, or an IPv6 literal in brackets ([::1], [fe80::1%eth0])
//   PORT  a decimal number 0..65535 (0 asks a listener to choose one)
// Syntax errors are INVALID_ARGUMENT naming what is wrong.
#ifndef RPCRDMA_PLUGIN_FABRIC_ADDRESS_H_
#define RPCRDMA_PLUGIN_FABRIC_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::fabric {

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;
  bool ipv6_literal = false;  // was written in brackets
};

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// "HOST:PORT", with brackets around an IPv6 host.
std::string FormatHostPort(absl::string_view host, uint16_t port);

struct ResolvedAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  const sockaddr* get() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
};

// Resolves `address` with getaddrinfo: literals without a lookup, names
// through the system's resolver (which may block; a URI with a literal
// never does). The first address the resolver prefers is used, for
// listening (`passive`) and connecting alike, so a Server and a Channel
// given the same name meet on the same address. INVALID_ARGUMENT for a name
// that does not exist, UNAVAILABLE when the resolver cannot answer now.
absl::StatusOr<ResolvedAddress> ResolveHostPort(const HostPort& address,
                                                bool passive);

}  // namespace rpcrdma::fabric

#endif  // RPCRDMA_PLUGIN_FABRIC_ADDRESS_H_
