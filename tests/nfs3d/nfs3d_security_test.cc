// nfs3d (examples/nfs3d) against a hostile client: what a call may reach
// and who it acts as. Device nodes and FIFOs a client makes or finds in
// the export, handles in other encodings, sizes and offsets past what the
// server's file system takes (RFC 1813 §2.3.3, §3.3). Each call must
// answer with its NFSv3 error, never block a server thread, and never do
// I/O on anything but a regular file.
//
// Needs CAP_DAC_READ_SEARCH (open_by_handle_at), as the server does
// (nfs3d_fixture.h).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/nfs3d/export.h"
#include "examples/nfs3d/listener.h"
#include "examples/nfs3d/mount3_service.h"
#include "examples/nfs3d/nfs3_server.h"
#include "gtest/gtest.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "tests/nfs3d/nfs3_client.h"
#include "tests/nfs3d/nfs3d_fixture.h"

namespace rpcrdma::nfs3d {
namespace {

// What BindMountedExport answers from its child process.
constexpr int kBindMountHolds = 0;
constexpr int kBindMountNotPermitted = 77;

// In a mount namespace of its own (the calling process must be alone in
// it: a child): a tmpfs at `dir`/fs with "outside" and "sub/inside", and
// "sub" bound at `dir`/bound, whose device differs from its parent's as a
// file system root's does. Exports `dir`/bound and checks that the handle
// of "outside" is STALE there, that of "inside" is not, and that the
// tmpfs's own root is a whole file system. 0 when all hold, a number
// saying which did not otherwise.
int BindMountedExport(const std::filesystem::path& dir) {
  const std::filesystem::path fs = dir / "fs", bound = dir / "bound";
  if (mkdir(fs.c_str(), 0755) != 0 || mkdir(bound.c_str(), 0755) != 0) {
    return 1;
  }
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", fs.c_str(), "tmpfs", 0, "size=1m") != 0) {
    return kBindMountNotPermitted;
  }
  if (mkdir((fs / "sub").c_str(), 0755) != 0) return 2;
  for (const std::filesystem::path& file :
       {fs / "outside", fs / "sub/inside"}) {
    UniqueFd fd(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    if (!fd.valid()) return 3;
  }
  if (mount((fs / "sub").c_str(), bound.c_str(), nullptr, MS_BIND, nullptr) !=
      0) {
    return kBindMountNotPermitted;
  }
  absl::StatusOr<std::unique_ptr<Export>> exported = Export::Open(bound);
  if (!exported.ok()) return 4;
  auto open_in = [](const Export& e, const std::filesystem::path& file) {
    UniqueFd fd(open(file.c_str(), O_PATH | O_CLOEXEC));
    FileHandle handle;
    if (!fd.valid() || e.HandleOf(fd.get(), handle) != NFS3_OK) {
      return NFS3ERR_SERVERFAULT;
    }
    UniqueFd opened;
    return e.Open(AsNfsHandle(handle), O_PATH, opened);
  };
  if (open_in(**exported, fs / "outside") != NFS3ERR_STALE) return 5;
  if (open_in(**exported, bound / "inside") != NFS3_OK) return 6;
  absl::StatusOr<std::unique_ptr<Export>> whole = Export::Open(fs);
  if (!whole.ok()) return 7;
  if (open_in(**whole, fs / "outside") != NFS3_OK) return 8;
  return kBindMountHolds;
}

class Nfs3dSecurityTest : public Nfs3dFixture {
 protected:
  // A file of root's with `mode` and `contents`, made on the server.
  void MakeRootFile(const char* name, mode_t mode, gid_t gid = 0) {
    std::ofstream(In(name)) << "secret";
    ASSERT_EQ(chown(In(name).c_str(), 0, gid), 0);
    ASSERT_EQ(chmod(In(name).c_str(), mode), 0);
  }

  // A directory everyone may write in, made on the server.
  FileHandle MakePublicDirectory(const char* name) {
    std::filesystem::create_directory(In(name));
    EXPECT_EQ(chmod(In(name).c_str(), 0777), 0);
    return HandleOf(name);
  }

