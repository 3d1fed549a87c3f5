// The command line of the project's tools (rpcrdma-dump, rpcrdma-ping,
// rpcrdma-perf), parsed through Abseil's flag registry and value parsers.
#ifndef RPCRDMA_TOOLS_FLAGS_SET_FLAGS_H_
#define RPCRDMA_TOOLS_FLAGS_SET_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rpcrdma::tools {

// Sets the Abseil flags named in `args` (argv without the program name;
// --name=value, --name value, -name, --noname for booleans; "-h" is
// --help; "--" ends the options) and returns the operands in order.
// INVALID_ARGUMENT for an unknown option or a bad value. Abseil's
// ParseCommandLine is not used: it exits the process with status 1 on a bad
// option and on --help, where the tools document 2 and 0, and so cannot run
// inside a test.
absl::StatusOr<std::vector<std::string>> SetFlags(
    const std::vector<std::string>& args);

}  // namespace rpcrdma::tools

#endif  // RPCRDMA_TOOLS_FLAGS_SET_FLAGS_H_
