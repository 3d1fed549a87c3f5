// Our responder against a requester nobody here wrote: the Linux kernel's
// NFS client mounts nfs3d (examples/nfs3d) over RPC-over-RDMA inside the
// Soft-RoCE VM, and a workload runs on the mount (ctest kernel.nfs3d,
// labels vm and kernel; one VM boot, --services nfsd3 for the kernel's own
// server beside ours). Every check compares the two ends: what the client
// reads through the mount against the files nfs3d wrote in its export, and
// nfs3d's transport counters against /proc/self/mountstats.
//
// nfs3d serves /srv/nfs3d (a tmpfs this test mounts) on rdma port 20051,
// MOUNT on TCP port 20052; the kernel's nfsd serves /srv/nfs on 20049 with
// rpc.mountd on 20048 (interop/vm/README.md).
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "interop/kernel/guest_util.h"
#include "interop/kernel/nfs3d_guest.h"

namespace rpcrdma::test {
namespace {

constexpr int kPort = 20051;
constexpr int kMountPort = 20052;
constexpr char kOurExport[] = "/srv/nfs3d";
constexpr char kOurMount[] = "/mnt/nfs3d";

std::string Address() {
  const char* a = getenv("RPCRDMA_TEST_ADDR");
  return a != nullptr ? a : "192.0.2.1";
}

std::string Nfs3dBinary() {
  const char* b = getenv("RPCRDMA_NFS3D");
  return b != nullptr ? b : "";
}

std::string OurPath(const std::string& name) {
  return absl::StrCat(kOurExport, "/", name);
}
std::string MountedPath(const std::string& name) {
  return absl::StrCat(kOurMount, "/", name);
}

// Writes `bytes` to `path` through write(2) in pieces of `block`, then
// fsync: through the mount, NFS WRITEs (and a COMMIT) of that size.
bool WriteFile(const std::string& path, const std::vector<uint8_t>& bytes,
               size_t block = 1 << 20, int flags = O_TRUNC) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | flags, 0644);
  if (fd < 0) return false;
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n =
        write(fd, bytes.data() + at, std::min(block, bytes.size() - at));
    if (n <= 0) {
      close(fd);
      return false;
    }
    at += static_cast<size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  return close(fd) == 0 && synced;
}

class Nfs3dMountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mkdir(kOurExport, 0755);
    if (mount("tmpfs", kOurExport, "tmpfs", 0, "mode=0777,size=900m") != 0) {
      std::perror("mount tmpfs");
    }
  }

  void SetUp() override {
    ASSERT_FALSE(Nfs3dBinary().empty()) << "RPCRDMA_NFS3D is not set";
    StartServer({});
    Mount("");
  }
  void TearDown() override {
    Unmount(kOurMount);
    server_.Stop();
    std::printf("%s", server_.Output().c_str());
  }

  // nfs3d with `extra` options, and root squashing or not (Nfs3dArgs).
  void StartServer(std::vector<std::string> extra, bool root_squash = false) {
    std::vector<std::string> args =
        Nfs3dArgs(kOurExport, Address(), kPort, kMountPort, root_squash);
    args.push_back("--threads");
    args.push_back("4");
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(server_.Start(Nfs3dBinary(), args)) << server_.Output();
  }
  void Mount(const std::string& extra) {
    std::string error;
    ASSERT_TRUE(MountNfs3(Address(), kOurExport, kOurMount, kPort, kMountPort,
                          extra, error))
        << error;
  }

  Nfs3dProcess server_;
};

TEST_F(Nfs3dMountTest, FilesFromZeroTo64MiBReadBackEqualOnBothSides) {
  const uint64_t seed = ClockSeed();
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096},
                      size_t{4097}, size_t{65536}, (size_t{1} << 20) + 13,
                      size_t{16} << 20, size_t{64} << 20}) {
    SCOPED_TRACE(size);
    const std::string name = absl::StrCat("file-", size);
    const std::vector<uint8_t> data = RandomBytes(size, seed + size);
    ASSERT_TRUE(WriteFile(MountedPath(name), data));
    // The server's file is what the client wrote...
    ExpectSameSha256(data, OurPath(name));
    // ...and the client reads it back through the server, not its cache.
    DropCaches();
    ExpectSameSha256(data, MountedPath(name));
  }
}