  // Who owns `name` in the export.
  std::pair<uid_t, gid_t> OwnerOf(const std::string& name) const {
    struct stat st {};
    EXPECT_EQ(lstat(In(name).c_str(), &st), 0) << name;
    return {st.st_uid, st.st_gid};
  }

  // Runs `call` (which may touch the FIFO at `fifo`) on another thread.
  // A call that blocks on the FIFO fails the test: it does not return
  // within a limit far beyond what a call that does not block takes, even
  // on a loaded machine, or the client gives up on it first (its status is
  // then not the one expected). Either way the FIFO is then opened at both
  // ends and given a byte, so that a server thread stuck in open() or
  // read() comes back and the test ends instead of hanging; for a server
  // thread that never blocked that changes nothing.
  nfsstat3 WithoutBlocking(const std::filesystem::path& fifo,
                           std::function<nfsstat3()> call) {
    std::future<nfsstat3> done = std::async(std::launch::async, call);
    if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "the call blocked on the FIFO " << fifo;
    }
    const int release = open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (release >= 0) {
      (void)!write(release, "x", 1);
      close(release);
    }
    return done.get();
  }
};

// RFC 1813 §3.3.11: a client may not make a device node. READ and WRITE of
// one would be raw I/O on any device of the server (its disks), whatever
// the files on them allow.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_11_MknodOfADeviceIsRefused) {
  FileHandle made;
  EXPECT_EQ(client_->Mknod(root_, "disk", NF3BLK, 8, 0, made), NFS3ERR_PERM);
  EXPECT_EQ(client_->Mknod(root_, "zero", NF3CHR, 1, 5, made), NFS3ERR_PERM);
  struct stat st {};
  EXPECT_NE(lstat(In("disk").c_str(), &st), 0);
  EXPECT_NE(lstat(In("zero").c_str(), &st), 0);
  // A FIFO and a socket have no data of the server's: MKNOD makes them.
  EXPECT_EQ(client_->Mknod(root_, "fifo", NF3FIFO, 0, 0, made), NFS3_OK);
  EXPECT_EQ(client_->Mknod(root_, "socket", NF3SOCK, 0, 0, made), NFS3_OK);
}

// RFC 1813 §3.3.6, §3.3.7, §3.3.21: READ, WRITE and COMMIT are for
// regular files; a device node already in the export (made on the server)
// answers NFS3ERR_INVAL and is never opened.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_6_ReadWriteCommitOfADeviceAreInval) {
  // /dev/zero's numbers: before the check, READ gave its zeros.
  if (mknod(In("zero").c_str(), S_IFCHR | 0666, makedev(1, 5)) != 0) {
    GTEST_SKIP() << "mknod: " << std::strerror(errno);
  }
  const FileHandle device = HandleOf("zero");
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(device, 0, 100, back, eof), NFS3ERR_INVAL);
  EXPECT_EQ(client_->Write(device, 0, {1, 2, 3}, FILE_SYNC, nullptr),
            NFS3ERR_INVAL);
  std::array<char, NFS3_WRITEVERFSIZE> verifier{};
  EXPECT_EQ(client_->Commit(device, verifier), NFS3ERR_INVAL);
}

// RFC 1813 §3.3.6, §3.3.7, §3.3.21: a symbolic link is not a regular file
// either (NFS3ERR_INVAL, as nfsd answers; not NOTDIR).
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_6_ReadWriteCommitOfASymlinkAreInval) {
  std::ofstream(In("target")) << "data";
  FileHandle link;
  ASSERT_EQ(client_->Symlink(root_, "link", "target", link), NFS3_OK);
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(link, 0, 100, back, eof), NFS3ERR_INVAL);
  EXPECT_EQ(client_->Write(link, 0, {1, 2, 3}, FILE_SYNC, nullptr),
            NFS3ERR_INVAL);
  std::array<char, NFS3_WRITEVERFSIZE> verifier{};
  EXPECT_EQ(client_->Commit(link, verifier), NFS3ERR_INVAL);
  // A directory is NFS3ERR_ISDIR.
  EXPECT_EQ(client_->Read(root_, 0, 100, back, eof), NFS3ERR_ISDIR);
}

