// The server procedures rpcgen's NFSv3 dispatcher (nfs_program_3, rpcgen
// -M) calls, and the function with which it frees their results.
#include <rpc/rpc.h>

#include "examples/nfs3d/nfs3_server.h"

using rpcrdma::nfs3d::Nfs3Server;

extern "C" {

bool_t nfsproc3_null_3_svc(void*, void*, struct svc_req*) { return TRUE; }

// Each procedure runs as its caller (credentials.h): the file system
// checks the caller's permissions, as nfsd has it check them. It runs on a
// file worker (file_workers.h) while this thread, which dispatched the
// call and sends its reply, keeps the credentials the transport's device
// files were opened with (or here, when they already are the caller's). A call
// no worker could take the caller's identity for does not run. The result
// starts cleared: rpcgen's dispatcher hands it over as its stack left it, and a
// method fills in only what it answers (and may free what it built on an
// error).
#define RPCRDMA_NFS3_PROCEDURE(name, Method, Args, Res)              \
  bool_t nfsproc3_##name##_3_svc(Args* args, Res* res, svc_req* q) { \
    Nfs3Server& server = Nfs3Server::Installed();                    \
    *res = Res{};                                                    \
    bool_t reply = FALSE;                                            \
    auto work = [&] { reply = server.Method(*args, *res); };         \
    if (!server.AsCaller(q, work)) {                                 \
      svcerr_systemerr(q->rq_xprt);                                  \
      return FALSE;                                                  \
    }                                                                \
    return reply;                                                    \
  }

RPCRDMA_NFS3_PROCEDURE(getattr, Getattr, GETATTR3args, GETATTR3res)
RPCRDMA_NFS3_PROCEDURE(setattr, Setattr, SETATTR3args, SETATTR3res)
RPCRDMA_NFS3_PROCEDURE(lookup, Lookup, LOOKUP3args, LOOKUP3res)
RPCRDMA_NFS3_PROCEDURE(access, Access, ACCESS3args, ACCESS3res)
RPCRDMA_NFS3_PROCEDURE(readlink, Readlink, READLINK3args, READLINK3res)
RPCRDMA_NFS3_PROCEDURE(read, Read, READ3args, READ3res)
RPCRDMA_NFS3_PROCEDURE(write, Write, WRITE3args, WRITE3res)
RPCRDMA_NFS3_PROCEDURE(create, Create, CREATE3args, CREATE3res)
RPCRDMA_NFS3_PROCEDURE(mkdir, Mkdir, MKDIR3args, MKDIR3res)
RPCRDMA_NFS3_PROCEDURE(symlink, Symlink, SYMLINK3args, SYMLINK3res)
RPCRDMA_NFS3_PROCEDURE(mknod, Mknod, MKNOD3args, MKNOD3res)
RPCRDMA_NFS3_PROCEDURE(remove, Remove, REMOVE3args, REMOVE3res)
RPCRDMA_NFS3_PROCEDURE(rmdir, Rmdir, RMDIR3args, RMDIR3res)
RPCRDMA_NFS3_PROCEDURE(rename, Rename, RENAME3args, RENAME3res)
RPCRDMA_NFS3_PROCEDURE(link, Link, LINK3args, LINK3res)
RPCRDMA_NFS3_PROCEDURE(readdir, Readdir, READDIR3args, READDIR3res)
RPCRDMA_NFS3_PROCEDURE(readdirplus, Readdirplus, READDIRPLUS3args,
                       READDIRPLUS3res)
RPCRDMA_NFS3_PROCEDURE(fsstat, Fsstat, FSSTAT3args, FSSTAT3res)
RPCRDMA_NFS3_PROCEDURE(fsinfo, Fsinfo, FSINFO3args, FSINFO3res)
RPCRDMA_NFS3_PROCEDURE(pathconf, Pathconf, PATHCONF3args, PATHCONF3res)
RPCRDMA_NFS3_PROCEDURE(commit, Commit, COMMIT3args, COMMIT3res)

#undef RPCRDMA_NFS3_PROCEDURE

int nfs_program_3_freeresult(SVCXPRT*, xdrproc_t free_result, caddr_t result) {
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"
