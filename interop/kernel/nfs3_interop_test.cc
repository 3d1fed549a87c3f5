// rpcgen's NFS version 3 client, unchanged, against the Linux kernel's nfsd
// over RPC-over-RDMA, inside the Soft-RoCE VM (ctest kernel.nfs3, labels
// `vm` and `kernel`; the harness's `nfsd3` service runs rpc.mountd on TCP
// port 20048 and nfsd with NFSv3 on rdma 20049). The stubs are those rpcgen
// writes from examples/nfs3's RFC 1813 .x files: MOUNT's go over libtirpc's
// own TCP transport (clnt_vc_create at the fixed port: no rpcbind), NFS's
// over a CLIENT of clnt_rdma_create with the NFSv3 DDP policy (RFC 8267
// §4: READ data in a write chunk, WRITE data in a read chunk, READDIRPLUS,
// READDIR and READLINK replies in a reply chunk).
//
// Each step is checked from both ends: the Channel's counters under the
// CLIENT and the data received on one side; svcrdma's counters
// (rdma_stat_read: RDMA Read segments it pulled, rdma_stat_write: RDMA
// Write chains it built, rdma_stat_recv) and the guest's own view of the
// files (stat, sha256sum) on the other. The files' content is random.
//
// Steps (TESTs, in this order; nfs3_procedures_test.cc has 7 and 8):
//   1. MOUNT over TCP: NULL, MNT (in the suite's setup), EXPORT, DUMP.
//   2. NULL and FSINFO over RDMA, inline (FSINFO gives rtmax and wtmax).
//   3. GETATTR and LOOKUP, inline; LOOKUP of a missing name.
//   4. READ of a 1 MiB and a 4 MiB file in rtmax pieces, each through a
//      write chunk; 4b a READ larger than rtmax; 4c a READ offering a
//      reply chunk as well (nfsd wants the data to fit it too).
//   5. WRITE of 1 MiB in wtmax pieces (UNSTABLE, each a read chunk), then
//      COMMIT.
//   6. READDIRPLUS of a 2000-entry directory, every page through a reply
//      chunk.
//   7. Every other procedure once, checked in the guest.
//   8. UMNT over TCP.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "interop/kernel/nfs3_fixture.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {

