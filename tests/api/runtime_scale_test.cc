// Ten thousand connections: a Server in one process, ten
// thousand Channels on a two-loop runtime in another, each connection one
// descriptor per side (the soft fabric's owner-driven endpoints), every
// Channel making a call, and resident memory per idle connection reported
// for both sides. Label `soft`.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/api/process_stats.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma {
namespace {

using test::CountEntries;
using test::Maps;
using test::ResidentKib;

using test::ReplyHeader;

// Memory maps per connection and process: its buffers, and on a
// Unix-domain socket the two pages of the cross-memory gates (its own and
// its peer's, soft_cma_gate.h). vm.max_map_count (65530 by default)
// bounds a process's maps, so this bounds the connections a process can
// hold; the test checks the cost does not grow.
constexpr size_t kMapsPerConnection = 3;
#if defined(__SANITIZE_ADDRESS__)
#define RPCRDMA_SCALE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPCRDMA_SCALE_UNDER_ASAN 1
#endif
#endif
#ifdef RPCRDMA_SCALE_UNDER_ASAN
// AddressSanitizer maps shadow memory beside every mapping, which takes a
// process past vm.max_map_count long before ten thousand connections; the
// checks are the same with fewer.
constexpr size_t kConnections = 2000;
#else
constexpr size_t kConnections = 10000;
#endif
// Beyond the connections: the test's own descriptors, the loops', gtest's.
constexpr rlim_t kSlack = 256;

// Why the server's process is no longer running, or "" while it is.
std::string ChildEnd(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, WNOHANG) != child) return "";
  if (WIFSIGNALED(status)) {
    return absl::StrCat("the server's process was killed by signal ",
                        WTERMSIG(status));
  }
  return absl::StrCat("the server's process exited with status ",
                      WEXITSTATUS(status));
}

// Raises the soft descriptor limit as far as the hard one allows; false
// when that is still too few for `needed`.
bool RaiseDescriptorLimit(rlim_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_max >= needed;
}

// The Server's process: serves until its parent closes `control`, then
// writes its connection count and resident memory growth to `report`.
[[noreturn]] void ServeChild(const std::string& uri, int ready, int control,
                             int report) {
  config::TransportConfig config;
  config.mutable_limits()->set_max_connections(kConnections + 16);
  auto runtime = Runtime::Create({.loop_threads = 2});
  if (!runtime.ok()) _exit(2);
  ServerOptions options;
  options.runtime = *runtime;
  const long rss_before = ResidentKib();
  auto server = Server::Create(
      uri, config,
      [](IncomingCall call, Responder responder) {
        (void)responder.Send(HandlerReply(ReplyHeader(call.xid)));
      },
      options);
  if (!server.ok()) _exit(3);
  char byte = 1;
  if (write(ready, &byte, 1) != 1) _exit(4);
  // A byte from the parent: every connection is there, report; the end of
  // the pipe: the parent is done.
  while (true) {
    const ssize_t got = read(control, &byte, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got != 1) break;
    const std::string line = absl::StrCat((*server)->connections(), " ",
                                          ResidentKib() - rss_before, "\n");
    if (write(report, line.data(), line.size()) < 0) _exit(5);
  }
  server->reset();
  _exit(0);
}

TEST(TenThousandConnections, EachWithOneDescriptorPerSide) {
  if (!RaiseDescriptorLimit(kConnections + kSlack)) {
    GTEST_SKIP() << "the descriptor limit cannot be raised to "
                 << kConnections + kSlack;
  }
  // A server that dies must fail the test with a reason, not kill it with
  // SIGPIPE when the report is asked for.
  signal(SIGPIPE, SIG_IGN);
  const std::string uri = absl::StrCat("soft+unix://@rpcrdma-scale-",
                                       ::rpcrdma::test::ProcessTag());
  int ready[2], control[2], report[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(control), 0);
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    close(control[1]);
    close(report[0]);
    ServeChild(uri, ready[1], control[0], report[1]);
  }
  close(ready[1]);
  close(control[0]);
  close(report[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the server did not start";

  auto runtime = Runtime::Create({.loop_threads = 2});
  ASSERT_TRUE(runtime.ok());
  ChannelOptions options;
  options.runtime = *runtime;
  const size_t threads_before = CountEntries("/proc/self/task");
  const size_t fds_before = CountEntries("/proc/self/fd");
  const long rss_before = ResidentKib();
  const size_t maps_before = Maps();
  std::vector<std::unique_ptr<Channel>> channels;
  channels.reserve(kConnections);
  for (size_t i = 0; i < kConnections; ++i) {
    auto c = Channel::Create(uri, {}, options);
    ASSERT_TRUE(c.ok()) << "channel " << i << ": " << c.status();
    channels.push_back(*std::move(c));
  }
  const long rss_idle = ResidentKib();
  EXPECT_LE(Maps(), maps_before + kMapsPerConnection * kConnections);
  // One descriptor per connection (and one for the server's process, the
  // pidfd its connections' cross-memory path shares), no thread.
  EXPECT_LE(CountEntries("/proc/self/fd"), fds_before + kConnections + 1);
  EXPECT_EQ(CountEntries("/proc/self/task"), threads_before);
  EXPECT_EQ((*runtime)->sources(), 2 * kConnections);

  // A call on every connection, all in flight at once.
  std::atomic<size_t> ok{0};
  std::atomic<size_t> done{0};
  std::promise<void> all;
  std::mutex failure_mu;
  std::string first_failure;
  for (size_t i = 0; i < kConnections; ++i) {
    CallRequest req;
    req.xdr = test::MinimalCallStream(static_cast<uint32_t>(i + 1));
    req.max_reply_size = 64;
    channels[i]->Call(std::move(req), [&](absl::StatusOr<Reply> r) {
      if (r.ok()) {
        ++ok;
      } else {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (first_failure.empty()) first_failure = r.status().ToString();
      }
      if (++done == kConnections) all.set_value();
    });
  }
  ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(60)),
            std::future_status::ready)
      << done.load() << " of " << kConnections << " calls completed";
  {
    std::lock_guard<std::mutex> lock(failure_mu);
    ASSERT_EQ(ok.load(), kConnections)
        << "first failure: " << first_failure << "; " << ChildEnd(child);
  }

  byte = 1;
  ASSERT_EQ(write(control[1], &byte, 1), 1);  // the child reports
  char line[128] = {};
  ASSERT_GT(read(report[0], line, sizeof line - 1), 0) << ChildEnd(child);
  size_t server_connections = 0;
  long server_rss_kib = 0;
  ASSERT_EQ(std::sscanf(line, "%zu %ld", &server_connections, &server_rss_kib),
            2);
  EXPECT_EQ(server_connections, kConnections);
  std::printf(
      "%zu connections: resident memory per idle connection %.1f KiB "
      "(Channel side) + %.1f KiB (Server side)\n",
      kConnections, static_cast<double>(rss_idle - rss_before) / kConnections,
      static_cast<double>(server_rss_kib) / kConnections);
  channels.clear();
  close(control[1]);  // the child ends
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  close(ready[0]);
  close(report[0]);
}

}  // namespace
}  // namespace rpcrdma
