// Runs a shell command for tests that check our output against other
// programs (tshark, rpcrdma-dump).
#ifndef RPCRDMA_TESTS_TESTING_RUN_COMMAND_H_
#define RPCRDMA_TESTS_TESTING_RUN_COMMAND_H_

#include <stdio.h>
#include <sys/wait.h>

#include <string>

namespace rpcrdma::test {

struct CommandResult {
  int exit_status = -1;  // -1 when it could not run or did not exit
  std::string out;       // its standard output
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Single-quotes `s` for the shell (paths here never hold a quote).
inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_RUN_COMMAND_H_
