// The fixture of ctest kernel.nfs3 (nfs3_fixture.h): MOUNT over TCP, the
// NFS CLIENT over RPC-over-RDMA, and the export's files.
#include "interop/kernel/nfs3_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {

CLIENT* Nfs3Interop::mount_ = nullptr;
CLIENT* Nfs3Interop::nfs_ = nullptr;
Fh Nfs3Interop::root_;
std::vector<int> Nfs3Interop::mnt_flavors_;

nfs_fh3 FhArg(const Fh& fh) {
  nfs_fh3 arg{};
  arg.data.data_len = static_cast<u_int>(fh.size());
  arg.data.data_val = const_cast<char*>(fh.data());
  return arg;
}

Fh FhOf(const nfs_fh3& fh) {
  return Fh(fh.data.data_val, fh.data.data_val + fh.data.data_len);
}

std::string Nfs3StatName(nfsstat3 status) {
  switch (status) {
    case NFS3_OK:
      return "NFS3_OK";
    case NFS3ERR_NOENT:
      return "NFS3ERR_NOENT";
    case NFS3ERR_EXIST:
      return "NFS3ERR_EXIST";
    case NFS3ERR_ACCES:
      return "NFS3ERR_ACCES";
    case NFS3ERR_NOTEMPTY:
      return "NFS3ERR_NOTEMPTY";
    default:
      return absl::StrCat("nfsstat3 ", static_cast<int>(status));
  }
}

std::string Nfs3EntryName(int i) { return absl::StrFormat("file-%05d", i); }

void FillNfs3Export() {
  const uint64_t seed = ClockSeed();
  ASSERT_TRUE(
      WriteBytes(GuestPath("data1m"), RandomBytes(kNfs3SmallFile, seed)));
  ASSERT_TRUE(
      WriteBytes(GuestPath("data4m"), RandomBytes(kNfs3LargeFile, seed + 1)));
  ASSERT_TRUE(WriteBytes(GuestPath("written"), {}));
  ASSERT_EQ(chmod(GuestPath("written").c_str(), 0666), 0);
  ASSERT_EQ(mkdir(GuestPath("dir2000").c_str(), 0777), 0)
      << std::strerror(errno);
  for (int i = 0; i < kNfs3DirEntries; ++i) {
    ASSERT_TRUE(
        WriteBytes(GuestPath(absl::StrCat("dir2000/", Nfs3EntryName(i))), {}));
  }
}

namespace {

AUTH* RootAuth() {
  // AUTH_SYS root: the export has no_root_squash.
  char machine[] = "rpcrdma-nfs3-interop";
  return authsys_create(machine, 0, 0, 0, nullptr);
}

// MOUNT over TCP to rpc.mountd's fixed port: libtirpc's clnt_vc_create on a
// socket we connect ourselves, so nothing asks rpcbind for the port.
CLIENT* MountClient() {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(kMountPort);
  if (inet_pton(AF_INET, test::RdmaTestHost().c_str(), &address.sin_addr) !=
      1) {
    return nullptr;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return nullptr;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::printf("connect to MOUNT at port %u: %s\n", kMountPort,
                std::strerror(errno));
    close(fd);
    return nullptr;
  }
  netbuf server{sizeof address, sizeof address, &address};
  CLIENT* clnt = clnt_vc_create(fd, &server, MOUNT_PROGRAM, MOUNT_V3, 0, 0);
  if (clnt == nullptr) {
    close(fd);
    return nullptr;
  }
  clnt_control(clnt, CLSET_FD_CLOSE, nullptr);
  auth_destroy(clnt->cl_auth);
  clnt->cl_auth = RootAuth();
  return clnt;
}

}  // namespace

std::vector<std::string> DumpMounts(CLIENT* mount) {
  mountlist list = nullptr;
  std::vector<std::string> out;
  if (mountproc3_dump_3(nullptr, &list, mount) != RPC_SUCCESS) return {"?"};
  for (mountbody* m = list; m != nullptr; m = m->ml_next) {
    out.push_back(absl::StrCat(m->ml_hostname, ":", m->ml_directory));
  }
  xdr_free(AsXdrProc(&xdr_mountlist), &list);
  return out;
}