namespace {

// Step 1: MOUNT version 3 over TCP (RFC 1813 Appendix I) at rpc.mountd's
// fixed port. The setup's MNT gave the export's root handle (at most
// FHSIZE3 octets) and the flavors the export takes, AUTH_SYS among them;
// EXPORT lists /srv/nfs for the VM's network, DUMP our mount.
TEST_F(Nfs3Interop, Step1_Rfc1813_I_MountOverTcp) {
  EXPECT_EQ(mountproc3_null_3(nullptr, nullptr, mount_), RPC_SUCCESS);
  std::printf("MNT /srv/nfs: a %zu-octet handle, flavors", root_.size());
  for (int f : mnt_flavors_) std::printf(" %d", f);
  std::printf("\n");
  EXPECT_GT(root_.size(), 0u);
  EXPECT_LE(root_.size(), size_t{FHSIZE3});
  EXPECT_NE(std::find(mnt_flavors_.begin(), mnt_flavors_.end(), AUTH_SYS),
            mnt_flavors_.end());

  exports list = nullptr;
  ASSERT_EQ(mountproc3_export_3(nullptr, &list, mount_), RPC_SUCCESS);
  std::set<std::string> exported;
  for (exportnode* e = list; e != nullptr; e = e->ex_next) {
    for (groupnode* g = e->ex_groups; g != nullptr; g = g->gr_next) {
      exported.insert(absl::StrCat(e->ex_dir, " ", g->gr_name));
    }
  }
  xdr_free(AsXdrProc(&xdr_exports), &list);
  EXPECT_TRUE(exported.count("/srv/nfs 192.0.2.0/24")) << exported.size();

  const std::vector<std::string> mounts = DumpMounts(mount_);
  std::printf("DUMP: %zu mount(s)\n", mounts.size());
  EXPECT_NE(std::find(mounts.begin(), mounts.end(),
                      absl::StrCat(test::RdmaTestHost(), ":/srv/nfs")),
            mounts.end());
}

// Step 2: NULL (RFC 1813 §3.3.0) and FSINFO (§3.3.19) over RPC-over-RDMA,
// both inline both ways: the NFSv3 binding offers no chunk for them. FSINFO
// says how large a READ and a WRITE may be; nfsd's rtmax and wtmax are its
// max_block_size.
TEST_F(Nfs3Interop, Step2_Rfc1813_3_3_19_NullAndFsinfoInline) {
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  ASSERT_EQ(nfsproc3_null_3(nullptr, nullptr, nfs_), RPC_SUCCESS)
      << rdma_oncrpc_error();
  FSINFO3args args{FhArg(root_)};
  FSINFO3res res{};
  ASSERT_EQ(nfsproc3_fsinfo_3(&args, &res, nfs_), RPC_SUCCESS)
      << rdma_oncrpc_error();
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  ASSERT_EQ(res.status, NFS3_OK) << Nfs3StatName(res.status);
  const FSINFO3resok& info = res.FSINFO3res_u.resok;
  std::printf(
      "FSINFO: rtmax %u rtpref %u wtmax %u wtpref %u dtpref %u maxfilesize "
      "%llu properties 0x%x\n",
      info.rtmax, info.rtpref, info.wtmax, info.wtpref, info.dtpref,
      static_cast<unsigned long long>(info.maxfilesize), info.properties);
  int64_t max_block = -1;
  EXPECT_TRUE(absl::SimpleAtoi(
      absl::StripAsciiWhitespace(ReadText("/proc/fs/nfsd/max_block_size")),
      &max_block));
  EXPECT_EQ(int64_t{info.rtmax}, max_block);
  EXPECT_EQ(int64_t{info.wtmax}, max_block);
  EXPECT_LE(info.rtmax, kReadChunk);
  EXPECT_EQ(info.properties &
                (FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME),
            FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME);
  xdr_free(AsXdrProc(&xdr_FSINFO3res), &res);
  LogCounters("null+fsinfo", channel().counters());
  EXPECT_EQ(d.calls, 2u);
  EXPECT_EQ(d.inline_calls, 2u);
  EXPECT_EQ(d.replies, 2u);
  EXPECT_EQ(d.read_chunk_calls + d.write_chunks + d.reply_chunks +
                d.long_calls + d.long_replies,
            0u);
  EXPECT_EQ(k.recv, 2);
  EXPECT_EQ(k.read, 0);
  EXPECT_EQ(k.write, 0);
}

// Step 3: GETATTR (§3.3.1) and LOOKUP (§3.3.3), inline both ways; the
// attributes are the guest's (the fileid is the inode number). LOOKUP of a
// missing name is NFS3ERR_NOENT with the directory's attributes
// (LOOKUP3resfail).
TEST_F(Nfs3Interop, Step3_Rfc1813_3_3_1_GetattrAndLookupInline) {
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  absl::StatusOr<fattr3> root = Getattr(root_);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root->type, NF3DIR);
  absl::StatusOr<Fh> fh = Lookup(root_, "data1m");
  ASSERT_TRUE(fh.ok()) << fh.status();
  absl::StatusOr<fattr3> a = Getattr(*fh);
  ASSERT_TRUE(a.ok()) << a.status();
  struct stat st {};
  ASSERT_EQ(stat(GuestPath("data1m").c_str(), &st), 0);
  EXPECT_EQ(a->type, NF3REG);
  EXPECT_EQ(a->size, kNfs3SmallFile);
  EXPECT_EQ(a->fileid, st.st_ino);
  EXPECT_EQ(a->mode & 07777, st.st_mode & 07777);

  std::string missing = "no-such-file";
  LOOKUP3args args{};
  args.what.dir = FhArg(root_);
  args.what.name = missing.data();
  LOOKUP3res res{};
  ASSERT_EQ(nfsproc3_lookup_3(&args, &res, nfs_), RPC_SUCCESS);
  EXPECT_EQ(res.status, NFS3ERR_NOENT) << Nfs3StatName(res.status);
  EXPECT_TRUE(res.LOOKUP3res_u.resfail.dir_attributes.attributes_follow);
  xdr_free(AsXdrProc(&xdr_LOOKUP3res), &res);

  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  EXPECT_EQ(d.calls, 4u);
  EXPECT_EQ(d.inline_calls, 4u);
  EXPECT_EQ(d.read_chunk_calls + d.write_chunks + d.reply_chunks +
                d.long_calls + d.long_replies,
            0u);
  EXPECT_EQ(k.read, 0);
  EXPECT_EQ(k.write, 0);
}