TEST_F(Nfs3dMountTest, AppendTruncateAndModes) {
  std::vector<uint8_t> data = RandomBytes(300000, ClockSeed());
  ASSERT_TRUE(WriteFile(MountedPath("grow"), data));
  const std::vector<uint8_t> more = RandomBytes(5000, 7);
  ASSERT_TRUE(WriteFile(MountedPath("grow"), more, 4096, O_APPEND));
  data.insert(data.end(), more.begin(), more.end());
  ExpectSameSha256(data, OurPath("grow"));
  ASSERT_EQ(truncate(MountedPath("grow").c_str(), 1000), 0);
  data.resize(1000);
  ExpectSameSha256(data, OurPath("grow"));
  ASSERT_EQ(chmod(MountedPath("grow").c_str(), 0640), 0);
  struct stat st {};
  ASSERT_EQ(stat(OurPath("grow").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  DropCaches();
  ASSERT_EQ(stat(MountedPath("grow").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_size, 1000);
}

TEST_F(Nfs3dMountTest, DeepTreesRenamesHardAndSymbolicLinks) {
  std::string deep = kOurMount;
  for (int i = 0; i < 24; ++i) {
    deep += "/level" + std::to_string(i);
    ASSERT_EQ(mkdir(deep.c_str(), 0755), 0) << deep << ": " << strerror(errno);
  }
  const std::vector<uint8_t> data = RandomBytes(70000, 3);
  ASSERT_TRUE(WriteFile(deep + "/leaf", data));
  // Across directories.
  ASSERT_EQ(mkdir(MountedPath("elsewhere").c_str(), 0755), 0);
  ASSERT_EQ(
      rename((deep + "/leaf").c_str(), MountedPath("elsewhere/leaf").c_str()),
      0);
  ExpectSameSha256(data, OurPath("elsewhere/leaf"));
  ASSERT_EQ(
      link(MountedPath("elsewhere/leaf").c_str(), MountedPath("hard").c_str()),
      0);
  struct stat st {};
  ASSERT_EQ(stat(MountedPath("hard").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  ASSERT_EQ(symlink("elsewhere/leaf", MountedPath("soft").c_str()), 0);
  char target[64] = {};
  ASSERT_EQ(readlink(MountedPath("soft").c_str(), target, sizeof target - 1),
            14);
  EXPECT_STREQ(target, "elsewhere/leaf");
  ExpectSameSha256(data, MountedPath("soft"));
  ASSERT_EQ(unlink(MountedPath("hard").c_str()), 0);
  ASSERT_EQ(unlink(MountedPath("soft").c_str()), 0);
  EXPECT_NE(rmdir(MountedPath("elsewhere").c_str()), 0);  // not empty
  EXPECT_EQ(errno, ENOTEMPTY);
  ASSERT_EQ(unlink(MountedPath("elsewhere/leaf").c_str()), 0);
  ASSERT_EQ(rmdir(MountedPath("elsewhere").c_str()), 0);
  EXPECT_NE(access(OurPath("elsewhere").c_str(), F_OK), 0);
}

size_t CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  size_t n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

TEST_F(Nfs3dMountTest, TenThousandEntriesListCompletelyWithAndWithoutPlus) {
  const std::string dir = OurPath("many");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  for (int i = 0; i < 10000; ++i) {
    const int fd = open(absl::StrCat(dir, "/entry-", i).c_str(),
                        O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  EXPECT_EQ(CountEntries(MountedPath("many")), 10002u);  // and . and ..
  Unmount(kOurMount);
  Mount("nordirplus");
  EXPECT_EQ(CountEntries(MountedPath("many")), 10002u);
  const std::map<std::string, uint64_t> c = server_.Counters();
  // Pages beyond the inline threshold came back through reply chunks.
  EXPECT_GT(c.at("reply_chunks"), 0u);
  EXPECT_GT(c.at("long_replies"), 0u);
}

TEST_F(Nfs3dMountTest, ConcurrentWritersAndReaders) {
  constexpr int kWriters = 4, kReaders = 4;
  std::vector<std::vector<uint8_t>> contents;
  for (int i = 0; i < kWriters + kReaders; ++i) {
    contents.push_back(RandomBytes(6u << 20, 100 + i));
  }
  for (int i = 0; i < kReaders; ++i) {
    ASSERT_TRUE(
        WriteFile(OurPath(absl::StrCat("read-", i)), contents[kWriters + i]));
  }
  DropCaches();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      if (!WriteFile(MountedPath(absl::StrCat("write-", i)), contents[i])) {
        ++failures;
      }
    });
  }
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i] {
      if (ReadBytes(MountedPath(absl::StrCat("read-", i))) !=
          contents[kWriters + i]) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kWriters; ++i) {
    ExpectSameSha256(contents[i], OurPath(absl::StrCat("write-", i)));
  }
}

TEST_F(Nfs3dMountTest, DfAndARemountKeepTheData) {
  struct statvfs ours {
  }, mounted{};
  ASSERT_EQ(statvfs(kOurExport, &ours), 0);
  ASSERT_EQ(statvfs(kOurMount, &mounted), 0);  // FSSTAT
  EXPECT_EQ(uint64_t{ours.f_blocks} * ours.f_frsize,
            uint64_t{mounted.f_blocks} * mounted.f_frsize);
  const std::vector<uint8_t> data = RandomBytes(3u << 20, 11);
  ASSERT_TRUE(WriteFile(MountedPath("kept"), data));
  Unmount(kOurMount);
  Mount("");
  ExpectSameSha256(data, MountedPath("kept"));
}

TEST_F(Nfs3dMountTest, CountersOfBothSidesConfirmEveryPath) {
  const std::vector<uint8_t> data = RandomBytes(8u << 20, 5);
  ASSERT_TRUE(WriteFile(MountedPath("paths"), data));
  DropCaches();
  ExpectSameSha256(data, MountedPath("paths"));
  const std::map<std::string, uint64_t> c = server_.Counters();
  // WRITE data by read chunk, READ data into write chunks (RFC 8267 §4).
  EXPECT_GT(c.at("read_chunk_calls"), 0u);
  EXPECT_GT(c.at("write_chunks"), 0u);
  EXPECT_GT(c.at("credits_granted"), 0u);
  const std::optional<std::string> client = RdmaTransportStats(kOurMount);
  ASSERT_TRUE(client.has_value()) << ReadText("/proc/self/mountstats");
  std::printf(
      "nfs3d counters: read_chunk_calls=%llu write_chunks=%llu "
      "reply_chunks=%llu credits_granted=%llu "
      "remote_invalidations=%llu\nclient %s\n",
      static_cast<unsigned long long>(c.at("read_chunk_calls")),
      static_cast<unsigned long long>(c.at("write_chunks")),
      static_cast<unsigned long long>(c.at("reply_chunks")),
      static_cast<unsigned long long>(c.at("credits_granted")),
      static_cast<unsigned long long>(c.at("remote_invalidations")),
      client->c_str());
}

// Runs `checks` in a child process acting as `uid`/`gid` without
// supplementary groups (the kernel client's AUTH_SYS credential for its
// calls): the child's exit status, 0 when every check held, otherwise the
// number of the first that did not.
int AsUser(uid_t uid, gid_t gid, const std::function<int()>& checks) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
      _exit(100);
    }
    _exit(checks());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// An open(2) through the mount that must fail with `error`.
bool Refused(const std::string& path, int flags, int error) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    return false;
  }
  return errno == error;
}

