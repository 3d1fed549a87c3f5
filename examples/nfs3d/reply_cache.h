// The duplicate request cache nfs3d keeps on each RPC-over-RDMA listener
// (the ONC RPC adapter's, rpcrdma/oncrpc/svc_rdma.h). An RPC-over-RDMA
// client sends again, on its new connection, every call that had no
// reply when its connection was lost (RPC recovers from the loss of the
// link by retransmission, RFC 5666 §8; Linux's client does so): a
// WRITE, CREATE or REMOVE
// that had run must then be answered, not run a second time (RFC 5531 §9:
// the XID identifies a retransmission). As nfsd's cache, it keeps only
// the replies of the procedures that are not idempotent. Two clients
// connected at once never share an entry, whatever their XIDs and
// arguments (the adapter's CallIdentity).
#ifndef RPCRDMA_EXAMPLES_NFS3D_REPLY_CACHE_H_
#define RPCRDMA_EXAMPLES_NFS3D_REPLY_CACHE_H_

#include <rpc/rpc.h>

namespace rpcrdma::nfs3d {

// How many replies a listener keeps (its replies are small: a WRITE's is
// its wcc_data and verifier).
inline constexpr unsigned kReplyCacheEntries = 1024;

// Keeps the replies of NFSv3's non-idempotent procedures on `xprt`, an
// SVCXPRT of the ONC RPC adapter, before NFS_PROGRAM is registered on it.
// False when the adapter refused (rdma_oncrpc_error() says why).
bool KeepNonIdempotentReplies(SVCXPRT* xprt);

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_REPLY_CACHE_H_