// rtmax, from FSINFO.
uint32_t Rtmax(CLIENT* nfs, const Fh& root, bool write) {
  FSINFO3args args{FhArg(root)};
  FSINFO3res res{};
  uint32_t n = 0;
  if (nfsproc3_fsinfo_3(&args, &res, nfs) == RPC_SUCCESS &&
      res.status == NFS3_OK) {
    n = write ? res.FSINFO3res_u.resok.wtmax : res.FSINFO3res_u.resok.rtmax;
  }
  xdr_free(AsXdrProc(&xdr_FSINFO3res), &res);
  return n;
}

// Step 4: READ (§3.3.6) data is DDP-eligible (RFC 8267 §4): each READ
// offers the write chunk the policy binds to it and nfsd RDMA Writes the
// file's octets there; rpcgen's decoder gets them from the adapter's
// stream. The whole file, in rtmax pieces, equals the guest's by sha256sum.
TEST_F(Nfs3Interop, Step4_Rfc8267_4_ReadThroughWriteChunks) {
  const uint32_t rtmax = Rtmax(nfs_, root_, false);
  ASSERT_GT(rtmax, 0u);
  for (const auto& [name, size] :
       {std::pair<std::string, size_t>{"data1m", kNfs3SmallFile},
        std::pair<std::string, size_t>{"data4m", kNfs3LargeFile}}) {
    SCOPED_TRACE(name);
    absl::StatusOr<Fh> fh = Lookup(root_, name);
    ASSERT_TRUE(fh.ok()) << fh.status();
    std::vector<uint8_t> got;
    const Counters before = channel().counters();
    const KernelStats k0 = KernelStats::Now();
    int reads = 0;
    for (bool eof = false; !eof && got.size() < size + 1; ++reads) {
      READ3args args{FhArg(*fh), got.size(), rtmax};
      READ3res res{};
      ASSERT_EQ(nfsproc3_read_3(&args, &res, nfs_), RPC_SUCCESS)
          << rdma_oncrpc_error();
      ASSERT_EQ(res.status, NFS3_OK) << Nfs3StatName(res.status);
      const READ3resok& ok = res.READ3res_u.resok;
      const size_t expected = std::min<size_t>(rtmax, size - got.size());
      EXPECT_EQ(ok.count, expected);
      EXPECT_EQ(ok.data.data_len, expected);
      eof = ok.eof;
      EXPECT_EQ(eof, got.size() + expected == size);
      got.insert(got.end(), ok.data.data_val,
                 ok.data.data_val + ok.data.data_len);
      xdr_free(AsXdrProc(&xdr_READ3res), &res);
    }
    const Counters d = Delta(channel().counters(), before);
    const KernelStats k = KernelStats::Now() - k0;
    LogCounters(name, channel().counters());
    std::printf("%s: %d READs of up to %u; svcrdma reads %ld writes %ld\n",
                name.c_str(), reads, rtmax, static_cast<long>(k.read),
                static_cast<long>(k.write));
    EXPECT_EQ(reads, static_cast<int>((size + rtmax - 1) / rtmax));
    EXPECT_EQ(d.calls, static_cast<uint64_t>(reads));
    EXPECT_EQ(d.inline_calls, static_cast<uint64_t>(reads));
    EXPECT_EQ(d.write_chunks, static_cast<uint64_t>(reads));
    EXPECT_EQ(
        d.read_chunk_calls + d.reply_chunks + d.long_calls + d.long_replies,
        0u);
    // One RDMA Write chain per READ on the kernel's side, nothing pulled.
    EXPECT_EQ(k.write, reads);
    EXPECT_EQ(k.read, 0);
    EXPECT_TRUE(got == ReadBytes(GuestPath(name)))
        << "READ data differs from the guest's file";
    ExpectSameSha256(got, GuestPath(name));
  }
}

