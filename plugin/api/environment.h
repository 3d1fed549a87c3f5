// The environment variables through which a program that cannot be edited
// (an rpcgen or Thrift program linked against rpcrdma) turns on logging,
// captures and a configuration file, as gRPC reads GRPC_VERBOSITY and
// GRPC_TRACE. docs/debugging.md ("Without touching code") is their manual.
//
//   RPCRDMA_LOG=LEVEL[,file=PATH]
//       LEVEL: debug, info, warning or error (any case); the records at
//       LEVEL and above are written, to PATH (appended to) when given,
//       else to stderr. The level applies unless the program called
//       SetMinLogSeverity, the file unless it called SetLogSink with a
//       sink of its own. A value not of this form is reported once (a
//       WARNING naming the variable and the accepted form) and the
//       defaults are kept; so is a file that cannot be opened (stderr).
//   RPCRDMA_CAPTURE=PATTERN
//       Each Channel and each Server writes its capture (what
//       TransportConfig.capture_path does: every connection of it, each
//       with its own QP numbers) to PATTERN with %p replaced by the
//       process id, %n by a number counting the Channels and Servers of
//       the process that capture this way (1, 2, ...) and %% by %. A
//       PATTERN without %n gets "-%n" before its ".pcap" extension, or at
//       its end: two Channels never write the same file. Applies unless
//       the configuration sets capture_path. Another % sequence, or a file
//       that cannot be created, fails Create with INVALID_ARGUMENT naming
//       the variable.
//   RPCRDMA_CONFIG=PATH
//       The text-format TransportConfig (rpcrdma/config.h LoadConfigFile)
//       used when the program passed a TransportConfig with no field set.
//       A file that cannot be read or is not valid fails Create with
//       LoadConfigFile's status (code kept; INVALID_ARGUMENT for a wrong
//       file), its message prefixed "RPCRDMA_CONFIG=PATH: " and naming
//       the line: the program does not silently run on defaults the user
//       did not ask for.
//
// The variables are read at every Channel::Create and Server::Create, not
// once per process: a value changed between two Creates applies from the
// second on (an unset RPCRDMA_LOG restores the defaults it replaced).
// getenv is not safe against a concurrent setenv: a program that changes
// its environment while other threads create Channels must order the two
// itself.
#ifndef RPCRDMA_PLUGIN_API_ENVIRONMENT_H_
#define RPCRDMA_PLUGIN_API_ENVIRONMENT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/log.h"

namespace rpcrdma::api_internal {

inline constexpr char kLogVariable[] = "RPCRDMA_LOG";
inline constexpr char kCaptureVariable[] = "RPCRDMA_CAPTURE";
inline constexpr char kConfigVariable[] = "RPCRDMA_CONFIG";

// What Create runs on: the program's `config`, or RPCRDMA_CONFIG's file in
// its place, with RPCRDMA_CAPTURE's file as capture_path; RPCRDMA_LOG is
// applied to the log on the way.
class Environment {
 public:
  static absl::StatusOr<Environment> Read(
      const config::TransportConfig& config);

  const config::TransportConfig& config() const { return config_; }
  // `status` of Create, its capture file named by RPCRDMA_CAPTURE when the
  // capture came from there and could not be created.
  absl::Status Annotate(absl::Status status) const;

 private:
  config::TransportConfig config_;
  std::string capture_pattern_;  // empty: the capture is not the variable's
};

// RPCRDMA_LOG's value, parsed.
struct LogVariable {
  LogSeverity severity = LogSeverity::kWarning;
  std::string file;  // empty: stderr
};
absl::StatusOr<LogVariable> ParseLogVariable(absl::string_view value);

// RPCRDMA_CAPTURE's PATTERN for the `ordinal`-th capture of process `pid`.
absl::StatusOr<std::string> ExpandCapturePattern(absl::string_view pattern,
                                                 int64_t pid, uint64_t ordinal);

// Forgets which RPCRDMA_LOG was applied, for tests that also reset the log
// (log_internal::ResetForTesting): the next Create applies the variable
// afresh.
void ForgetLogVariableForTesting();

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_ENVIRONMENT_H_
