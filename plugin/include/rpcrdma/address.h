// The socket address a URI of the API names: what a Channel given it
// connects to and what a Server given it listens on (channel.h lists the
// schemes). For adapters that must report addresses in the socket form
// their framework uses (libtirpc's netbuf, Thrift's peer host).
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_ADDRESS_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_ADDRESS_H_

#include <sys/socket.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
};

// sockaddr_in or sockaddr_in6 for rdma:// and soft+tcp:// (a host name is
// resolved as Channel::Create resolves it, which may block; a literal
// never does), sockaddr_un for soft+unix:// (an abstract name starts with
// a NUL octet). INVALID_ARGUMENT naming what is wrong with the URI.
absl::StatusOr<SocketAddress> ResolveUriAddress(absl::string_view uri);

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_ADDRESS_H_