// A READ of more than rtmax: nfsd returns rtmax octets (RFC 1813 §3.3.6
// lets a server return fewer than asked), without eof, through the same
// write chunk.
TEST_F(Nfs3Interop, Step4b_Rfc1813_3_3_6_ReadLargerThanRtmaxIsShort) {
  const uint32_t rtmax = Rtmax(nfs_, root_, false);
  absl::StatusOr<Fh> fh = Lookup(root_, "data4m");
  ASSERT_TRUE(fh.ok()) << fh.status();
  READ3args args{FhArg(*fh), 0, 4u << 20};
  READ3res res{};
  const KernelStats k0 = KernelStats::Now();
  ASSERT_EQ(nfsproc3_read_3(&args, &res, nfs_), RPC_SUCCESS)
      << rdma_oncrpc_error();
  ASSERT_EQ(res.status, NFS3_OK) << Nfs3StatName(res.status);
  std::printf("READ of 4 MiB: %u octets (rtmax %u), eof %d\n",
              res.READ3res_u.resok.count, rtmax, res.READ3res_u.resok.eof);
  EXPECT_EQ(res.READ3res_u.resok.count, rtmax);
  EXPECT_FALSE(res.READ3res_u.resok.eof);
  const std::vector<uint8_t> file = ReadBytes(GuestPath("data4m"));
  ASSERT_GE(file.size(), rtmax);
  EXPECT_TRUE(std::equal(
      file.begin(), file.begin() + rtmax,
      reinterpret_cast<const uint8_t*>(res.READ3res_u.resok.data.data_val)));
  xdr_free(AsXdrProc(&xdr_READ3res), &res);
  EXPECT_EQ((KernelStats::Now() - k0).write, 1);
}

// RFC 8166 lets a call offer a reply chunk beside its write chunks: the
// reply chunk then carries the reduced reply (§3.5.4), the write chunks the
// DDP-eligible data (§3.4.7). The Linux client never offers both for a
// READ; nfsd (6.1) takes the reply chunk for the whole reply, the READ's
// data included: with a 64 KiB reply chunk, a 4 KiB READ is answered
// (RDMA_NOMSG, the data in the write chunk), but a READ of rtmax (128 KiB
// here) gets no reply at all (not RDMA_ERROR ERR_CHUNK, RFC 8166 §4.5.2):
// svcrdma writes the data into the write chunk, then closes the
// connection. clnt_call ends with RPC_TIMEDOUT (or RPC_CANTRECV if the
// connection's loss comes first). Other connections are unaffected.
TEST_F(Nfs3Interop,
       Step4c_Rfc8166_3_5_4_ReadWithAReplyChunkSmallerThanItsData) {
  const uint32_t rtmax = Rtmax(nfs_, root_, false);
  ASSERT_GT(rtmax, 65536u);
  absl::StatusOr<Fh> fh = Lookup(root_, "data1m");
  ASSERT_TRUE(fh.ok()) << fh.status();
  oncrpc::AdapterConfig config;
  config.transport = VerbsConfig();
  oncrpc::DdpPolicy policy =
      oncrpc::DdpPolicy::Nfs3(kReadChunk, kDirReplyChunk);
  policy.procedures[NFSPROC3_READ].reply_chunk_octets = 65536;
  config.policies[{NFS_PROGRAM, NFS_V3}] = policy;
  absl::StatusOr<CLIENT*> both =
      oncrpc::CreateClient(NfsUri(), NFS_PROGRAM, NFS_V3, config);
  ASSERT_TRUE(both.ok()) << both.status();
  CLIENT* c = *both;
  c->cl_auth = authsys_create_default();
  timeval timeout{3, 0};
  ASSERT_TRUE(
      clnt_control(c, CLSET_TIMEOUT, reinterpret_cast<char*>(&timeout)));
  const std::vector<uint8_t> file = ReadBytes(GuestPath("data1m"));
  for (uint32_t count : {4096u, rtmax}) {
    SCOPED_TRACE(count);
    READ3args args{FhArg(*fh), 0, count};
    READ3res res{};
    const Counters before = oncrpc::ChannelOf(c)->counters();
    const KernelStats k0 = KernelStats::Now();
    const clnt_stat stat = nfsproc3_read_3(&args, &res, c);
    const Counters d = Delta(oncrpc::ChannelOf(c)->counters(), before);
    const KernelStats k = KernelStats::Now() - k0;
    std::printf(
        "READ of %u with a write chunk and a 65536-octet reply chunk: %s%s%s; "
        "svcrdma writes %ld\n",
        count, clnt_sperrno(stat), stat == RPC_SUCCESS ? "" : ": ",
        stat == RPC_SUCCESS ? "" : rdma_oncrpc_error(),
        static_cast<long>(k.write));
    EXPECT_EQ(d.write_chunks, 1u);
    EXPECT_EQ(d.reply_chunks, 1u);
    // The data went into the write chunk either way.
    EXPECT_GE(k.write, 1);
    if (count < 65536) {
      ASSERT_EQ(stat, RPC_SUCCESS) << rdma_oncrpc_error();
      ASSERT_EQ(res.status, NFS3_OK);
      EXPECT_EQ(d.long_replies, 1u);
      EXPECT_TRUE(std::equal(file.begin(), file.begin() + count,
                             reinterpret_cast<const uint8_t*>(
                                 res.READ3res_u.resok.data.data_val)));
      xdr_free(AsXdrProc(&xdr_READ3res), &res);
    } else {
      EXPECT_TRUE(stat == RPC_TIMEDOUT || stat == RPC_CANTRECV)
          << clnt_sperrno(stat);
      EXPECT_EQ(d.replies, 0u);
      EXPECT_EQ(d.errors_received, 0u) << "no ERR_CHUNK came";
    }
  }
  auth_destroy(c->cl_auth);
  clnt_destroy(c);
  // The main connection carries on.
  EXPECT_EQ(nfsproc3_null_3(nullptr, nullptr, nfs_), RPC_SUCCESS);
}