void Nfs3Interop::SetUpTestSuite() {
  mount_ = MountClient();
  ASSERT_NE(mount_, nullptr)
      << "no MOUNT at TCP port " << kMountPort << " (run with SERVICES nfsd3)";
  char export_path[] = "/srv/nfs";
  dirpath path = export_path;
  mountres3 mnt{};
  ASSERT_EQ(mountproc3_mnt_3(&path, &mnt, mount_), RPC_SUCCESS)
      << clnt_sperror(mount_, "MNT");
  ASSERT_EQ(mnt.fhs_status, MNT3_OK) << "MNT /srv/nfs: " << mnt.fhs_status;
  const mountres3_ok& ok = mnt.mountres3_u.mountinfo;
  root_.assign(ok.fhandle.fhandle3_val,
               ok.fhandle.fhandle3_val + ok.fhandle.fhandle3_len);
  mnt_flavors_.assign(
      ok.auth_flavors.auth_flavors_val,
      ok.auth_flavors.auth_flavors_val + ok.auth_flavors.auth_flavors_len);
  xdr_free(AsXdrProc(&xdr_mountres3), &mnt);

  oncrpc::AdapterConfig config;
  config.transport = VerbsConfig();
  config.policies[{NFS_PROGRAM, NFS_V3}] =
      oncrpc::DdpPolicy::Nfs3(kReadChunk, kDirReplyChunk);
  absl::StatusOr<CLIENT*> nfs =
      oncrpc::CreateClient(NfsUri(), NFS_PROGRAM, NFS_V3, config);
  ASSERT_TRUE(nfs.ok()) << nfs.status();
  nfs_ = *nfs;
  nfs_->cl_auth = RootAuth();
}

void Nfs3Interop::TearDownTestSuite() {
  if (nfs_ != nullptr) {
    auth_destroy(nfs_->cl_auth);
    clnt_destroy(nfs_);
    nfs_ = nullptr;
  }
  if (mount_ != nullptr) {
    auth_destroy(mount_->cl_auth);
    clnt_destroy(mount_);
    mount_ = nullptr;
  }
}

Channel& Nfs3Interop::channel() { return *oncrpc::ChannelOf(nfs_); }

absl::StatusOr<Fh> Nfs3Interop::Lookup(const Fh& dir, absl::string_view name) {
  std::string component(name);
  LOOKUP3args args{};
  args.what.dir = FhArg(dir);
  args.what.name = component.data();
  LOOKUP3res res{};
  if (const clnt_stat stat = nfsproc3_lookup_3(&args, &res, nfs_);
      stat != RPC_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("LOOKUP: ", clnt_sperrno(stat),
                                               ": ", rdma_oncrpc_error()));
  }
  absl::StatusOr<Fh> out =
      res.status == NFS3_OK
          ? absl::StatusOr<Fh>(FhOf(res.LOOKUP3res_u.resok.object))
          : absl::NotFoundError(
                absl::StrCat("LOOKUP ", name, ": ", Nfs3StatName(res.status)));
  xdr_free(AsXdrProc(&xdr_LOOKUP3res), &res);
  return out;
}

absl::StatusOr<fattr3> Nfs3Interop::Getattr(const Fh& fh) {
  GETATTR3args args{FhArg(fh)};
  GETATTR3res res{};
  if (const clnt_stat stat = nfsproc3_getattr_3(&args, &res, nfs_);
      stat != RPC_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("GETATTR: ", clnt_sperrno(stat),
                                               ": ", rdma_oncrpc_error()));
  }
  absl::StatusOr<fattr3> out =
      res.status == NFS3_OK
          ? absl::StatusOr<fattr3>(res.GETATTR3res_u.resok.obj_attributes)
          : absl::NotFoundError(Nfs3StatName(res.status));
  xdr_free(AsXdrProc(&xdr_GETATTR3res), &res);
  return out;
}

}  // namespace rpcrdma::test
