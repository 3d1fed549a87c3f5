// An NFSv3 client for the tests of nfs3d: rpcgen's client stubs (examples/
// nfs3) on a CLIENT of the ONC RPC adapter, connected over soft+unix to an
// RPC-over-RDMA SVCXPRT that serves the installed Nfs3Server through
// rpcgen's dispatcher; one call per method, returning the nfsstat3.
#ifndef RPCRDMA_TESTS_NFS3D_NFS3_CLIENT_H_
#define RPCRDMA_TESTS_NFS3D_NFS3_CLIENT_H_

#include <rpc/rpc.h>

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "examples/nfs3d/export.h"
#include "nfs3_prot.h"
#include "rpcrdma/types.h"

namespace rpcrdma::nfs3d {

class Nfs3Client {
 public:
  Nfs3Client() = default;
  Nfs3Client(const Nfs3Client&) = delete;
  Nfs3Client& operator=(const Nfs3Client&) = delete;
  ~Nfs3Client();

  // Whether the server keeps replies for retransmissions.
  enum class ReplyCache {
    kNone,
    kNfs3d,  // nfs3d's own (examples/nfs3d/reply_cache.h)
  };
  // Serves on `threads` dispatch threads (svc_rdma_run_threads) and
  // connects. False with rdma_oncrpc_error() saying why.
  bool Start(unsigned threads = 2, ReplyCache cache = ReplyCache::kNone);
  // Connects, as another client with a connection of its own, to the
  // server that `other` started (which must outlive this client).
  bool ConnectTo(const Nfs3Client& other);
  // The server's transport (to register another program on it).
  SVCXPRT* transport() const { return xprt_; }
  // The connected client (for a call with arguments of the test's own).
  CLIENT* client() const { return client_; }
  Counters server_counters() const;
  // The credential of the calls that follow: AUTH_SYS with `uid`, `gid`
  // and `groups`, or AUTH_NONE (Start gives authunix_create_default).
  void UseAuthSys(uint32_t uid, uint32_t gid,
                  const std::vector<uint32_t>& groups = {});
  void UseAuthNone();

  nfsstat3 Getattr(const FileHandle& fh, fattr3& out);
  nfsstat3 Lookup(const FileHandle& dir, const char* name, FileHandle& out);
  nfsstat3 Create(const FileHandle& dir, const char* name, createmode3 mode,
                  FileHandle& out);
  nfsstat3 CreateExclusive(const FileHandle& dir, const char* name,
                           const char (&verifier)[9], FileHandle& out);
  nfsstat3 Mkdir(const FileHandle& dir, const char* name, FileHandle& out);
  // MKNOD of `type`; `major`/`minor` for NF3CHR and NF3BLK.
  nfsstat3 Mknod(const FileHandle& dir, const char* name, ftype3 type,
                 uint32_t major, uint32_t minor, FileHandle& out);
  nfsstat3 Access(const FileHandle& fh, uint32_t asked, uint32_t& granted);
  nfsstat3 Symlink(const FileHandle& dir, const char* name, const char* target,
                   FileHandle& out);
  nfsstat3 Readlink(const FileHandle& fh, std::string& target);
  nfsstat3 Link(const FileHandle& file, const FileHandle& dir,
                const char* name);
  nfsstat3 Rename(const FileHandle& from, const char* from_name,
                  const FileHandle& to, const char* to_name);
  nfsstat3 Remove(const FileHandle& dir, const char* name);
  nfsstat3 Rmdir(const FileHandle& dir, const char* name);
  nfsstat3 Setattr(const FileHandle& fh, std::optional<uint32_t> mode,
                   std::optional<uint64_t> size, const nfstime3* guard);
  nfsstat3 Write(const FileHandle& fh, uint64_t offset,
                 const std::vector<uint8_t>& data, stable_how stable,
                 std::array<char, NFS3_WRITEVERFSIZE>* verifier);
  nfsstat3 Commit(const FileHandle& fh,
                  std::array<char, NFS3_WRITEVERFSIZE>& verifier);
  nfsstat3 Read(const FileHandle& fh, uint64_t offset, uint32_t count,
                std::vector<uint8_t>& out, bool& eof);
  // Every page of READDIR (or READDIRPLUS) with `count` octets each.
  nfsstat3 ListAll(const FileHandle& dir, bool plus, uint32_t count,
                   std::set<std::string>& names, size_t& pages);
  nfsstat3 Fsinfo(const FileHandle& fh, FSINFO3resok& out);
  nfsstat3 Fsstat(const FileHandle& fh, FSSTAT3resok& out);

 private:
  bool Connect(const char* uri);

  SVCXPRT* xprt_ = nullptr;  // the server's, when this client started it
  CLIENT* client_ = nullptr;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_TESTS_NFS3D_NFS3_CLIENT_H_
