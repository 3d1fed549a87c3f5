// nfs3d's NFSv3 service (examples/nfs3d) through rpcgen's NFSv3 client
// stubs over the ONC RPC adapter on the soft fabric: every procedure's
// semantics (RFC 1813 §3.3), the file handles' guarantees, and malformed
// requests answered with their NFSv3 errors. The kernel's client mounts the
// same server in the VM (interop/kernel, ctest kernel.nfs3d).
//
// Needs CAP_DAC_READ_SEARCH (open_by_handle_at), as the server does
// (nfs3d_fixture.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "examples/nfs3d/export.h"
#include "examples/nfs3d/nfs3_server.h"
#include "gtest/gtest.h"
#include "nfs3_prot.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "tests/nfs3d/nfs3_client.h"
#include "tests/nfs3d/nfs3d_fixture.h"

namespace rpcrdma::nfs3d {
namespace {

using Nfs3dTest = Nfs3dFixture;

TEST_F(Nfs3dTest, Rfc1813_3_3_1_GetattrOfTheRootIsADirectory) {
  fattr3 attributes{};
  ASSERT_EQ(client_->Getattr(root_, attributes), NFS3_OK);
  EXPECT_EQ(attributes.type, NF3DIR);
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "export").c_str(), &st), 0);
  EXPECT_EQ(attributes.fileid, st.st_ino);
}

TEST_F(Nfs3dTest, Rfc1813_3_3_8_CreateWriteReadBackAndCommit) {
  FileHandle file;
  ASSERT_EQ(client_->Create(root_, "data", UNCHECKED, file), NFS3_OK);
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 7);
  std::array<char, NFS3_WRITEVERFSIZE> verifier{};
  ASSERT_EQ(client_->Write(file, 0, data, UNSTABLE, &verifier), NFS3_OK);
  std::array<char, NFS3_WRITEVERFSIZE> committed{};
  ASSERT_EQ(client_->Commit(file, committed), NFS3_OK);
  EXPECT_EQ(committed, verifier);  // no restart in between
  std::vector<uint8_t> back;
  bool eof = false;
  ASSERT_EQ(client_->Read(file, 0, 1 << 20, back, eof), NFS3_OK);
  EXPECT_EQ(back, data);
  EXPECT_TRUE(eof);
  // A short READ at the end, through the write chunk as well.
  ASSERT_EQ(client_->Read(file, data.size() - 5, 100, back, eof), NFS3_OK);
  EXPECT_EQ(back.size(), 5u);
  EXPECT_TRUE(eof);
  // The server wrote the file.
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "export" / "data").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  const Counters counters = client_->server_counters();
  EXPECT_GE(counters.read_chunk_calls, 1u);  // the WRITE's data
  EXPECT_GE(counters.write_chunks, 2u);      // the READs'
}

TEST_F(Nfs3dTest, Rfc1813_3_3_8_ExclusiveCreateRecognisesItsRetransmission) {
  FileHandle first, again, other;
  ASSERT_EQ(client_->CreateExclusive(root_, "once", "verifier", first),
            NFS3_OK);
  ASSERT_EQ(client_->CreateExclusive(root_, "once", "verifier", again),
            NFS3_OK);
  EXPECT_EQ(first, again);
  EXPECT_EQ(client_->CreateExclusive(root_, "once", "another!", other),
            NFS3ERR_EXIST);
  EXPECT_EQ(client_->Create(root_, "once", GUARDED, other), NFS3ERR_EXIST);
}

TEST_F(Nfs3dTest, Rfc1813_3_3_NamesLinksAndDirectories) {
  FileHandle a, b, sub, link;
  ASSERT_EQ(client_->Mkdir(root_, "a", a), NFS3_OK);
  ASSERT_EQ(client_->Mkdir(root_, "b", b), NFS3_OK);
  FileHandle file;
  ASSERT_EQ(client_->Create(a, "f", UNCHECKED, file), NFS3_OK);
  // RENAME across directories keeps the file: its handle still works, and
  // names the file LOOKUP finds in the new directory (whose handle has
  // that directory as its parent hint, export.h).
  ASSERT_EQ(client_->Rename(a, "f", b, "g"), NFS3_OK);
  FileHandle found;
  ASSERT_EQ(client_->Lookup(b, "g", found), NFS3_OK);
  fattr3 attributes{}, found_attributes{};
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  ASSERT_EQ(client_->Getattr(found, found_attributes), NFS3_OK);
  EXPECT_EQ(found_attributes.fileid, attributes.fileid);
  EXPECT_EQ(client_->Lookup(a, "f", found), NFS3ERR_NOENT);
  // LINK, SYMLINK, READLINK.
  ASSERT_EQ(client_->Link(file, a, "hard"), NFS3_OK);
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.nlink, 2u);
  ASSERT_EQ(client_->Symlink(a, "sym", "../b/g", link), NFS3_OK);
  std::string target;
  ASSERT_EQ(client_->Readlink(link, target), NFS3_OK);
  EXPECT_EQ(target, "../b/g");
  EXPECT_EQ(client_->Readlink(file, target), NFS3ERR_INVAL);
  // RMDIR of a non-empty directory; REMOVE then RMDIR.
  EXPECT_EQ(client_->Rmdir(root_, "b"), NFS3ERR_NOTEMPTY);
  EXPECT_EQ(client_->Remove(b, "g"), NFS3_OK);
  EXPECT_EQ(client_->Rmdir(root_, "b"), NFS3_OK);
  // The removed file's other link keeps it alive; the handle is the same.
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.nlink, 1u);
  ASSERT_EQ(client_->Remove(a, "hard"), NFS3_OK);
  // Now it is gone: its handle is stale (RFC 1813 §2.3.3).
  EXPECT_EQ(client_->Getattr(file, attributes), NFS3ERR_STALE);
}

