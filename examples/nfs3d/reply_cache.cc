#include "examples/nfs3d/reply_cache.h"

#include <iterator>

#include "nfs3_prot.h"
#include "rpcrdma/oncrpc/svc_rdma.h"

namespace rpcrdma::nfs3d {

bool KeepNonIdempotentReplies(SVCXPRT* xprt) {
  const rpcproc_t kNonIdempotent[] = {
      NFSPROC3_SETATTR, NFSPROC3_WRITE, NFSPROC3_CREATE, NFSPROC3_MKDIR,
      NFSPROC3_SYMLINK, NFSPROC3_MKNOD, NFSPROC3_REMOVE, NFSPROC3_RMDIR,
      NFSPROC3_RENAME,  NFSPROC3_LINK,  NFSPROC3_COMMIT};
  return svc_rdma_enablecache(xprt, kReplyCacheEntries, 0) &&
         svc_rdma_cache_only(xprt, NFS_PROGRAM, NFS_V3, kNonIdempotent,
                             std::size(kNonIdempotent));
}

}  // namespace rpcrdma::nfs3d
