// ctest kernel.nfs3 (nfs3_interop_test.cc: main and steps 1-6;
// nfs3_procedures_test.cc: 7-8): what its steps share. The NFSv3 client is
// rpcgen's, unchanged, from examples/nfs3's RFC 1813 .x files: MOUNT over
// TCP (libtirpc's clnt_vc_create at rpc.mountd's fixed port) for the root
// file handle, NFS over RPC-over-RDMA (a CLIENT of the ONC RPC adapter
// with the NFSv3 DDP policy, DdpPolicy::Nfs3).
#ifndef RPCRDMA_INTEROP_KERNEL_NFS3_FIXTURE_H_
#define RPCRDMA_INTEROP_KERNEL_NFS3_FIXTURE_H_

#include <rpc/rpc.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "interop/kernel/guest_util.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::test {

// rpc.mountd's fixed port (the `nfsd3` service of the VM harness).
inline constexpr uint16_t kMountPort = 20048;
inline constexpr size_t kNfs3SmallFile = 1 << 20;
inline constexpr size_t kNfs3LargeFile = 4 << 20;
inline constexpr size_t kNfs3WriteSize = 1 << 20;
inline constexpr int kNfs3DirEntries = 2000;
// READDIRPLUS3args.maxcount, and the reply chunk the policy offers for it.
inline constexpr uint32_t kDirMaxcount = 32768;
inline constexpr uint32_t kDirReplyChunk = 65536;
// The write chunk the policy offers each READ (nfsd's rtmax is at most
// 1 MiB).
inline constexpr uint32_t kReadChunk = 1 << 20;

// An XDR routine as libtirpc's variadic xdrproc_t.
template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

// A file handle's octets, and an nfs_fh3 that points at them.
using Fh = std::vector<char>;
nfs_fh3 FhArg(const Fh& fh);
Fh FhOf(const nfs_fh3& fh);
std::string Nfs3StatName(nfsstat3 status);

// The mount list MOUNTPROC3_DUMP returns, as "host:directory" strings.
std::vector<std::string> DumpMounts(CLIENT* mount);

// The export's files for the steps: random data, an empty file to write,
// a directory of kNfs3DirEntries entries.
std::string Nfs3EntryName(int i);
void FillNfs3Export();

class Nfs3Interop : public ::testing::Test {
 protected:
  // MNT over TCP, then the NFS CLIENT over RPC-over-RDMA.
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override {
    ASSERT_NE(mount_, nullptr);
    ASSERT_NE(nfs_, nullptr);
  }

  static Channel& channel();
  // LOOKUP of `name` in `dir`; the file handle, or the NFS status.
  static absl::StatusOr<Fh> Lookup(const Fh& dir, absl::string_view name);
  // GETATTR; the attributes, or the NFS status.
  static absl::StatusOr<fattr3> Getattr(const Fh& fh);

  static CLIENT* mount_;  // MOUNT v3 over TCP
  static CLIENT* nfs_;    // NFS v3 over RPC-over-RDMA
  static Fh root_;        // from MNT
  static std::vector<int> mnt_flavors_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_NFS3_FIXTURE_H_
