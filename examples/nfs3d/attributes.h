// File attributes as NFSv3 reports and sets them (RFC 1813 §2.5-§2.6,
// fattr3, wcc_data, sattr3), from and to what the file system says, and
// errno as nfsstat3.
#ifndef RPCRDMA_EXAMPLES_NFS3D_ATTRIBUTES_H_
#define RPCRDMA_EXAMPLES_NFS3D_ATTRIBUTES_H_

#include <sys/stat.h>

#include <cstdint>
#include <optional>

#include "nfs3_prot.h"

namespace rpcrdma::nfs3d {

// RFC 1813 §2.6: the error a file system's errno stands for.
nfsstat3 StatusOfErrno(int error);

fattr3 AttributesOf(const struct stat& st, uint64_t fsid);
post_op_attr PostOpAttributes(int fd, uint64_t fsid);
post_op_attr PostOpAttributes(const struct stat& st, uint64_t fsid);
// The attributes before an operation (RFC 1813 §2.6 wcc_data): taken with
// fstat right before it; nullopt when that failed.
std::optional<struct stat> StatBefore(int fd);
wcc_data WccOf(const std::optional<struct stat>& before, int fd, uint64_t fsid);

// Applies what `attributes` sets to the file open at `fd` (an O_PATH
// descriptor works for all but the size): mode, owner, size, times.
nfsstat3 ApplyAttributes(int fd, const sattr3& attributes);

// ACCESS3_* bits of `asked` that the file open at `fd` (of `st`) grants
// the identity the calling thread acts as (credentials.h), as the file
// system itself decides them (faccessat with AT_EACCESS: the thread's
// file system uid, gid and groups, ACLs, capabilities).
uint32_t AccessOf(int fd, const struct stat& st, uint32_t asked);

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_ATTRIBUTES_H_