// RFC 1813 §3.3.6, §3.3.7, §3.3.21: READ, WRITE and COMMIT of a FIFO a
// client made answer NFS3ERR_INVAL at once: no server thread waits in
// open() or read() for the FIFO's other end.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_6_ReadWriteCommitOfAFifoNeverBlock) {
  FileHandle fifo;
  ASSERT_EQ(client_->Mknod(root_, "fifo", NF3FIFO, 0, 0, fifo), NFS3_OK);
  EXPECT_EQ(WithoutBlocking(In("fifo"),
                            [&] {
                              std::vector<uint8_t> back;
                              bool eof = false;
                              return client_->Read(fifo, 0, 100, back, eof);
                            }),
            NFS3ERR_INVAL);
  EXPECT_EQ(WithoutBlocking(
                In("fifo"),
                [&] {
                  return client_->Write(fifo, 0, {1, 2, 3}, FILE_SYNC, nullptr);
                }),
            NFS3ERR_INVAL);
  EXPECT_EQ(WithoutBlocking(In("fifo"),
                            [&] {
                              std::array<char, NFS3_WRITEVERFSIZE> v{};
                              return client_->Commit(fifo, v);
                            }),
            NFS3ERR_INVAL);
}

// RFC 1813 §3.3.8: UNCHECKED CREATE of a name that is a FIFO answers
// NFS3ERR_EXIST (as nfsd does for any existing file but a regular one)
// without opening the FIFO for writing, which would wait for a reader.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_8_CreateOverAFifoNeverBlocks) {
  ASSERT_EQ(mkfifo(In("fifo").c_str(), 0666), 0);
  FileHandle made;
  EXPECT_EQ(
      WithoutBlocking(
          In("fifo"),
          [&] { return client_->Create(root_, "fifo", UNCHECKED, made); }),
      NFS3ERR_EXIST);
  EXPECT_EQ(WithoutBlocking(
                In("fifo"),
                [&] { return client_->Create(root_, "fifo", GUARDED, made); }),
            NFS3ERR_EXIST);
  // An existing regular file is still what UNCHECKED takes.
  std::ofstream(In("plain")) << "data";
  EXPECT_EQ(client_->Create(root_, "plain", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(made, HandleOf("plain"));
}

// RFC 1813 §3.3.18: FSSTAT of a FIFO's handle answers for its file system
// without opening the FIFO.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_18_FsstatOfAFifoNeverBlocks) {
  ASSERT_EQ(mkfifo(In("fifo").c_str(), 0666), 0);
  const FileHandle fifo = HandleOf("fifo");
  FSSTAT3resok stat{};
  EXPECT_EQ(
      WithoutBlocking(In("fifo"), [&] { return client_->Fsstat(fifo, stat); }),
      NFS3_OK);
}

// RFC 1813 §3.3.6: READ at an offset past the end of the file is 0 octets
// and eof, also at 2^63 and beyond (no off_t reaches it).
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_6_ReadFrom2To63IsEmptyAndEof) {
  std::ofstream(In("f")) << "data";
  const FileHandle file = HandleOf("f");
  for (uint64_t offset :
       {uint64_t{1} << 63, ~uint64_t{0}, (uint64_t{1} << 63) - 1}) {
    std::vector<uint8_t> back{1};
    bool eof = false;
    EXPECT_EQ(client_->Read(file, offset, 100, back, eof), NFS3_OK) << offset;
    EXPECT_TRUE(back.empty()) << offset;
    EXPECT_TRUE(eof) << offset;
  }
}

// RFC 1813 §3.3.2, §3.3.7: a size or a WRITE past 2^63 - 1 is
// NFS3ERR_FBIG (the file would be too large), not NFS3ERR_INVAL.
TEST_F(Nfs3dSecurityTest, Rfc1813_3_3_2_SizesFrom2To63AreFbig) {
  std::ofstream(In("f")) << "data";
  const FileHandle file = HandleOf("f");
  EXPECT_EQ(client_->Setattr(file, std::nullopt, uint64_t{1} << 63, nullptr),
            NFS3ERR_FBIG);
  EXPECT_EQ(client_->Setattr(file, std::nullopt, ~uint64_t{0}, nullptr),
            NFS3ERR_FBIG);
  EXPECT_EQ(client_->Write(file, uint64_t{1} << 63, {1}, FILE_SYNC, nullptr),
            NFS3ERR_FBIG);
  fattr3 attributes{};
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.size, 4u);
}

