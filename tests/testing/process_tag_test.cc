// The names tests give abstract Unix sockets must stay apart when test
// binaries run in separate PID namespaces over one network namespace, as
// Bazel's sandbox runs them: there both binaries may have the same pid, and a
// name made of the pid alone fails to bind in the second ("Address already in
// use"), which is how a CI run of `bazel test` once failed.
#include "tests/testing/process_tag.h"

#include <errno.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace rpcrdma::test {
namespace {

struct Report {
  int pid = 0;         // kNoNamespace when no PID namespace could be made
  int bind_errno = 0;  // 0 when the bind succeeded
  char tag[32] = {};
};

constexpr int kNoNamespace = -1;

bool BindAbstract(int fd, const std::string& name) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return bind(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0;
}

// Runs in the first process of a fresh PID namespace: binds the name a test
// would, reports, and holds the name until `release` closes.
[[noreturn]] void HoldName(int report_fd, int release_fd) {
  Report report;
  report.pid = static_cast<int>(getpid());
  const std::string tag = ProcessTag();
  std::strncpy(report.tag, tag.c_str(), sizeof report.tag - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (!BindAbstract(fd, "rpcrdma-process-tag-test-" + tag)) {
    report.bind_errno = errno;
  }
  if (write(report_fd, &report, sizeof report) != sizeof report) _exit(2);
  char byte;
  while (read(release_fd, &byte, 1) > 0) {
  }
  _exit(0);
}

// Forks a child that enters a new PID namespace and forks the namespace's
// first process, which runs HoldName. Exactly one report reaches `report_fd`
// either way, so the test never waits for one that will not come. Returns
// the child's pid, or -1.
pid_t StartInOwnPidNamespace(const int (&report)[2], const int (&release)[2]) {
  const pid_t child = fork();
  if (child != 0) return child;
  // Only the test holds the release pipe's write end, so closing it frees
  // every holder.
  close(release[1]);
  close(report[0]);
  const int report_fd = report[1];
  const int release_fd = release[0];
  const pid_t first =
      unshare(CLONE_NEWPID) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0
          ? fork()
          : -1;
  if (first == 0) HoldName(report_fd, release_fd);
  if (first < 0) {
    Report refusal;
    refusal.pid = kNoNamespace;
    _exit(write(report_fd, &refusal, sizeof refusal) == sizeof refusal ? 0 : 2);
  }
  int status = 0;
  if (waitpid(first, &status, 0) != first) _exit(2);
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
}

TEST(ProcessTag, AbstractSocketNamesStayApartAcrossPidNamespaces) {
  int report[2];
  int release[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t children[2];
  for (pid_t& child : children) {
    child = StartInOwnPidNamespace(report, release);
    ASSERT_GE(child, 0);
  }
  close(report[1]);
  close(release[0]);

  Report reports[2];
  int received = 0;
  for (Report& r : reports) {
    if (read(report[0], &r, sizeof r) == sizeof r) ++received;
  }
  close(release[1]);
  int statuses[2];
  for (int i = 0; i < 2; ++i) waitpid(children[i], &statuses[i], 0);
  close(report[0]);
  for (int status : statuses) {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_EQ(received, 2);
  for (const Report& r : reports) {
    if (r.pid == kNoNamespace) {
      GTEST_SKIP() << "this host does not let a test make PID namespaces";
    }
  }

  // The situation: both processes have the same pid in their namespaces.
  EXPECT_EQ(reports[0].pid, 1);
  EXPECT_EQ(reports[1].pid, 1);
  // The tags differ, so both names bound while both were held.
  EXPECT_STRNE(reports[0].tag, reports[1].tag);
  EXPECT_EQ(reports[0].bind_errno, 0) << std::strerror(reports[0].bind_errno);
  EXPECT_EQ(reports[1].bind_errno, 0) << std::strerror(reports[1].bind_errno);
}

}  // namespace
}  // namespace rpcrdma::test
