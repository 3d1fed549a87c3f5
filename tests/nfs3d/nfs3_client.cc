#include "tests/nfs3d/nfs3_client.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "examples/nfs3d/reply_cache.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "tests/testing/process_tag.h"

extern "C" void nfs_program_3(struct svc_req* request, SVCXPRT* transport);

namespace rpcrdma::nfs3d {
namespace {

template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

template <typename Result>
void Free(bool_t (*routine)(XDR*, Result*), Result& result) {
  xdr_free(AsXdrProc(routine), &result);
}

// One NFSv3 call through rpcgen's stub; `take` reads what it needs of an
// NFS3_OK result before the result is freed.
template <typename Args, typename Result, typename Take>
nfsstat3 CallNfs(enum clnt_stat (*stub)(Args*, Result*, CLIENT*),
                 bool_t (*routine)(XDR*, Result*), Args& args, CLIENT* client,
                 Take take) {
  Result res{};
  if (stub(&args, &res, client) != RPC_SUCCESS) return NFS3ERR_SERVERFAULT;
  if (res.status == NFS3_OK) take(res);
  const nfsstat3 status = res.status;
  Free(routine, res);
  return status;
}

diropargs3 DirOp(const FileHandle& dir, const char* name) {
  return diropargs3{AsNfsHandle(dir), const_cast<char*>(name)};
}

FileHandle HandleOf(const post_op_fh3& fh) {
  if (!fh.handle_follows) return {};
  const nfs_fh3& h = fh.post_op_fh3_u.handle;
  return FileHandle(h.data.data_val, h.data.data_val + h.data.data_len);
}

// What the tests' server and clients use: NFSv3's DDP-eligible items.
oncrpc::AdapterConfig Nfs3Config() {
  oncrpc::AdapterConfig config;
  config.policies[{NFS_PROGRAM, NFS_V3}] = oncrpc::DdpPolicy::Nfs3();
  return config;
}

}  // namespace

Nfs3Client::~Nfs3Client() {
  if (client_ != nullptr) {
    // The caller's AUTH, as with libtirpc's own clients: clnt_destroy
    // leaves it.
    if (client_->cl_auth != nullptr) auth_destroy(client_->cl_auth);
    clnt_destroy(client_);
  }
  if (xprt_ != nullptr) {
    svc_unreg(NFS_PROGRAM, NFS_V3);
    svc_destroy(xprt_);
  }
}

bool Nfs3Client::Start(unsigned threads, ReplyCache cache) {
  static std::atomic<int> next{0};
  absl::StatusOr<SVCXPRT*> xprt = oncrpc::CreateServerTransport(
      absl::StrCat("soft+unix://@rpcrdma-nfs3d-test-",
                   ::rpcrdma::test::ProcessTag(), "-", next++),
      Nfs3Config());
  if (!xprt.ok()) return false;
  xprt_ = *xprt;
  if ((cache == ReplyCache::kNfs3d && !KeepNonIdempotentReplies(xprt_)) ||
      !svc_reg(xprt_, NFS_PROGRAM, NFS_V3, nfs_program_3, nullptr) ||
      !svc_rdma_run_threads(xprt_, threads)) {
    return false;
  }
  return Connect(svc_rdma_uri(xprt_));
}

bool Nfs3Client::ConnectTo(const Nfs3Client& other) {
  return Connect(svc_rdma_uri(other.xprt_));
}

bool Nfs3Client::Connect(const char* uri) {
  absl::StatusOr<CLIENT*> client =
      oncrpc::CreateClient(uri, NFS_PROGRAM, NFS_V3, Nfs3Config());
  if (!client.ok()) return false;
  client_ = *client;
  client_->cl_auth = authunix_create_default();
  return true;
}

Counters Nfs3Client::server_counters() const {
  return oncrpc::ServerOf(xprt_)->counters();
}

void Nfs3Client::UseAuthSys(uint32_t uid, uint32_t gid,
                            const std::vector<uint32_t>& groups) {
  if (client_->cl_auth != nullptr) auth_destroy(client_->cl_auth);
  std::vector<gid_t> list(groups.begin(), groups.end());
  client_->cl_auth =
      authunix_create(const_cast<char*>("nfs3d-test"), uid, gid,
                      static_cast<int>(list.size()), list.data());
}

void Nfs3Client::UseAuthNone() {
  if (client_->cl_auth != nullptr) auth_destroy(client_->cl_auth);
  client_->cl_auth = authnone_create();
}

nfsstat3 Nfs3Client::Getattr(const FileHandle& fh, fattr3& out) {
  GETATTR3args args{AsNfsHandle(fh)};
  return CallNfs(
      &nfsproc3_getattr_3, &xdr_GETATTR3res, args, client_,
      [&](GETATTR3res& res) { out = res.GETATTR3res_u.resok.obj_attributes; });
}

nfsstat3 Nfs3Client::Lookup(const FileHandle& dir, const char* name,
                            FileHandle& out) {
  LOOKUP3args args{DirOp(dir, name)};
  return CallNfs(
      &nfsproc3_lookup_3, &xdr_LOOKUP3res, args, client_, [&](LOOKUP3res& res) {
        const nfs_fh3& h = res.LOOKUP3res_u.resok.object;
        out.assign(h.data.data_val, h.data.data_val + h.data.data_len);
      });
}

nfsstat3 Nfs3Client::Create(const FileHandle& dir, const char* name,
                            createmode3 mode, FileHandle& out) {
  CREATE3args args{DirOp(dir, name), {}};
  args.how.mode = mode;
  return CallNfs(
      &nfsproc3_create_3, &xdr_CREATE3res, args, client_,
      [&](CREATE3res& res) { out = HandleOf(res.CREATE3res_u.resok.obj); });
}

nfsstat3 Nfs3Client::CreateExclusive(const FileHandle& dir, const char* name,
                                     const char (&verifier)[9],
                                     FileHandle& out) {
  CREATE3args args{DirOp(dir, name), {}};
  args.how.mode = EXCLUSIVE;
  std::memcpy(args.how.createhow3_u.verf, verifier, NFS3_CREATEVERFSIZE);
  return CallNfs(
      &nfsproc3_create_3, &xdr_CREATE3res, args, client_,
      [&](CREATE3res& res) { out = HandleOf(res.CREATE3res_u.resok.obj); });
}

nfsstat3 Nfs3Client::Mkdir(const FileHandle& dir, const char* name,
                           FileHandle& out) {
  MKDIR3args args{DirOp(dir, name), {}};
  return CallNfs(
      &nfsproc3_mkdir_3, &xdr_MKDIR3res, args, client_,
      [&](MKDIR3res& res) { out = HandleOf(res.MKDIR3res_u.resok.obj); });
}

nfsstat3 Nfs3Client::Mknod(const FileHandle& dir, const char* name, ftype3 type,
                           uint32_t major, uint32_t minor, FileHandle& out) {
  MKNOD3args args{DirOp(dir, name), {}};
  args.what.type = type;
  if (type == NF3CHR || type == NF3BLK) {
    args.what.mknoddata3_u.device.spec = {major, minor};
  }
  return CallNfs(
      &nfsproc3_mknod_3, &xdr_MKNOD3res, args, client_,
      [&](MKNOD3res& res) { out = HandleOf(res.MKNOD3res_u.resok.obj); });
}

nfsstat3 Nfs3Client::Access(const FileHandle& fh, uint32_t asked,
                            uint32_t& granted) {
  ACCESS3args args{AsNfsHandle(fh), asked};
  return CallNfs(
      &nfsproc3_access_3, &xdr_ACCESS3res, args, client_,
      [&](ACCESS3res& res) { granted = res.ACCESS3res_u.resok.access; });
}

nfsstat3 Nfs3Client::Symlink(const FileHandle& dir, const char* name,
                             const char* target, FileHandle& out) {
  SYMLINK3args args{DirOp(dir, name), {{}, const_cast<char*>(target)}};
  return CallNfs(
      &nfsproc3_symlink_3, &xdr_SYMLINK3res, args, client_,
      [&](SYMLINK3res& res) { out = HandleOf(res.SYMLINK3res_u.resok.obj); });
}

nfsstat3 Nfs3Client::Readlink(const FileHandle& fh, std::string& target) {
  READLINK3args args{AsNfsHandle(fh)};
  return CallNfs(
      &nfsproc3_readlink_3, &xdr_READLINK3res, args, client_,
      [&](READLINK3res& res) { target = res.READLINK3res_u.resok.data; });
}

nfsstat3 Nfs3Client::Link(const FileHandle& file, const FileHandle& dir,
                          const char* name) {
  LINK3args args{AsNfsHandle(file), DirOp(dir, name)};
  return CallNfs(&nfsproc3_link_3, &xdr_LINK3res, args, client_,
                 [](LINK3res&) {});
}

nfsstat3 Nfs3Client::Rename(const FileHandle& from, const char* from_name,
                            const FileHandle& to, const char* to_name) {
  RENAME3args args{DirOp(from, from_name), DirOp(to, to_name)};
  return CallNfs(&nfsproc3_rename_3, &xdr_RENAME3res, args, client_,
                 [](RENAME3res&) {});
}

nfsstat3 Nfs3Client::Remove(const FileHandle& dir, const char* name) {
  REMOVE3args args{DirOp(dir, name)};
  return CallNfs(&nfsproc3_remove_3, &xdr_REMOVE3res, args, client_,
                 [](REMOVE3res&) {});
}

nfsstat3 Nfs3Client::Rmdir(const FileHandle& dir, const char* name) {
  RMDIR3args args{DirOp(dir, name)};
  return CallNfs(&nfsproc3_rmdir_3, &xdr_RMDIR3res, args, client_,
                 [](RMDIR3res&) {});
}

nfsstat3 Nfs3Client::Setattr(const FileHandle& fh, std::optional<uint32_t> mode,
                             std::optional<uint64_t> size,
                             const nfstime3* guard) {
  SETATTR3args args{AsNfsHandle(fh), {}, {}};
  if (mode) {
    args.new_attributes.mode.set_it = TRUE;
    args.new_attributes.mode.set_mode3_u.mode = *mode;
  }
  if (size) {
    args.new_attributes.size.set_it = TRUE;
    args.new_attributes.size.set_size3_u.size = *size;
  }
  if (guard != nullptr) {
    args.guard.check = TRUE;
    args.guard.sattrguard3_u.obj_ctime = *guard;
  }
  return CallNfs(&nfsproc3_setattr_3, &xdr_SETATTR3res, args, client_,
                 [](SETATTR3res&) {});
}

nfsstat3 Nfs3Client::Write(const FileHandle& fh, uint64_t offset,
                           const std::vector<uint8_t>& data, stable_how stable,
                           std::array<char, NFS3_WRITEVERFSIZE>* verifier) {
  WRITE3args args{AsNfsHandle(fh),
                  offset,
                  static_cast<count3>(data.size()),
                  stable,
                  {static_cast<u_int>(data.size()),
                   reinterpret_cast<char*>(const_cast<uint8_t*>(data.data()))}};
  WRITE3res res{};
  if (nfsproc3_write_3(&args, &res, client_) != RPC_SUCCESS) {
    return NFS3ERR_SERVERFAULT;
  }
  if (res.status == NFS3_OK && verifier != nullptr) {
    std::memcpy(verifier->data(), res.WRITE3res_u.resok.verf,
                NFS3_WRITEVERFSIZE);
  }
  const nfsstat3 status = res.status;
  Free(&xdr_WRITE3res, res);
  return status;
}

nfsstat3 Nfs3Client::Commit(const FileHandle& fh,
                            std::array<char, NFS3_WRITEVERFSIZE>& verifier) {
  COMMIT3args args{AsNfsHandle(fh), 0, 0};
  return CallNfs(&nfsproc3_commit_3, &xdr_COMMIT3res, args, client_,
                 [&](COMMIT3res& res) {
                   std::memcpy(verifier.data(), res.COMMIT3res_u.resok.verf,
                               NFS3_WRITEVERFSIZE);
                 });
}

nfsstat3 Nfs3Client::Read(const FileHandle& fh, uint64_t offset, uint32_t count,
                          std::vector<uint8_t>& out, bool& eof) {
  READ3args args{AsNfsHandle(fh), offset, count};
  return CallNfs(
      &nfsproc3_read_3, &xdr_READ3res, args, client_, [&](READ3res& res) {
        const READ3resok& ok = res.READ3res_u.resok;
        out.assign(ok.data.data_val, ok.data.data_val + ok.data.data_len);
        eof = ok.eof;
      });
}

nfsstat3 Nfs3Client::ListAll(const FileHandle& dir, bool plus, uint32_t count,
                             std::set<std::string>& names, size_t& pages) {
  cookie3 cookie = 0;
  cookieverf3 verifier{};
  for (pages = 0;; ++pages) {
    bool eof = false;
    nfsstat3 status;
    if (plus) {
      READDIRPLUS3args args{AsNfsHandle(dir), cookie, {}, count, count * 4};
      std::memcpy(args.cookieverf, verifier, NFS3_COOKIEVERFSIZE);
      READDIRPLUS3res res{};
      if (nfsproc3_readdirplus_3(&args, &res, client_) != RPC_SUCCESS) {
        return NFS3ERR_SERVERFAULT;
      }
      status = res.status;
      if (status == NFS3_OK) {
        const READDIRPLUS3resok& ok = res.READDIRPLUS3res_u.resok;
        std::memcpy(verifier, ok.cookieverf, NFS3_COOKIEVERFSIZE);
        for (const entryplus3* e = ok.reply.entries; e != nullptr;
             e = e->nextentry) {
          names.insert(e->name);
          cookie = e->cookie;
        }
        eof = ok.reply.eof;
      }
      Free(&xdr_READDIRPLUS3res, res);
    } else {
      READDIR3args args{AsNfsHandle(dir), cookie, {}, count};
      std::memcpy(args.cookieverf, verifier, NFS3_COOKIEVERFSIZE);
      READDIR3res res{};
      if (nfsproc3_readdir_3(&args, &res, client_) != RPC_SUCCESS) {
        return NFS3ERR_SERVERFAULT;
      }
      status = res.status;
      if (status == NFS3_OK) {
        const READDIR3resok& ok = res.READDIR3res_u.resok;
        std::memcpy(verifier, ok.cookieverf, NFS3_COOKIEVERFSIZE);
        for (const entry3* e = ok.reply.entries; e != nullptr;
             e = e->nextentry) {
          names.insert(e->name);
          cookie = e->cookie;
        }
        eof = ok.reply.eof;
      }
      Free(&xdr_READDIR3res, res);
    }
    if (status != NFS3_OK) return status;
    if (eof) return NFS3_OK;
  }
}

nfsstat3 Nfs3Client::Fsinfo(const FileHandle& fh, FSINFO3resok& out) {
  FSINFO3args args{AsNfsHandle(fh)};
  return CallNfs(&nfsproc3_fsinfo_3, &xdr_FSINFO3res, args, client_,
                 [&](FSINFO3res& res) { out = res.FSINFO3res_u.resok; });
}

nfsstat3 Nfs3Client::Fsstat(const FileHandle& fh, FSSTAT3resok& out) {
  FSSTAT3args args{AsNfsHandle(fh)};
  return CallNfs(&nfsproc3_fsstat_3, &xdr_FSSTAT3res, args, client_,
                 [&](FSSTAT3res& res) { out = res.FSSTAT3res_u.resok; });
}

}  // namespace rpcrdma::nfs3d