// RFC 1813 §2.3.3: a file has one handle. The kernel's handle type has
// flags in bits 16 and 17 (FILEID_IS_CONNECTABLE, FILEID_IS_DIR) that
// open_by_handle_at takes; a handle with them set is no handle of this
// server's.
TEST_F(Nfs3dSecurityTest, Rfc1813_2_3_3_HandleTypeFlagsMakeNoOtherHandle) {
  std::ofstream(In("f")) << "data";
  const FileHandle file = HandleOf("f");
  ASSERT_GE(file.size(), 8u);
  for (int flag : {0x01, 0x02, 0x03}) {
    for (const FileHandle& original : {file, root_}) {
      FileHandle flagged = original;
      flagged[5] |= static_cast<uint8_t>(flag);  // octets 4-7: the type
      fattr3 attributes{};
      const nfsstat3 status = client_->Getattr(flagged, attributes);
      EXPECT_TRUE(status == NFS3ERR_BADHANDLE || status == NFS3ERR_STALE)
          << "flags " << flag << ": " << status;
    }
  }
}

// The parent hint (export.h) only finds a file again after a cold
// restart, and is no part of the file's identity: a file's handle is
// valid with another directory's hint or with none; a directory's handle
// never has one (BADHANDLE), nor does a hint whose length octet is wrong.
TEST_F(Nfs3dSecurityTest, Rfc1813_2_3_3_TheParentHintIsNoPartOfAFilesIdentity) {
  std::filesystem::create_directory(In("d"));
  std::ofstream(In("f")) << "data";
  const FileHandle file = HandleOf("f");
  const FileHandle dir = HandleOf("d");
  ASSERT_GE(file.size(), 8u);
  ASSERT_NE(file[1], 0) << "the export's paths are checked: a hint";
  // Octets 2-3: the kernel handle's length; the hint follows the handle.
  FileHandle bare(file.begin(), file.begin() + 8 + file[3]);
  bare[1] = 0;
  auto with_hint_of = [](FileHandle handle, const FileHandle& directory) {
    handle[1] = directory[3];
    handle.insert(handle.end(), directory.begin() + 4, directory.end());
    return handle;
  };
  fattr3 attributes{};
  EXPECT_EQ(client_->Getattr(bare, attributes), NFS3_OK);
  EXPECT_EQ(client_->Getattr(with_hint_of(bare, dir), attributes), NFS3_OK);
  EXPECT_EQ(client_->Getattr(with_hint_of(dir, root_), attributes),
            NFS3ERR_BADHANDLE);
  EXPECT_EQ(client_->Getattr(with_hint_of(root_, dir), attributes),
            NFS3ERR_BADHANDLE);
  FileHandle wrong_length = file;
  wrong_length[1] = static_cast<uint8_t>(wrong_length[1] + 1);
  EXPECT_EQ(client_->Getattr(wrong_length, attributes), NFS3ERR_BADHANDLE);
  wrong_length = bare;
  wrong_length[1] = 8;
  EXPECT_EQ(client_->Getattr(wrong_length, attributes), NFS3ERR_BADHANDLE);
}

constexpr uint32_t kAllAccess = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
                                ACCESS3_EXTEND | ACCESS3_DELETE |
                                ACCESS3_EXECUTE;

