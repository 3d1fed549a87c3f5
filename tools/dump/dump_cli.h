// The rpcrdma-dump command line, as a function so tests can run it without
// a process.
#ifndef RPCRDMA_TOOLS_DUMP_DUMP_CLI_H_
#define RPCRDMA_TOOLS_DUMP_DUMP_CLI_H_

#include <iosfwd>
#include <string>
#include <vector>

namespace rpcrdma::dump {

constexpr int kExitOk = 0;          // the input was read (some messages may
                                    // have been malformed)
constexpr int kExitUnreadable = 1;  // the input could not be read
constexpr int kExitUsage = 2;       // bad command line

// The --help text.
std::string UsageText();

// Runs the tool on `args` (argv without argv[0]). JSON lines go to `out`,
// diagnostics to `err`. `--hex -` reads hex lines from `in`; a capture named
// "-" is read from the process's standard input. The options are Abseil
// flags, process-wide: RunDump sets them from their defaults and `args`,
// so runs must not overlap.
int RunDump(const std::vector<std::string>& args, std::istream& in,
            std::ostream& out, std::ostream& err);

}  // namespace rpcrdma::dump

#endif  // RPCRDMA_TOOLS_DUMP_DUMP_CLI_H_
