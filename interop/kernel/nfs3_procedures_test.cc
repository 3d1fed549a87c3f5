// ctest kernel.nfs3, steps 7 and 8 (nfs3_interop_test.cc has the story):
// every NFSv3 procedure the data-path steps leave out, once each through
// rpcgen's stubs over RPC-over-RDMA, checked in the guest; then UMNT.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "interop/kernel/nfs3_fixture.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "tests/testing/rdma_vm.h"

namespace rpcrdma::test {
namespace {

constexpr char kLinkTarget[] = "/a/symbolic/link/target";

// A name argument rpcgen's routines take as char*.
struct Name {
  explicit Name(absl::string_view s) : text(s) {}
  char* get() { return text.data(); }
  std::string text;
};

diropargs3 Where(const Fh& dir, Name& name) {
  diropargs3 where{};
  where.dir = FhArg(dir);
  where.name = name.get();
  return where;
}

sattr3 Mode(mode3 mode) {
  sattr3 attributes{};
  attributes.mode.set_it = TRUE;
  attributes.mode.set_mode3_u.mode = mode;
  attributes.atime.set_it = DONT_CHANGE;
  attributes.mtime.set_it = DONT_CHANGE;
  return attributes;
}

bool Exists(const std::string& name, struct stat* st = nullptr) {
  struct stat s {};
  const bool there = lstat(GuestPath(name).c_str(), &s) == 0;
  if (st != nullptr) *st = s;
  return there;
}

// Step 7: the other procedures of RFC 1813 §3.3, once each, on the root of
// the export: CREATE, SETATTR, ACCESS, MKDIR, SYMLINK, READLINK (its reply
// through the reply chunk the binding offers), MKNOD, LINK, RENAME,
// READDIR (reply chunk too), REMOVE, RMDIR, FSSTAT and PATHCONF. Each
// result is checked against what the guest sees.
TEST_F(Nfs3Interop, Step7_Rfc1813_3_3_EveryOtherProcedure) {
  const Counters before = channel().counters();
  const KernelStats k0 = KernelStats::Now();
  int calls = 0;
  auto ok = [&](clnt_stat stat, nfsstat3 status, const char* what) {
    ++calls;
    EXPECT_EQ(stat, RPC_SUCCESS) << what << ": " << rdma_oncrpc_error();
    EXPECT_EQ(status, NFS3_OK) << what << ": " << Nfs3StatName(status);
    return stat == RPC_SUCCESS && status == NFS3_OK;
  };

  // §3.3.8 CREATE (UNCHECKED), mode 0640.
  Name created("created");
  CREATE3args create_args{};
  create_args.where = Where(root_, created);
  create_args.how.mode = UNCHECKED;
  create_args.how.createhow3_u.obj_attributes = Mode(0640);
  CREATE3res create_res{};
  ASSERT_TRUE(ok(nfsproc3_create_3(&create_args, &create_res, nfs_),
                 create_res.status, "CREATE"));
  ASSERT_TRUE(create_res.CREATE3res_u.resok.obj.handle_follows);
  const Fh file = FhOf(create_res.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
  xdr_free(AsXdrProc(&xdr_CREATE3res), &create_res);
  struct stat st {};
  ASSERT_TRUE(Exists("created", &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);

  // §3.3.2 SETATTR: the size.
  SETATTR3args setattr{};
  setattr.object = FhArg(file);
  setattr.new_attributes.size.set_it = TRUE;
  setattr.new_attributes.size.set_size3_u.size = 12345;
  setattr.new_attributes.atime.set_it = DONT_CHANGE;
  setattr.new_attributes.mtime.set_it = DONT_CHANGE;
  setattr.guard.check = FALSE;
  SETATTR3res setattr_res{};
  EXPECT_TRUE(ok(nfsproc3_setattr_3(&setattr, &setattr_res, nfs_),
                 setattr_res.status, "SETATTR"));
  xdr_free(AsXdrProc(&xdr_SETATTR3res), &setattr_res);
  ASSERT_TRUE(Exists("created", &st));
  EXPECT_EQ(st.st_size, 12345);

  // §3.3.4 ACCESS: root may read and modify it.
  ACCESS3args access_args{FhArg(file), ACCESS3_READ | ACCESS3_MODIFY |
                                           ACCESS3_EXTEND | ACCESS3_EXECUTE};
  ACCESS3res access_res{};
  if (ok(nfsproc3_access_3(&access_args, &access_res, nfs_), access_res.status,
         "ACCESS")) {
    const uint32 granted = access_res.ACCESS3res_u.resok.access;
    EXPECT_EQ(granted & (ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND),
              uint32{ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND});
    // Mode 0640 has no execute bit, for root neither.
    EXPECT_EQ(granted & ACCESS3_EXECUTE, 0u);
  }
  xdr_free(AsXdrProc(&xdr_ACCESS3res), &access_res);

  // §3.3.9 MKDIR.
  Name subdir("subdir");
  MKDIR3args mkdir_args{Where(root_, subdir), Mode(0755)};
  MKDIR3res mkdir_res{};
  EXPECT_TRUE(ok(nfsproc3_mkdir_3(&mkdir_args, &mkdir_res, nfs_),
                 mkdir_res.status, "MKDIR"));
  xdr_free(AsXdrProc(&xdr_MKDIR3res), &mkdir_res);
  EXPECT_TRUE(Exists("subdir", &st) && S_ISDIR(st.st_mode));

  // §3.3.10 SYMLINK, then §3.3.5 READLINK of it.
  Name link_name("link");
  Name target(kLinkTarget);
  SYMLINK3args symlink_args{};
  symlink_args.where = Where(root_, link_name);
  symlink_args.symlink.symlink_attributes = Mode(0777);
  symlink_args.symlink.symlink_data = target.get();
  SYMLINK3res symlink_res{};
  Fh link_fh;
  if (ok(nfsproc3_symlink_3(&symlink_args, &symlink_res, nfs_),
         symlink_res.status, "SYMLINK") &&
      symlink_res.SYMLINK3res_u.resok.obj.handle_follows) {
    link_fh = FhOf(symlink_res.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle);
  }
  xdr_free(AsXdrProc(&xdr_SYMLINK3res), &symlink_res);
  char guest_target[256] = {};
  EXPECT_EQ(readlink(GuestPath("link").c_str(), guest_target,
                     sizeof guest_target - 1),
            static_cast<ssize_t>(std::strlen(kLinkTarget)));
  EXPECT_STREQ(guest_target, kLinkTarget);
  ASSERT_FALSE(link_fh.empty());
  const Counters before_readlink = channel().counters();
  READLINK3args readlink_args{FhArg(link_fh)};
  READLINK3res readlink_res{};
  if (ok(nfsproc3_readlink_3(&readlink_args, &readlink_res, nfs_),
         readlink_res.status, "READLINK")) {
    EXPECT_STREQ(readlink_res.READLINK3res_u.resok.data, kLinkTarget);
  }
  xdr_free(AsXdrProc(&xdr_READLINK3res), &readlink_res);
  const Counters readlink_d = Delta(channel().counters(), before_readlink);
  // The binding offers READLINK a reply chunk, and nfsd uses any it is
  // offered, short as the reply is.
  EXPECT_EQ(readlink_d.reply_chunks, 1u);
  EXPECT_EQ(readlink_d.long_replies, 1u);

  // §3.3.11 MKNOD of a FIFO.
  Name fifo("fifo");
  MKNOD3args mknod_args{};
  mknod_args.where = Where(root_, fifo);
  mknod_args.what.type = NF3FIFO;
  mknod_args.what.mknoddata3_u.pipe_attributes = Mode(0600);
  MKNOD3res mknod_res{};
  EXPECT_TRUE(ok(nfsproc3_mknod_3(&mknod_args, &mknod_res, nfs_),
                 mknod_res.status, "MKNOD"));
  xdr_free(AsXdrProc(&xdr_MKNOD3res), &mknod_res);
  EXPECT_TRUE(Exists("fifo", &st) && S_ISFIFO(st.st_mode));

  // §3.3.15 LINK, §3.3.14 RENAME.
  Name hardlink("hardlink");
  LINK3args link_args{FhArg(file), Where(root_, hardlink)};
  LINK3res link_res{};
  EXPECT_TRUE(ok(nfsproc3_link_3(&link_args, &link_res, nfs_), link_res.status,
                 "LINK"));
  xdr_free(AsXdrProc(&xdr_LINK3res), &link_res);
  EXPECT_TRUE(Exists("hardlink", &st) && st.st_nlink == 2);
  Name renamed("renamed");
  RENAME3args rename_args{Where(root_, created), Where(root_, renamed)};
  RENAME3res rename_res{};
  EXPECT_TRUE(ok(nfsproc3_rename_3(&rename_args, &rename_res, nfs_),
                 rename_res.status, "RENAME"));
  xdr_free(AsXdrProc(&xdr_RENAME3res), &rename_res);
  EXPECT_FALSE(Exists("created"));
  EXPECT_TRUE(Exists("renamed"));

  // §3.3.16 READDIR of the root: every name the guest sees.
  READDIR3args readdir_args{};
  readdir_args.dir = FhArg(root_);
  readdir_args.count = 8192;
  READDIR3res readdir_res{};
  std::set<std::string> names;
  if (ok(nfsproc3_readdir_3(&readdir_args, &readdir_res, nfs_),
         readdir_res.status, "READDIR")) {
    for (entry3* e = readdir_res.READDIR3res_u.resok.reply.entries;
         e != nullptr; e = e->nextentry) {
      names.insert(e->name);
    }
    EXPECT_TRUE(readdir_res.READDIR3res_u.resok.reply.eof);
  }
  xdr_free(AsXdrProc(&xdr_READDIR3res), &readdir_res);
  for (const char* expected :
       {".", "..", "data1m", "data4m", "written", "dir2000", "renamed",
        "hardlink", "subdir", "link", "fifo"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }

  // §3.3.12 REMOVE and §3.3.13 RMDIR of what this step made.
  for (Name* gone : {&renamed, &hardlink, &link_name, &fifo}) {
    REMOVE3args remove_args{Where(root_, *gone)};
    REMOVE3res remove_res{};
    EXPECT_TRUE(ok(nfsproc3_remove_3(&remove_args, &remove_res, nfs_),
                   remove_res.status, "REMOVE"));
    xdr_free(AsXdrProc(&xdr_REMOVE3res), &remove_res);
    EXPECT_FALSE(Exists(gone->text)) << gone->text;
  }
  RMDIR3args rmdir_args{Where(root_, subdir)};
  RMDIR3res rmdir_res{};
  EXPECT_TRUE(ok(nfsproc3_rmdir_3(&rmdir_args, &rmdir_res, nfs_),
                 rmdir_res.status, "RMDIR"));
  xdr_free(AsXdrProc(&xdr_RMDIR3res), &rmdir_res);
  EXPECT_FALSE(Exists("subdir"));

  // §3.3.18 FSSTAT: the tmpfs's size as statvfs gives it; §3.3.20
  // PATHCONF.
  FSSTAT3args fsstat_args{FhArg(root_)};
  FSSTAT3res fsstat_res{};
  struct statvfs vfs {};
  ASSERT_EQ(statvfs(GuestPath("").c_str(), &vfs), 0);
  if (ok(nfsproc3_fsstat_3(&fsstat_args, &fsstat_res, nfs_), fsstat_res.status,
         "FSSTAT")) {
    EXPECT_EQ(fsstat_res.FSSTAT3res_u.resok.tbytes,
              uint64{vfs.f_blocks} * vfs.f_frsize);
  }
  xdr_free(AsXdrProc(&xdr_FSSTAT3res), &fsstat_res);
  PATHCONF3args pathconf_args{FhArg(root_)};
  PATHCONF3res pathconf_res{};
  if (ok(nfsproc3_pathconf_3(&pathconf_args, &pathconf_res, nfs_),
         pathconf_res.status, "PATHCONF")) {
    const PATHCONF3resok& pc = pathconf_res.PATHCONF3res_u.resok;
    std::printf(
        "PATHCONF: linkmax %u name_max %u no_trunc %d chown_restricted %d "
        "case_insensitive %d case_preserving %d\n",
        pc.linkmax, pc.name_max, pc.no_trunc, pc.chown_restricted,
        pc.case_insensitive, pc.case_preserving);
    EXPECT_EQ(pc.name_max, 255u);
    // nfsd says names over name_max are silently truncated (§3.3.20)...
    EXPECT_FALSE(pc.no_trunc);
  }
  xdr_free(AsXdrProc(&xdr_PATHCONF3res), &pathconf_res);
  // ... but refuses them: filename3 is string<> (any length), and nfsd's
  // decoder answers one over 255 octets GARBAGE_ARGS, which clnt_call
  // returns as RPC_CANTDECODEARGS; neither truncated nor
  // NFS3ERR_NAMETOOLONG (§3.3.3, §3.3.8).
  Name longest(std::string(255, 'n')), too_long(std::string(256, 'n'));
  LOOKUP3args lookup{Where(root_, longest)};
  LOOKUP3res lookup_res{};
  ++calls;
  ASSERT_EQ(nfsproc3_lookup_3(&lookup, &lookup_res, nfs_), RPC_SUCCESS);
  EXPECT_EQ(lookup_res.status, NFS3ERR_NOENT)
      << Nfs3StatName(lookup_res.status);
  xdr_free(AsXdrProc(&xdr_LOOKUP3res), &lookup_res);
  lookup.what = Where(root_, too_long);
  ++calls;
  EXPECT_EQ(nfsproc3_lookup_3(&lookup, &lookup_res, nfs_), RPC_CANTDECODEARGS);
  std::printf("LOOKUP of a 256-octet name: %s\n", rdma_oncrpc_error());
  CREATE3args create_long{};
  create_long.where = Where(root_, too_long);
  create_long.how.mode = UNCHECKED;
  create_long.how.createhow3_u.obj_attributes = Mode(0600);
  CREATE3res create_long_res{};
  ++calls;
  EXPECT_EQ(nfsproc3_create_3(&create_long, &create_long_res, nfs_),
            RPC_CANTDECODEARGS);
  EXPECT_FALSE(Exists(too_long.text));
  EXPECT_FALSE(Exists(too_long.text.substr(0, 255))) << "not truncated";

  const Counters d = Delta(channel().counters(), before);
  const KernelStats k = KernelStats::Now() - k0;
  LogCounters("procedures", channel().counters());
  std::printf("procedures: %d calls; svcrdma reads %ld writes %ld\n", calls,
              static_cast<long>(k.read), static_cast<long>(k.write));
  EXPECT_EQ(d.calls, static_cast<uint64_t>(calls));
  EXPECT_EQ(d.inline_calls, static_cast<uint64_t>(calls));
  // Only READLINK and READDIR offer a reply chunk; nothing else moves by
  // RDMA.
  EXPECT_EQ(d.reply_chunks, 2u);
  EXPECT_EQ(d.long_replies, 2u);
  EXPECT_EQ(d.read_chunk_calls + d.write_chunks + d.long_calls, 0u);
  EXPECT_EQ(k.read, 0);
  EXPECT_GE(k.write, 2);
}

// Step 8: UMNT (RFC 1813 Appendix I, MOUNTPROC3_UMNT) over TCP: DUMP no
// longer lists the mount.
TEST_F(Nfs3Interop, Step8_Rfc1813_I_UnmountOverTcp) {
  char export_path[] = "/srv/nfs";
  dirpath path = export_path;
  ASSERT_EQ(mountproc3_umnt_3(&path, nullptr, mount_), RPC_SUCCESS)
      << clnt_sperror(mount_, "UMNT");
  const std::vector<std::string> mounts = DumpMounts(mount_);
  EXPECT_EQ(std::find(mounts.begin(), mounts.end(),
                      absl::StrCat(test::RdmaTestHost(), ":/srv/nfs")),
            mounts.end());
  EXPECT_EQ(std::find(mounts.begin(), mounts.end(), "?"), mounts.end())
      << "DUMP failed";
}

}  // namespace
}  // namespace rpcrdma::test