// RFC 1813 §4.4: the server checks permissions as the caller of the
// AUTH_SYS credential. A caller of uid 65534 neither READs nor WRITEs
// root's 0600 file, and ACCESS says so.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_CallsActAsTheAuthSysCaller) {
  MakeRootFile("secret", 0600);
  MakeRootFile("readable", 0644);
  const FileHandle secret = HandleOf("secret");
  const FileHandle readable = HandleOf("readable");
  client_->UseAuthSys(65534, 65534);
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3ERR_ACCES);
  EXPECT_EQ(client_->Write(secret, 0, {'X'}, FILE_SYNC, nullptr),
            NFS3ERR_ACCES);
  EXPECT_NE(client_->Setattr(secret, 0666, std::nullopt, nullptr), NFS3_OK);
  EXPECT_NE(client_->Setattr(secret, std::nullopt, 0, nullptr), NFS3_OK);
  uint32_t granted = ~0u;
  ASSERT_EQ(client_->Access(secret, kAllAccess, granted), NFS3_OK);
  EXPECT_EQ(granted, 0u);
  // What the mode grants the others, and nothing more.
  EXPECT_EQ(client_->Read(readable, 0, 100, back, eof), NFS3_OK);
  EXPECT_EQ(client_->Write(readable, 0, {'X'}, FILE_SYNC, nullptr),
            NFS3ERR_ACCES);
  ASSERT_EQ(client_->Access(readable, kAllAccess, granted), NFS3_OK);
  EXPECT_EQ(granted, uint32_t{ACCESS3_READ});
  // No name made in root's 0755 directory.
  FileHandle made;
  EXPECT_EQ(client_->Create(root_, "new", UNCHECKED, made), NFS3ERR_ACCES);
  EXPECT_EQ(client_->Mkdir(root_, "newdir", made), NFS3ERR_ACCES);
  EXPECT_EQ(client_->Remove(root_, "secret"), NFS3ERR_ACCES);
  // The file is as it was.
  std::ifstream in(In("secret"));
  std::string contents;
  in >> contents;
  EXPECT_EQ(contents, "secret");
  struct stat st {};
  ASSERT_EQ(stat(In("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// RFC 1813 §4.4: the credential's supplementary groups count, and are
// the serving thread's alone: the other threads of the process (this
// test's) keep theirs. A thread that served one caller serves the next
// with the next caller's identity.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_GroupsAreTheCallersAndPerThread) {
  MakeRootFile("group", 0640, 1234);
  const FileHandle file = HandleOf("group");
  std::vector<gid_t> mine(static_cast<size_t>(getgroups(0, nullptr)));
  ASSERT_EQ(getgroups(static_cast<int>(mine.size()), mine.data()),
            static_cast<int>(mine.size()));
  std::vector<uint8_t> back;
  bool eof = false;
  // Several rounds: the server has more than one dispatch thread.
  for (int round = 0; round < 4; ++round) {
    client_->UseAuthSys(1000, 1000, {1234});
    EXPECT_EQ(client_->Read(file, 0, 100, back, eof), NFS3_OK);
    client_->UseAuthSys(1000, 1000, {4321});
    EXPECT_EQ(client_->Read(file, 0, 100, back, eof), NFS3ERR_ACCES);
    client_->UseAuthSys(0, 0);  // no_root_squash: root reads anything
    EXPECT_EQ(client_->Read(file, 0, 100, back, eof), NFS3_OK);
  }
  std::vector<gid_t> after(static_cast<size_t>(getgroups(0, nullptr)));
  ASSERT_EQ(getgroups(static_cast<int>(after.size()), after.data()),
            static_cast<int>(after.size()));
  EXPECT_EQ(after, mine);
}

template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

// A program of the test's own, served by the same dispatch threads as
// NFS: procedure 1 answers how often the thread that dispatched it
// changed its credentials.
constexpr rpcprog_t kProbeProgram = 0x2000f3d0;

void Probe(svc_req* q, SVCXPRT* xprt) {
  if (q->rq_proc != 1) {
    svcerr_noproc(xprt);
    return;
  }
  u_int changes = static_cast<u_int>(CredentialChanges());
  svc_sendreply(xprt, AsXdrProc(&xdr_u_int), reinterpret_cast<char*>(&changes));
}

// RFC 1813 §4.4: acting as the caller changes a thread's credentials, and
// Linux then refuses that thread's verbs and RDMA connection manager
// commands (the device files were opened with other credentials; a
// Soft-RoCE Send is one), so that a dispatch thread that acted as a caller
// could never send a reply again. The calls act as their callers (the
// file system says ACCES), yet the thread that dispatches them and sends
// their replies never changes its credentials.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_DispatchThreadsKeepTheirCredentials) {
  MakeRootFile("secret", 0600);
  const FileHandle pub = MakePublicDirectory("pub");
  const FileHandle secret = HandleOf("secret");
  // One dispatch thread: the probe runs on the thread that dispatched
  // the NFS calls before it.
  client_ = std::make_unique<Nfs3Client>();
  ASSERT_TRUE(client_->Start(1)) << rdma_oncrpc_error();
  ASSERT_TRUE(svc_reg(client_->transport(), kProbeProgram, 1, Probe, nullptr));
  std::vector<uint8_t> back;
  bool eof = false;
  for (int round = 0; round < 3; ++round) {
    client_->UseAuthSys(65534, 65534, {4321});
    EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3ERR_ACCES);
    FileHandle made;
    EXPECT_EQ(client_->Create(pub, ("f" + std::to_string(round)).c_str(),
                              UNCHECKED, made),
              NFS3_OK);
    client_->UseAuthSys(0, 0, {0});  // no_root_squash: root is root
    EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3_OK);
  }
  EXPECT_EQ(OwnerOf("pub/f0"), std::make_pair(65534u, 65534u));

  oncrpc::AdapterConfig config;
  absl::StatusOr<CLIENT*> probe = oncrpc::CreateClient(
      svc_rdma_uri(client_->transport()), kProbeProgram, 1, config);
  ASSERT_TRUE(probe.ok()) << probe.status();
  u_int changes = ~0u;
  const timeval timeout{30, 0};
  EXPECT_EQ(
      clnt_call(*probe, 1, AsXdrProc(&xdr_void), nullptr, AsXdrProc(&xdr_u_int),
                reinterpret_cast<char*>(&changes), timeout),
      RPC_SUCCESS);
  EXPECT_EQ(changes, 0u);
  clnt_destroy(*probe);
  svc_unreg(kProbeProgram, 1);
}