TEST_F(Nfs3dTest, Rfc1813_3_3_2_SetattrModeSizeAndTheGuard) {
  FileHandle file;
  ASSERT_EQ(client_->Create(root_, "f", UNCHECKED, file), NFS3_OK);
  std::vector<uint8_t> data(10000, 1);
  ASSERT_EQ(client_->Write(file, 0, data, FILE_SYNC, nullptr), NFS3_OK);
  fattr3 attributes{};
  ASSERT_EQ(client_->Setattr(file, 0600, 100, nullptr), NFS3_OK);
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.mode, 0600u);
  EXPECT_EQ(attributes.size, 100u);
  const nfstime3 stale{1, 2};
  EXPECT_EQ(client_->Setattr(file, 0644, std::nullopt, &stale),
            NFS3ERR_NOT_SYNC);
  EXPECT_EQ(client_->Setattr(file, 0644, std::nullopt, &attributes.ctime),
            NFS3_OK);
}

TEST_F(Nfs3dTest, Rfc1813_3_3_17_LargeDirectoriesListCompletely) {
  FileHandle dir;
  ASSERT_EQ(client_->Mkdir(root_, "many", dir), NFS3_OK);
  std::set<std::string> made;
  for (int i = 0; i < 3000; ++i) {
    const std::string name = "entry-" + std::to_string(i);
    std::ofstream(dir_ / "export" / "many" / name) << i;
    made.insert(name);
  }
  made.insert(".");
  made.insert("..");
  for (bool plus : {false, true}) {
    std::set<std::string> listed;
    size_t pages = 0;
    ASSERT_EQ(client_->ListAll(dir, plus, 4096, listed, pages), NFS3_OK);
    EXPECT_EQ(listed, made) << (plus ? "READDIRPLUS" : "READDIR");
    EXPECT_GT(pages, 10u);  // cookies carried the listing across pages
  }
  std::set<std::string> none;
  size_t pages = 0;
  EXPECT_EQ(client_->ListAll(dir, false, 40, none, pages), NFS3ERR_TOOSMALL);
}

// RFC 1813 §3.3.16, §3.3.17: a count too small for one entry is
// NFS3ERR_TOOSMALL whatever the result's memory held: rpcgen's dispatcher
// hands the procedure its result as its stack left it, and the procedure
// frees the entries it listed before answering the error.
TEST_F(Nfs3dTest, Rfc1813_3_3_16_TooSmallWhateverTheResultHeld) {
  std::ofstream(dir_ / "export" / "f") << "x";
  authsys_parms root{};
  root.aup_machname = const_cast<char*>("nfs3d-test");
  svc_req q{};
  q.rq_cred.oa_flavor = AUTH_SYS;
  q.rq_clntcred = reinterpret_cast<caddr_t>(&root);
  READDIR3args list{};
  list.dir = AsNfsHandle(root_);
  list.count = 40;
  READDIR3res listed;
  std::memset(&listed, 0xa5, sizeof listed);
  ASSERT_TRUE(nfsproc3_readdir_3_svc(&list, &listed, &q));
  EXPECT_EQ(listed.status, NFS3ERR_TOOSMALL);
  xdr_free(reinterpret_cast<xdrproc_t>(
               reinterpret_cast<void (*)()>(&xdr_READDIR3res)),
           &listed);
  READDIRPLUS3args plus{};
  plus.dir = AsNfsHandle(root_);
  plus.dircount = 40;
  plus.maxcount = 40;
  READDIRPLUS3res described;
  std::memset(&described, 0xa5, sizeof described);
  ASSERT_TRUE(nfsproc3_readdirplus_3_svc(&plus, &described, &q));
  EXPECT_EQ(described.status, NFS3ERR_TOOSMALL);
  xdr_free(reinterpret_cast<xdrproc_t>(
               reinterpret_cast<void (*)()>(&xdr_READDIRPLUS3res)),
           &described);
}