// Step 5: WRITE (§3.3.7) data is DDP-eligible: from 1024 octets the
// adapter sends it from our buffer, as a read chunk at its XDR position
// when the call does not fit inline (RFC 8166 §3.4.5), and nfsd pulls it
// with RDMA Read. UNSTABLE WRITEs, then COMMIT (§3.3.21): the verifiers
// agree, and the guest's file has the data.
TEST_F(Nfs3Interop, Step5_Rfc8267_4_WriteThroughReadChunksThenCommit) {
  const uint32_t wtmax = Rtmax(nfs_, root_, true);
  ASSERT_GT(wtmax, 0u);
  absl::StatusOr<Fh> fh = Lookup(root_, "written");
  ASSERT_TRUE(fh.ok()) << fh.status();
  std::vector<uint8_t> data = RandomBytes(kNfs3WriteSize, ClockSeed() + 7);
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  int writes = 0;
  std::set<std::string> verifiers;
  for (size_t at = 0; at < data.size(); ++writes) {
    const size_t n = std::min<size_t>(wtmax, data.size() - at);
    WRITE3args args{};
    args.file = FhArg(*fh);
    args.offset = at;
    args.count = static_cast<count3>(n);
    args.stable = UNSTABLE;
    args.data.data_len = static_cast<u_int>(n);
    args.data.data_val = reinterpret_cast<char*>(data.data() + at);
    WRITE3res res{};
    ASSERT_EQ(nfsproc3_write_3(&args, &res, nfs_), RPC_SUCCESS)
        << rdma_oncrpc_error();
    ASSERT_EQ(res.status, NFS3_OK) << Nfs3StatName(res.status);
    EXPECT_EQ(res.WRITE3res_u.resok.count, n);
    verifiers.insert(std::string(res.WRITE3res_u.resok.verf,
                                 sizeof res.WRITE3res_u.resok.verf));
    xdr_free(AsXdrProc(&xdr_WRITE3res), &res);
    at += n;
  }
  COMMIT3args commit{FhArg(*fh), 0, 0};
  COMMIT3res committed{};
  ASSERT_EQ(nfsproc3_commit_3(&commit, &committed, nfs_), RPC_SUCCESS)
      << rdma_oncrpc_error();
  ASSERT_EQ(committed.status, NFS3_OK) << Nfs3StatName(committed.status);
  verifiers.insert(std::string(committed.COMMIT3res_u.resok.verf,
                               sizeof committed.COMMIT3res_u.resok.verf));
  xdr_free(AsXdrProc(&xdr_COMMIT3res), &committed);
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  LogCounters("write", channel().counters());
  std::printf(
      "write: %d WRITEs of up to %u and a COMMIT; svcrdma reads %ld "
      "writes %ld\n",
      writes, wtmax, static_cast<long>(k.read), static_cast<long>(k.write));
  EXPECT_EQ(verifiers.size(), 1u) << "the server did not restart";
  EXPECT_EQ(writes, static_cast<int>((kNfs3WriteSize + wtmax - 1) / wtmax));
  EXPECT_EQ(d.calls, static_cast<uint64_t>(writes) + 1);
  EXPECT_EQ(d.read_chunk_calls, static_cast<uint64_t>(writes));
  EXPECT_EQ(d.read_chunks, static_cast<uint64_t>(writes));
  EXPECT_EQ(d.inline_calls, 1u);  // the COMMIT
  EXPECT_EQ(d.write_chunks + d.reply_chunks + d.long_calls + d.long_replies,
            0u);
  EXPECT_EQ(k.read, writes);
  EXPECT_EQ(k.write, 0);
  EXPECT_TRUE(data == ReadBytes(GuestPath("written")))
      << "the guest's file differs from the data written";
  ExpectSameSha256(data, GuestPath("written"));
}