// exports(5) root_squash, the default: uid 0 and gid 0 act as the
// anonymous user (65534 unless anonuid/anongid say otherwise).
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_RootIsSquashedByDefault) {
  MakeRootFile("secret", 0600);
  const FileHandle pub = MakePublicDirectory("pub");
  const FileHandle secret = HandleOf("secret");
  Serve(ExportOptions{});
  client_->UseAuthSys(0, 0, {0});
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3ERR_ACCES);
  EXPECT_EQ(client_->Write(secret, 0, {'X'}, FILE_SYNC, nullptr),
            NFS3ERR_ACCES);
  uint32_t granted = ~0u;
  ASSERT_EQ(client_->Access(secret, kAllAccess, granted), NFS3_OK);
  EXPECT_EQ(granted, 0u);
  FileHandle made;
  ASSERT_EQ(client_->Create(pub, "by-root", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/by-root"), std::make_pair(65534u, 65534u));
  // Another uid is itself.
  client_->UseAuthSys(1000, 1001);
  ASSERT_EQ(client_->Create(pub, "by-1000", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/by-1000"), std::make_pair(1000u, 1001u));
}

// exports(5) no_root_squash: root acts as root.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_NoRootSquashLetsRootBeRoot) {
  MakeRootFile("secret", 0600);
  const FileHandle pub = MakePublicDirectory("pub");
  const FileHandle secret = HandleOf("secret");
  Serve(ExportOptions{.root_squash = false});
  client_->UseAuthSys(0, 0);
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3_OK);
  FileHandle made;
  ASSERT_EQ(client_->Create(pub, "by-root", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/by-root"), std::make_pair(0u, 0u));
}

// RFC 1813 §4.4 (AUTH_NONE): the anonymous user, anonuid/anongid.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_AuthNoneIsTheAnonymousUser) {
  MakeRootFile("secret", 0600);
  const FileHandle pub = MakePublicDirectory("pub");
  const FileHandle secret = HandleOf("secret");
  Serve(ExportOptions{.anonuid = 4321, .anongid = 4322});
  client_->UseAuthNone();
  std::vector<uint8_t> back;
  bool eof = false;
  EXPECT_EQ(client_->Read(secret, 0, 100, back, eof), NFS3ERR_ACCES);
  FileHandle made;
  ASSERT_EQ(client_->Create(pub, "anonymous", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/anonymous"), std::make_pair(4321u, 4322u));
}

// exports(5) all_squash: every caller is the anonymous user.
TEST_F(Nfs3dSecurityTest, Rfc1813_4_4_AllSquashMakesEveryoneAnonymous) {
  const FileHandle pub = MakePublicDirectory("pub");
  Serve(ExportOptions{.all_squash = true, .anonuid = 4321, .anongid = 4322});
  client_->UseAuthSys(1000, 1000, {1234});
  FileHandle made;
  ASSERT_EQ(client_->Create(pub, "user", UNCHECKED, made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/user"), std::make_pair(4321u, 4322u));
  client_->UseAuthSys(0, 0);
  ASSERT_EQ(client_->Mkdir(pub, "root", made), NFS3_OK);
  EXPECT_EQ(OwnerOf("pub/root"), std::make_pair(4321u, 4322u));
}

// RFC 1813 §2.3.3 (export.h: a handle never leads outside the export): an
// export that is a bind mount of a sub-directory is a mount point whose
// device differs from its parent's, as a file system's root is, yet the
// rest of its file system is outside it. Needs a mount namespace (root):
// skipped where the child process may not make one.
TEST_F(Nfs3dSecurityTest, Rfc1813_2_3_3_BindMountedSubdirectoryKeepsItsBounds) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(BindMountedExport(dir_));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kBindMountNotPermitted) {
    GTEST_SKIP() << "no mount namespace here";
  }
  EXPECT_EQ(WEXITSTATUS(status), kBindMountHolds)
      << "see BindMountedExport for what the number says";
}

// A caller of MOUNT at `address` (an IPv4 literal), as svc_getrpccaller
// sees it.
struct FakeCaller {
  explicit FakeCaller(const char* address) {
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, address, &sin.sin_addr);
    xprt.xp_rtaddr.buf = &sin;
    xprt.xp_rtaddr.len = xprt.xp_rtaddr.maxlen = sizeof sin;
    request.rq_xprt = &xprt;
  }
  sockaddr_in sin{};
  SVCXPRT xprt{};
  svc_req request{};
};

mountstat3 Mnt(const char* path, const char* from) {
  FakeCaller caller(from);
  char* dir = const_cast<char*>(path);
  mountres3 result{};
  if (!mountproc3_mnt_3_svc(&dir, &result, &caller.request)) {
    return MNT3ERR_SERVERFAULT;
  }
  const mountstat3 status = result.fhs_status;
  xdr_free(
      reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(&xdr_mountres3)),
      &result);
  return status;
}

// RFC 1813 Appendix I §5.2.5 (EXPORT): the export's group list names the
// clients it is for, not "*"; MNT (§5.2.1) refuses any other client
// (MNT3ERR_ACCES).
TEST_F(Nfs3dSecurityTest, Rfc1813_I_5_2_5_ExportListsTheClientsMntAllows) {
  Mount3Service mount(server_->exported(), "/export",
                      {"192.0.2.0/24", "198.51.100.7", "2001:db8::/32"});
  Mount3Service::Install(&mount);
  exports list = nullptr;
  ASSERT_TRUE(mountproc3_export_3_svc(nullptr, &list, nullptr));
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(std::string(list->ex_dir), server_->exported().path());
  std::vector<std::string> names;
  for (groups g = list->ex_groups; g != nullptr; g = g->gr_next) {
    names.push_back(g->gr_name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"192.0.2.0/24", "198.51.100.7",
                                             "2001:db8::/32"}));
  EXPECT_EQ(list->ex_next, nullptr);
  xdr_free(
      reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(&xdr_exports)),
      &list);
  EXPECT_EQ(Mnt("/export", "192.0.2.200"), MNT3_OK);
  EXPECT_EQ(Mnt("/export", "198.51.100.7"), MNT3_OK);
  EXPECT_EQ(Mnt("/export", "198.51.100.8"), MNT3ERR_ACCES);
  EXPECT_EQ(Mnt("/export", "192.0.3.1"), MNT3ERR_ACCES);
  Mount3Service::Install(nullptr);
}