// RFC 1813 §4.4 and exports(5) root_squash, nfs3d's default: through the
// kernel's client, a user reads and writes what the modes give it and
// nothing else, and the client's root is the anonymous user. Each call
// acts as its caller on a file worker of nfs3d's, so this also shows that
// the threads that send the replies over Soft-RoCE keep working.
TEST_F(Nfs3dMountTest, RootSquashAndAUserGetOnlyWhatTheirModesAllow) {
  constexpr uid_t kUser = 1000;
  constexpr gid_t kGroup = 1000;
  // Made on the server's side, as root.
  ASSERT_EQ(mkdir(OurPath("squash").c_str(), 0755), 0);
  ASSERT_TRUE(WriteText(OurPath("squash/root-secret"), "secret"));
  ASSERT_EQ(chmod(OurPath("squash/root-secret").c_str(), 0600), 0);
  ASSERT_TRUE(WriteText(OurPath("squash/root-public"), "public"));
  ASSERT_EQ(chmod(OurPath("squash/root-public").c_str(), 0644), 0);
  ASSERT_TRUE(WriteText(OurPath("squash/user-file"), "mine"));
  ASSERT_EQ(chown(OurPath("squash/user-file").c_str(), kUser, kGroup), 0);
  ASSERT_EQ(chmod(OurPath("squash/user-file").c_str(), 0600), 0);
  ASSERT_EQ(mkdir(OurPath("squash/user-dir").c_str(), 0755), 0);
  ASSERT_EQ(chown(OurPath("squash/user-dir").c_str(), kUser, kGroup), 0);
  ASSERT_EQ(mkdir(OurPath("squash/open").c_str(), 0777), 0);
  ASSERT_EQ(chmod(OurPath("squash/open").c_str(), 0777), 0);
  Unmount(kOurMount);
  server_.Stop();
  StartServer({}, /*root_squash=*/true);
  Mount("");

  const int user = AsUser(kUser, kGroup, [] {
    if (!Refused(MountedPath("squash/root-secret"), O_RDONLY, EACCES)) {
      return 1;
    }
    if (ReadText(MountedPath("squash/root-public")) != "public") return 2;
    if (!Refused(MountedPath("squash/root-public"), O_WRONLY, EACCES)) {
      return 3;
    }
    if (ReadText(MountedPath("squash/user-file")) != "mine") return 4;
    const std::vector<uint8_t> data = {'o', 'u', 'r', 's'};
    if (!WriteFile(MountedPath("squash/user-file"), data)) return 5;
    if (!WriteFile(MountedPath("squash/user-dir/new"), data)) return 6;
    if (!Refused(MountedPath("squash/not-here"), O_WRONLY | O_CREAT, EACCES)) {
      return 7;
    }
    if (unlink(MountedPath("squash/root-public").c_str()) == 0) return 8;
    if (chmod(MountedPath("squash/root-secret").c_str(), 0666) == 0) return 9;
    return 0;
  });
  EXPECT_EQ(user, 0) << "see the checks of uid " << kUser << " for the number";
  // The user's writes are the server's files, and its own.
  EXPECT_EQ(ReadText(OurPath("squash/user-file")), "ours");
  struct stat st {};
  ASSERT_EQ(stat(OurPath("squash/user-dir/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUser);
  EXPECT_EQ(st.st_gid, kGroup);
  // Root's files are as they were.
  EXPECT_EQ(ReadText(OurPath("squash/root-secret")), "secret");
  EXPECT_EQ(ReadText(OurPath("squash/root-public")), "public");
  EXPECT_NE(access(OurPath("squash/not-here").c_str(), F_OK), 0);
  ASSERT_EQ(stat(OurPath("squash/root-secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // The client's root is squashed: not even root's own 0600 file, and
  // what it makes belongs to the anonymous user.
  EXPECT_TRUE(Refused(MountedPath("squash/root-secret"), O_RDONLY, EACCES))
      << strerror(errno);
  ASSERT_TRUE(WriteFile(MountedPath("squash/open/by-root"), {'r'}));
  ASSERT_EQ(stat(OurPath("squash/open/by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_gid, 65534u);
}

TEST_F(Nfs3dMountTest, TheClientReconnectsAcrossAServerRestart) {
  const std::vector<uint8_t> data = RandomBytes(32u << 20, 21);
  std::atomic<bool> written{false};
  std::thread writer(
      [&] { written = WriteFile(MountedPath("through-restart"), data); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server_.Kill();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  StartServer({});
  writer.join();
  EXPECT_TRUE(written.load());
  ExpectSameSha256(data, OurPath("through-restart"));
  DropCaches();
  ExpectSameSha256(data, MountedPath("through-restart"));
}

}  // namespace
}  // namespace rpcrdma::test