// Step 6: READDIRPLUS (§3.3.17) of a directory of 2000 entries: each page
// of up to kDirMaxcount octets comes back through the reply chunk the
// binding offers (RDMA_NOMSG, RFC 8166 §3.5.4), with every entry's
// attributes and handle; every name is there, "." and ".." too.
TEST_F(Nfs3Interop, Step6_Rfc8166_3_5_4_ReaddirplusThroughReplyChunks) {
  absl::StatusOr<Fh> dir = Lookup(root_, "dir2000");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const ConnectionInfo info = channel().connection_info();
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  std::set<std::string> names;
  size_t entries = 0;
  int pages = 0;
  cookie3 cookie = 0;
  cookieverf3 verf{};
  bool eof = false;
  while (!eof && pages < 100) {
    READDIRPLUS3args args{};
    args.dir = FhArg(*dir);
    args.cookie = cookie;
    std::memcpy(args.cookieverf, verf, sizeof verf);
    args.dircount = kDirMaxcount;
    args.maxcount = kDirMaxcount;
    READDIRPLUS3res res{};
    ASSERT_EQ(nfsproc3_readdirplus_3(&args, &res, nfs_), RPC_SUCCESS)
        << rdma_oncrpc_error();
    ++pages;
    ASSERT_EQ(res.status, NFS3_OK) << Nfs3StatName(res.status);
    const READDIRPLUS3resok& ok = res.READDIRPLUS3res_u.resok;
    std::memcpy(verf, ok.cookieverf, sizeof verf);
    size_t in_page = 0;
    for (entryplus3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
      names.insert(e->name);
      ++in_page;
      cookie = e->cookie;
      EXPECT_TRUE(e->name_attributes.attributes_follow) << e->name;
      const bool dots =
          std::string(e->name) == "." || std::string(e->name) == "..";
      if (!dots) {
        EXPECT_TRUE(e->name_handle.handle_follows) << e->name;
      }
    }
    entries += in_page;
    eof = ok.reply.eof;
    xdr_free(AsXdrProc(&xdr_READDIRPLUS3res), &res);
    ASSERT_TRUE(eof || in_page > 0);
  }
  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  LogCounters("readdirplus", channel().counters());
  std::printf(
      "readdirplus: %zu entries in %d replies (receive threshold %u); "
      "svcrdma writes %ld\n",
      entries, pages, info.receive_threshold, static_cast<long>(k.write));
  std::set<std::string> expected = {".", ".."};
  for (int i = 0; i < kNfs3DirEntries; ++i) expected.insert(Nfs3EntryName(i));
  EXPECT_EQ(entries, expected.size());
  EXPECT_EQ(names, expected);
  EXPECT_GT(pages, 1);
  // Every page came through its reply chunk as RDMA_NOMSG.
  EXPECT_EQ(d.calls, static_cast<uint64_t>(pages));
  EXPECT_EQ(d.reply_chunks, static_cast<uint64_t>(pages));
  EXPECT_EQ(d.long_replies, static_cast<uint64_t>(pages));
  EXPECT_EQ(d.read_chunk_calls + d.long_calls + d.write_chunks, 0u);
  // The kernel wrote each reply into the chunk, three RDMA Write chains a
  // reply (svcrdma counts one per part of nfsd's reply buffer it writes),
  // and pulled nothing.
  EXPECT_EQ(k.write, 3 * pages);
  EXPECT_EQ(k.read, 0);
}

// Runs first: the export is filled and nfsd answers NFSv3 over RDMA.
class Nfs3Environment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "runs as root inside the VM";
    const std::string versions = ReadText("/proc/fs/nfsd/versions");
    const std::string ports = ReadText("/proc/fs/nfsd/portlist");
    std::printf("nfsd versions %snfsd listeners: %s", versions.c_str(),
                ports.c_str());
    ASSERT_NE(versions.find("+3"), std::string::npos)
        << "nfsd serves no NFSv3 (run with SERVICES nfsd3)";
    ASSERT_NE(ports.find("rdma 20049"), std::string::npos);
    FillNfs3Export();
  }
};

}  // namespace
}  // namespace rpcrdma::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (rpcrdma::test::ProbeVerbsDevice().empty()) return 1;
  ::testing::AddGlobalTestEnvironment(new rpcrdma::test::Nfs3Environment);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