// Without clients named, only the loopback addresses may mount; MOUNT and
// NFS over TCP listen at the loopback address unless told otherwise.
TEST_F(Nfs3dSecurityTest, Rfc1813_I_5_2_1_DefaultsAreTheLoopback) {
  Mount3Service mount(server_->exported(), "");
  EXPECT_EQ(mount.clients(), (std::vector<std::string>{"127.0.0.1", "::1"}));
  Mount3Service::Install(&mount);
  EXPECT_EQ(Mnt(server_->exported().path().c_str(), "127.0.0.1"), MNT3_OK);
  EXPECT_EQ(Mnt(server_->exported().path().c_str(), "192.0.2.1"),
            MNT3ERR_ACCES);
  Mount3Service::Install(nullptr);
  EXPECT_FALSE(Mount3Service::ParseClient("example.org").ok());
  EXPECT_FALSE(Mount3Service::ParseClient("10.0.0.0/33").ok());
  EXPECT_TRUE(Mount3Service::ParseClient("10.0.0.0/8").ok());

  absl::StatusOr<UniqueFd> listener = ListenTcp(kDefaultListenAddress, 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  ASSERT_EQ(getsockname(listener->get(), reinterpret_cast<sockaddr*>(&bound),
                        &length),
            0);
  EXPECT_EQ(bound.sin_family, AF_INET);
  EXPECT_EQ(ntohl(bound.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_FALSE(ListenTcp("every interface", 0).ok());
}

// RFC 5531 §9: a server tells a retransmission by its XID, but an XID is
// only its own client's. Two clients connected at once that choose the
// same XID and send the same WRITE (same file, offset and count, and the
// same first 1,024 octets of data: far more than the 256 octets nfsd's
// checksum covers) make two calls, and each is executed, under nfs3d's
// own duplicate request cache. Every soft+unix client has the same empty
// address, as every local soft+tcp client is 127.0.0.1. A true
// retransmission is still answered from the cache, not executed again.
TEST_F(Nfs3dSecurityTest, Rfc5531_9_ClientsSharingAnXidEachGetTheirOwnWrite) {
  client_ = std::make_unique<Nfs3Client>();
  ASSERT_TRUE(client_->Start(2, Nfs3Client::ReplyCache::kNfs3d))
      << rdma_oncrpc_error();
  Nfs3Client second;
  ASSERT_TRUE(second.ConnectTo(*client_)) << rdma_oncrpc_error();
  FileHandle file;
  ASSERT_EQ(client_->Create(root_, "shared", UNCHECKED, file), NFS3_OK);
  const std::vector<uint8_t> first_data(4096, 'a');
  std::vector<uint8_t> second_data = first_data;
  std::fill(second_data.begin() + 1024, second_data.end(), 'b');
  const auto contents = [&] {
    std::ifstream in(In("shared"), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  };
  const auto write_with_xid = [&](Nfs3Client& writer,
                                  const std::vector<uint8_t>& data) {
    u_int xid = 0x5eed;
    EXPECT_TRUE(clnt_control(writer.client(), CLSET_XID,
                             reinterpret_cast<char*>(&xid)));
    return writer.Write(file, 0, data, FILE_SYNC, nullptr);
  };

  ASSERT_EQ(write_with_xid(*client_, first_data), NFS3_OK);
  EXPECT_EQ(contents(), first_data);
  ASSERT_EQ(write_with_xid(second, second_data), NFS3_OK);
  EXPECT_EQ(contents(), second_data);
  EXPECT_EQ(svc_rdma_cache_hits(client_->transport()), 0u);

  ASSERT_EQ(write_with_xid(*client_, first_data), NFS3_OK);
  EXPECT_EQ(svc_rdma_cache_hits(client_->transport()), 1u);
  EXPECT_EQ(contents(), second_data);
}

}  // namespace
}  // namespace rpcrdma::nfs3d
