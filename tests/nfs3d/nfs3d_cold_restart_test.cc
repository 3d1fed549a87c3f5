// nfs3d's file handles after a restart with cold caches (RFC 1813 §2.3.3:
// a handle names the same file for as long as the file exists): the
// export is a sub-directory of an ext4 image mounted through a loop
// device, and the image is unmounted and mounted again between two
// servers, so that the kernel knows none of its files any more. It then
// opens a file's handle as a disconnected file, without a path to check
// against the export; the file's parent hint (export.h) finds it again.
//
// Needs root (mount, and CAP_DAC_READ_SEARCH as the server does) and a
// loop device; skipped without them.
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "examples/nfs3d/export.h"
#include "examples/nfs3d/nfs3_server.h"
#include "gtest/gtest.h"
#include "nfs3_prot.h"
#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "tests/nfs3d/nfs3_client.h"

extern char** environ;

namespace rpcrdma::nfs3d {
namespace {

// Runs `argv` (found on PATH) and says whether it exited with 0.
bool RunCommand(std::vector<std::string> argv) {
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) !=
      0) {
    return false;
  }
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

class Nfs3dColdRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount an ext4 image";
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string(test->test_suite_name()) + "-" +
            std::to_string(getpid()) + "-" + test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(Fs());
    const std::filesystem::path image = dir_ / "fs.img";
    std::ofstream(image).close();
    std::filesystem::resize_file(image, 16 << 20);  // sparse
    if (!RunCommand({"mkfs.ext4", "-q", "-F", image.string()})) {
      GTEST_SKIP() << "mkfs.ext4 (e2fsprogs) cannot make an image here";
    }
    if (!RunCommand({"mount", "-o", "loop", image.string(), Fs().string()})) {
      GTEST_SKIP() << "no loop mount here (no loop device, or a sandbox)";
    }
    mounted_ = true;
    std::filesystem::create_directory(Fs() / "export");
    ASSERT_NO_FATAL_FAILURE(Serve());
    client_ = std::make_unique<Nfs3Client>();
    ASSERT_TRUE(client_->Start()) << rdma_oncrpc_error();
    root_ = server_->exported().root_handle();
  }

  void TearDown() override {
    client_.reset();
    Stop();
    if (mounted_) {
      EXPECT_EQ(umount2(Fs().c_str(), 0), 0) << strerror(errno);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The image's root, where it is mounted.
  std::filesystem::path Fs() const { return dir_ / "fs"; }

  // A server of the image's "export" directory, below the file system's
  // root: every file's path is checked.
  void Serve() {
    absl::StatusOr<std::unique_ptr<Export>> exported =
        Export::Open(Fs() / "export");
    ASSERT_TRUE(exported.ok()) << exported.status();
    server_ = std::make_unique<Nfs3Server>(*std::move(exported), ServerLimits{},
                                           ExportOptions{.root_squash = false});
    Nfs3Server::Install(server_.get());
  }

  void Stop() {
    if (server_ == nullptr) return;
    Nfs3Server::Install(nullptr);
    server_.reset();
  }

  // The server stops, the file system is unmounted (the kernel forgets
  // every dentry and inode of it) and mounted again, and a new server
  // serves the same export: a reboot, as far as the file system goes.
  void ColdRestart() {
    Stop();
    ASSERT_EQ(umount2(Fs().c_str(), 0), 0) << strerror(errno);
    mounted_ = false;
    ASSERT_TRUE(RunCommand(
        {"mount", "-o", "loop", (dir_ / "fs.img").string(), Fs().string()}));
    mounted_ = true;
    ASSERT_NO_FATAL_FAILURE(Serve());
  }

  // A handle the server gives for no file: that of `file` (on the server's
  // side) with the parent hint of `hint_dir`.
  FileHandle Forged(const std::filesystem::path& file,
                    const std::filesystem::path& hint_dir) const {
    UniqueFd fd(open(file.c_str(), O_PATH | O_CLOEXEC));
    UniqueFd dir(open(hint_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    FileHandle handle;
    EXPECT_EQ(server_->exported().HandleOf(fd.get(), dir.get(), handle),
              NFS3_OK);
    EXPECT_NE(handle.at(1), 0) << "no hint in the handle";
    return handle;
  }

  nfsstat3 ReadAll(const FileHandle& file, std::string& out) {
    std::vector<uint8_t> data;
    bool eof = false;
    const nfsstat3 status = client_->Read(file, 0, 4096, data, eof);
    out.assign(data.begin(), data.end());
    return status;
  }

  std::filesystem::path dir_;
  bool mounted_ = false;
  std::unique_ptr<Nfs3Server> server_;
  std::unique_ptr<Nfs3Client> client_;
  FileHandle root_;
};

// RFC 1813 §2.3.3: a file's handle stays valid while the file exists,
// whether or not the server's kernel still knows the file.
TEST_F(Nfs3dColdRestartTest, Rfc1813_2_3_3_FileHandlesSurviveAColdRestart) {
  const std::string contents = "written before the restart";
  const std::vector<uint8_t> bytes(contents.begin(), contents.end());
  FileHandle file, dir, inner;
  ASSERT_EQ(client_->Create(root_, "file", UNCHECKED, file), NFS3_OK);
  ASSERT_EQ(client_->Write(file, 0, bytes, FILE_SYNC, nullptr), NFS3_OK);
  ASSERT_EQ(client_->Mkdir(root_, "dir", dir), NFS3_OK);
  ASSERT_EQ(client_->Create(dir, "inner", UNCHECKED, inner), NFS3_OK);
  ASSERT_EQ(client_->Write(inner, 0, bytes, FILE_SYNC, nullptr), NFS3_OK);

  ASSERT_NO_FATAL_FAILURE(ColdRestart());

  // The file in a sub-directory first: its directory is not known either.
  fattr3 attributes{};
  ASSERT_EQ(client_->Getattr(inner, attributes), NFS3_OK);
  EXPECT_EQ(attributes.size, contents.size());
  std::string back;
  ASSERT_EQ(ReadAll(inner, back), NFS3_OK);
  EXPECT_EQ(back, contents);
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);
  EXPECT_EQ(attributes.type, NF3REG);
  ASSERT_EQ(ReadAll(file, back), NFS3_OK);
  EXPECT_EQ(back, contents);
  // Directories and the root, which the kernel reconnects itself.
  EXPECT_EQ(client_->Getattr(dir, attributes), NFS3_OK);
  EXPECT_EQ(attributes.type, NF3DIR);
  EXPECT_EQ(client_->Getattr(root_, attributes), NFS3_OK);
  FileHandle found;
  ASSERT_EQ(client_->Lookup(dir, "inner", found), NFS3_OK);
  EXPECT_EQ(found, inner);
}

// A hostile client's handle of a file outside the export (on the same
// file system), with the parent hint of the export's root or of the
// file's own directory (outside): STALE before and after a cold restart.
TEST_F(Nfs3dColdRestartTest, Rfc1813_2_3_3_ForgedHintsLeadNowhereOutside) {
  std::ofstream(Fs() / "outside") << "secret";
  const FileHandle hint_inside = Forged(Fs() / "outside", Fs() / "export");
  const FileHandle hint_outside = Forged(Fs() / "outside", Fs());
  fattr3 attributes{};
  EXPECT_EQ(client_->Getattr(hint_inside, attributes), NFS3ERR_STALE);
  EXPECT_EQ(client_->Getattr(hint_outside, attributes), NFS3ERR_STALE);

  ASSERT_NO_FATAL_FAILURE(ColdRestart());

  EXPECT_EQ(client_->Getattr(hint_inside, attributes), NFS3ERR_STALE);
  EXPECT_EQ(client_->Getattr(hint_outside, attributes), NFS3ERR_STALE);
  std::string back;
  EXPECT_EQ(ReadAll(hint_inside, back), NFS3ERR_STALE);
}

// A file renamed into another directory keeps its handle while the server
// knows it; after a cold restart its hint names the directory it left,
// so it is STALE (as with nfsd's subtree_check) until LOOKUP finds its
// new name, which connects it again (docs/nfs3d.md).
TEST_F(Nfs3dColdRestartTest, RenamedIntoAnotherDirectoryIsStaleUntilLookedUp) {
  FileHandle a, b, file;
  ASSERT_EQ(client_->Mkdir(root_, "a", a), NFS3_OK);
  ASSERT_EQ(client_->Mkdir(root_, "b", b), NFS3_OK);
  ASSERT_EQ(client_->Create(a, "f", UNCHECKED, file), NFS3_OK);
  ASSERT_EQ(client_->Rename(a, "f", b, "g"), NFS3_OK);
  fattr3 attributes{};
  ASSERT_EQ(client_->Getattr(file, attributes), NFS3_OK);

  ASSERT_NO_FATAL_FAILURE(ColdRestart());

  EXPECT_EQ(client_->Getattr(file, attributes), NFS3ERR_STALE);
  FileHandle found;
  ASSERT_EQ(client_->Lookup(b, "g", found), NFS3_OK);
  EXPECT_EQ(client_->Getattr(found, attributes), NFS3_OK);
  EXPECT_EQ(client_->Getattr(file, attributes), NFS3_OK);
}

}  // namespace
}  // namespace rpcrdma::nfs3d
