// The library's side of rpcrdma/log.h: RPCRDMA_LOG formats a record only
// when its severity passes the threshold (one relaxed atomic load
// otherwise), and RPCRDMA_LOG_FATAL logs at kError and aborts, for broken
// internal invariants where going on would hand one buffer to two owners.
//
//   RPCRDMA_LOG(kWarning, connection_id, "lost: ", reason);
#ifndef RPCRDMA_PLUGIN_LOG_LOGGING_H_
#define RPCRDMA_PLUGIN_LOG_LOGGING_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/log.h"

namespace rpcrdma::log_internal {

extern std::atomic<int> min_severity;

inline bool Enabled(LogSeverity severity) {
  return static_cast<int>(severity) >=
         min_severity.load(std::memory_order_relaxed);
}

void Write(LogSeverity severity, const char* file, int line,
           uint64_t connection, absl::string_view message);
[[noreturn]] void WriteAndAbort(const char* file, int line,
                                absl::string_view message);

// A sink appending the lines of MakeStderrLogSink to the file at `path`
// (created if missing), flushed after each record.
absl::StatusOr<std::shared_ptr<LogSink>> OpenFileLogSink(
    const std::string& path);

// What RPCRDMA_LOG asks for (plugin/api/environment.h), applied beneath
// the program's own choices: `sink` (null: stderr) is used while the
// program has installed no sink with SetLogSink, and `severity` (nullopt:
// the default, kWarning) becomes the threshold unless the program has
// called SetMinLogSeverity.
void ApplyEnvironment(std::optional<LogSeverity> severity,
                      std::shared_ptr<LogSink> sink);

// Whether the program has installed a sink of its own (SetLogSink with a
// sink other than null).
bool ProgramSetSink();

// Back to the state of a process that has configured nothing: the
// default sink and threshold, no environment or program choices.
void ResetForTesting();

}  // namespace rpcrdma::log_internal

#define RPCRDMA_LOG(severity, connection, ...)                              \
  do {                                                                      \
    if (::rpcrdma::log_internal::Enabled(::rpcrdma::LogSeverity::severity)) \
      ::rpcrdma::log_internal::Write(::rpcrdma::LogSeverity::severity,      \
                                     __FILE__, __LINE__, (connection),      \
                                     ::absl::StrCat(__VA_ARGS__));          \
  } while (0)

#define RPCRDMA_LOG_FATAL(...)                               \
  ::rpcrdma::log_internal::WriteAndAbort(__FILE__, __LINE__, \
                                         ::absl::StrCat(__VA_ARGS__))

#endif  // RPCRDMA_PLUGIN_LOG_LOGGING_H_
