// The server side of a two-process benchmark: a fork of the benchmark that
// starts its servers, reports where they listen as one line, and serves
// until the benchmark goes (the kernel kills it when its parent exits, and
// it sees its end of `alive` close). Shared by the benchmarks that measure
// calls the way users make them, client and server in two processes.
#ifndef RPCRDMA_BENCH_API_SERVER_FORK_H_
#define RPCRDMA_BENCH_API_SERVER_FORK_H_

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace rpcrdma::bench {

struct ForkedServer {
  pid_t pid = -1;
  // What the child writes after its first line (read end).
  int report = -1;
  // Open until this process exits; the child may read requests from it.
  int alive = -1;
  // The child's first line: where its servers listen, as it chose to say.
  std::string line;
};

// Forks. The child runs `serve(report, alive)`, which starts the servers,
// writes one line ending in '\n' to `report`, then serves; it should not
// return (it is ended with _exit if it does). The parent waits for the
// line.
inline absl::StatusOr<ForkedServer> ForkServer(void (*serve)(int report,
                                                             int alive)) {
  int report[2], alive[2];
  if (pipe(report) != 0 || pipe(alive) != 0) {
    return absl::InternalError("pipe failed");
  }
  const pid_t child = fork();
  if (child < 0) return absl::InternalError("fork failed");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(report[0]);
    close(alive[1]);
    serve(report[1], alive[0]);
    _exit(0);
  }
  close(report[1]);
  close(alive[0]);
  ForkedServer server;
  server.pid = child;
  server.report = report[0];
  server.alive = alive[1];
  char c;
  while (read(report[0], &c, 1) == 1 && c != '\n') server.line.push_back(c);
  return server;
}

// Why a forked server's line did not name its servers: what it said and,
// when it has ended, how. (Still running, it would wait for this process
// to go, so it is only asked whether it ended.)
inline std::string ServerDidNotStart(const ForkedServer& server) {
  int status = 0;
  const bool ended = waitpid(server.pid, &status, WNOHANG) == server.pid;
  return absl::StrCat(
      "the server process did not start its servers (it reported \"",
      server.line, "\"",
      !ended              ? ""
      : WIFEXITED(status) ? absl::StrCat("; exit status ", WEXITSTATUS(status))
                          : absl::StrCat("; signal ", WTERMSIG(status)),
      ")");
}

// The 1- and 5-minute load averages, for the benchmark's context: every
// figure is to be read knowing whether the machine was idle or loaded.
inline std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string one, five;
  file >> one >> five;
  return absl::StrCat(one, " ", five);
}

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_SERVER_FORK_H_
