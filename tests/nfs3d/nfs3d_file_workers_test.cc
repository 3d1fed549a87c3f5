// Where nfs3d's file workers (examples/nfs3d/file_workers.h) run a call's
// file system work, and as whom (RFC 1813 §4.4).
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "examples/nfs3d/credentials.h"
#include "examples/nfs3d/file_workers.h"
#include "gtest/gtest.h"

namespace rpcrdma::nfs3d {
namespace {

// setfsuid(-1) changes nothing and answers the current file system uid.
uid_t CurrentFsUid() { return static_cast<uid_t>(syscall(SYS_setfsuid, -1)); }

std::vector<uint32_t> CurrentGroups() {
  std::vector<gid_t> groups(static_cast<size_t>(getgroups(0, nullptr)));
  groups.resize(static_cast<size_t>(
      getgroups(static_cast<int>(groups.size()), groups.data())));
  return std::vector<uint32_t>(groups.begin(), groups.end());
}

Identity CurrentIdentity() {
  return Identity{CurrentFsUid(),
                  static_cast<uint32_t>(syscall(SYS_setfsgid, -1)),
                  CurrentGroups()};
}

// Whether a thread of this process may act as nobody (not so for
// non-root, nor in a sandbox's user namespace that maps no such uid).
bool CanActAsAnotherUser() {
  bool ok = false;
  std::thread([&ok] {
    const ActingAs nobody(Identity{65534, 65534, {}});
    ok = nobody.ok();
  }).join();
  return ok;
}

struct Where {
  std::thread::id thread;
  uid_t fs_uid = 0;
};

Where RunAs(FileWorkers& workers, const Identity& identity, bool& ran) {
  Where where;
  auto work = [&where] {
    where.thread = std::this_thread::get_id();
    where.fs_uid = CurrentFsUid();
  };
  ran = workers.Run(identity, work);
  return where;
}

// RFC 1813 §4.4: a caller who is the server's own identity (root under
// no_root_squash, for a server run as root) needs no credential change:
// its work runs on the dispatching thread, which is saved the hand-off to
// a worker and back.
TEST(Nfs3dFileWorkersTest, Rfc1813_4_4_TheThreadsOwnIdentityRunsOnIt) {
  FileWorkers workers(2, 2);
  Identity me = CurrentIdentity();
  // The set of groups counts, not their order or repeats.
  std::reverse(me.groups.begin(), me.groups.end());
  if (!me.groups.empty()) me.groups.push_back(me.groups.front());
  bool ran = false;
  const Where where = RunAs(workers, me, ran);
  EXPECT_TRUE(ran);
  EXPECT_EQ(where.thread, std::this_thread::get_id());
  EXPECT_EQ(CredentialChanges(), 0u);
}

// RFC 1813 §4.4: any other identity (another uid, or the same uid with
// other groups) runs on a worker that acts as it, and the calling thread
// keeps its credentials.
TEST(Nfs3dFileWorkersTest, Rfc1813_4_4_AnotherIdentityRunsOnAWorkerAsIt) {
  if (!CanActAsAnotherUser()) {
    GTEST_SKIP() << "no thread here may act as another user (needs "
                    "CAP_SETUID and CAP_SETGID, and uid 65534 mapped)";
  }
  FileWorkers workers(1, 1);
  const Identity me = CurrentIdentity();
  Identity nobody{65534, 65534, {}};
  Identity other_groups = me;
  other_groups.groups.push_back(4321);
  for (const Identity& caller : {nobody, other_groups}) {
    bool ran = false;
    const Where where = RunAs(workers, caller, ran);
    ASSERT_TRUE(ran);
    EXPECT_NE(where.thread, std::this_thread::get_id());
    EXPECT_EQ(where.fs_uid, caller.uid);
  }
  EXPECT_EQ(CredentialChanges(), 0u);
  EXPECT_EQ(CurrentIdentity(), me);
}

}  // namespace
}  // namespace rpcrdma::nfs3d
