// The NFS version 3 service (RFC 1813 §3) over a local directory: what the
// server procedures rpcgen's dispatcher calls (nfs3_procedures.cc) do.
// Each method fills a result that xdr_free can release (its memory from
// malloc), and returns TRUE for the dispatcher to send it.
//
// Semantics, as Linux's nfsd gives them:
// - file handles survive a restart (export.h);
// - attributes and wcc_data come from the file system (fstat before and
//   after each change);
// - EXCLUSIVE CREATE keeps the client's verifier in the new file's times
//   (RFC 1813 §3.3.8), so a retransmitted CREATE finds its own file;
// - WRITE answers UNSTABLE writes with a verifier chosen at start, and
//   COMMIT flushes them (fsync): a restart changes the verifier, so the
//   client writes again what it had not committed (RFC 1813 §3.3.7);
// - READDIR and READDIRPLUS cookies are the directory's own offsets
//   (getdents64 d_off), stable while the directory is, and a cookie
//   verifier (the directory's change time) the client echoes;
// - each call acts as its caller, after the export's squashing
//   (credentials.h): the file system checks its permissions, and ACCESS
//   answers what the caller may do. The methods below run on a file
//   worker (file_workers.h), or on the thread that dispatches the call
//   when that thread already is the caller, and get nothing of the call's
//   transport;
// - every errno maps to its nfsstat3 (attributes.h); a malformed request
//   is the NFSv3 error for it, never a crash.
#ifndef RPCRDMA_EXAMPLES_NFS3D_NFS3_SERVER_H_
#define RPCRDMA_EXAMPLES_NFS3D_NFS3_SERVER_H_

#include <rpc/rpc.h>

#include <array>
#include <cstdint>
#include <memory>

#include "examples/nfs3d/credentials.h"
#include "examples/nfs3d/export.h"
#include "examples/nfs3d/file_workers.h"
#include "nfs3_prot.h"

namespace rpcrdma::nfs3d {

struct ServerLimits {
  uint32_t max_read = 1u << 20;              // FSINFO rtmax
  uint32_t max_write = 1u << 20;             // FSINFO wtmax
  uint32_t directory_preferred = 64u << 10;  // FSINFO dtpref
  // The file workers: how many calls' file system work runs at once (as
  // many as the dispatch threads that may call at once is enough).
  unsigned file_threads = 4;
};

class Nfs3Server {
 public:
  Nfs3Server(std::unique_ptr<Export> exported, ServerLimits limits,
             ExportOptions options = {});

  // The server rpcgen's procedures call (one per process, like the
  // dispatcher itself).
  static void Install(Nfs3Server* server);
  static Nfs3Server& Installed();

  const Export& exported() const { return *export_; }
  // Who each call acts as (credentials.h).
  const ExportOptions& options() const { return options_; }

  // Runs `work` (a method below) acting as the caller of `q` (on a file
  // worker, unless this thread already is the caller), and waits for it:
  // false, without running it, when the worker could not take the
  // caller's identity. Called by the thread that dispatches the call,
  // which thus keeps its own credentials.
  template <typename Work>
  bool AsCaller(const svc_req* q, Work& work) {
    return workers_.Run(IdentityOf(q, options_), work);
  }

  bool_t Getattr(const GETATTR3args& a, GETATTR3res& r);
  bool_t Setattr(const SETATTR3args& a, SETATTR3res& r);
  bool_t Lookup(const LOOKUP3args& a, LOOKUP3res& r);
  bool_t Access(const ACCESS3args& a, ACCESS3res& r);
  bool_t Readlink(const READLINK3args& a, READLINK3res& r);
  bool_t Read(const READ3args& a, READ3res& r);
  bool_t Write(const WRITE3args& a, WRITE3res& r);
  bool_t Create(const CREATE3args& a, CREATE3res& r);
  bool_t Mkdir(const MKDIR3args& a, MKDIR3res& r);
  bool_t Symlink(const SYMLINK3args& a, SYMLINK3res& r);
  bool_t Mknod(const MKNOD3args& a, MKNOD3res& r);
  bool_t Remove(const REMOVE3args& a, REMOVE3res& r);
  bool_t Rmdir(const RMDIR3args& a, RMDIR3res& r);
  bool_t Rename(const RENAME3args& a, RENAME3res& r);
  bool_t Link(const LINK3args& a, LINK3res& r);
  bool_t Readdir(const READDIR3args& a, READDIR3res& r);
  bool_t Readdirplus(const READDIRPLUS3args& a, READDIRPLUS3res& r);
  bool_t Fsstat(const FSSTAT3args& a, FSSTAT3res& r);
  bool_t Fsinfo(const FSINFO3args& a, FSINFO3res& r);
  bool_t Pathconf(const PATHCONF3args& a, PATHCONF3res& r);
  bool_t Commit(const COMMIT3args& a, COMMIT3res& r);

 private:
  // What a procedure that makes a file in a directory answers (CREATE,
  // MKDIR, SYMLINK, MKNOD share the result's shape).
  struct Made {
    nfsstat3 status = NFS3_OK;
    post_op_fh3 obj{};
    post_op_attr attributes{};
    wcc_data dir_wcc{};
  };
  // Opens `dir` for a change, runs `make` as the caller, and describes
  // what `name` in it became.
  template <typename MakeFunction>
  Made MakeIn(const diropargs3& where, MakeFunction make);
  // The handle and attributes of `name` in the directory open at `dir`.
  void Describe(int dir, const char* name, post_op_fh3& handle,
                post_op_attr& attributes) const;

  std::unique_ptr<Export> export_;
  const ServerLimits limits_;
  const ExportOptions options_;
  // WRITE and COMMIT verifier: new at every start (RFC 1813 §3.3.7).
  std::array<char, NFS3_WRITEVERFSIZE> write_verifier_{};
  // Last: ended (joined) first, while what they use is still there.
  FileWorkers workers_;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_NFS3_SERVER_H_
