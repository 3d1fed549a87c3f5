// The TCP listeners of nfs3d (MOUNT, and NFS over TCP): bound to one
// address, the loopback address unless the operator names another, so
// that a server started without thinking about it is not reachable from
// every network the machine is on.
#ifndef RPCRDMA_EXAMPLES_NFS3D_LISTENER_H_
#define RPCRDMA_EXAMPLES_NFS3D_LISTENER_H_

#include <string>

#include "absl/status/statusor.h"
#include "examples/nfs3d/unique_fd.h"

namespace rpcrdma::nfs3d {

// Where the TCP listeners bind without a --listen option.
inline constexpr char kDefaultListenAddress[] = "127.0.0.1";

// A listening TCP socket at `address` (IPv4 or IPv6 literal; "0.0.0.0" or
// "::" for every interface) and `port` (0: one the kernel picks).
absl::StatusOr<UniqueFd> ListenTcp(const std::string& address, int port);

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_LISTENER_H_