// RFC 1813 §3.3.17: dircount is a hint, maxcount bounds the reply: as
// Linux's nfsd does, a READDIRPLUS fills its reply up to maxcount, however
// few entries' names and cookies the dircount would hold, so that a
// listing takes fewer calls.
TEST_F(Nfs3dTest, Rfc1813_3_3_17_ReaddirplusFillsUpToMaxcount) {
  FileHandle dir;
  ASSERT_EQ(client_->Mkdir(root_, "some", dir), NFS3_OK);
  for (int i = 0; i < 40; ++i) {
    std::ofstream(dir_ / "export" / "some" / ("entry-" + std::to_string(i)))
        << i;
  }
  READDIRPLUS3args args{};
  args.dir = AsNfsHandle(dir);
  args.dircount = 64;  // the names and cookies of two or three entries
  args.maxcount = 64 * 1024;
  READDIRPLUS3res res{};
  ASSERT_EQ(nfsproc3_readdirplus_3(&args, &res, client_->client()),
            RPC_SUCCESS);
  ASSERT_EQ(res.status, NFS3_OK);
  size_t listed = 0;
  for (const entryplus3* e = res.READDIRPLUS3res_u.resok.reply.entries;
       e != nullptr; e = e->nextentry) {
    ++listed;
  }
  EXPECT_EQ(listed, 42u);  // the 40, "." and ".."
  EXPECT_TRUE(res.READDIRPLUS3res_u.resok.reply.eof);
  xdr_free(reinterpret_cast<xdrproc_t>(
               reinterpret_cast<void (*)()>(&xdr_READDIRPLUS3res)),
           &res);
}

TEST_F(Nfs3dTest, HandlesNeverLeaveTheExport) {
  // ".." of the root is the root.
  FileHandle up;
  ASSERT_EQ(client_->Lookup(root_, "..", up), NFS3_OK);
  EXPECT_EQ(up, root_);
  // A name with a slash, a handle of garbage, and the handle of a file
  // beside the export on the same file system.
  EXPECT_EQ(client_->Lookup(root_, "../outside", up), NFS3ERR_ACCES);
  FileHandle garbage(20, 0x5a);
  fattr3 attributes{};
  EXPECT_EQ(client_->Getattr(garbage, attributes), NFS3ERR_BADHANDLE);
  std::ofstream(dir_ / "outside") << "secret";
  UniqueFd outside(open((dir_ / "outside").c_str(), O_PATH | O_CLOEXEC));
  FileHandle escaped;
  ASSERT_EQ(server_->exported().HandleOf(outside.get(), escaped), NFS3_OK);
  EXPECT_EQ(client_->Getattr(escaped, attributes), NFS3ERR_STALE);
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(escaped, 0, 100, back, eof), NFS3ERR_STALE);
}

TEST_F(Nfs3dTest, HandlesSurviveARestart) {
  FileHandle file;
  ASSERT_EQ(client_->Create(root_, "kept", UNCHECKED, file), NFS3_OK);
  std::array<char, NFS3_WRITEVERFSIZE> before{}, after{};
  std::vector<uint8_t> data(100, 3);
  ASSERT_EQ(client_->Write(file, 0, data, UNSTABLE, &before), NFS3_OK);
  // A new server on the same directory.
  Serve(ExportOptions{.root_squash = false});
  fattr3 attributes{};
  EXPECT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.size, 100u);
  // A new write verifier: the client must write again what it had not
  // committed (RFC 1813 §3.3.7).
  ASSERT_EQ(client_->Write(file, 0, data, UNSTABLE, &after), NFS3_OK);
  EXPECT_NE(before, after);
}

TEST_F(Nfs3dTest, Rfc1813_3_3_18_FileSystemInformation) {
  FSINFO3resok info{};
  ASSERT_EQ(client_->Fsinfo(root_, info), NFS3_OK);
  EXPECT_EQ(info.rtmax, 1u << 20);
  EXPECT_NE(info.properties & FSF3_SYMLINK, 0u);
  FSSTAT3resok stat{};
  ASSERT_EQ(client_->Fsstat(root_, stat), NFS3_OK);
  EXPECT_GT(stat.tbytes, 0u);
}

}  // namespace
}  // namespace rpcrdma::nfs3d
