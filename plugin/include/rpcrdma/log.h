// rpcrdma's log: where the library reports what a caller cannot see in a
// status — connections set up and lost, reconnects and their cause,
// RDMA_ERROR messages sent and received, rejected configurations, and the
// reason for an abort on a broken internal invariant.
//
// Why a sink interface of our own rather than absl/log or glog: the abseil
// this library builds against (Debian 12's, 20220623) predates absl/log,
// and an embedded transport must not take over the process's logging. An
// application forwards the records to whatever it uses (syslog, spdlog,
// absl/log in a newer abseil) with a LogSink of a few lines.
//
// Without code: RPCRDMA_LOG=LEVEL[,file=PATH] (LEVEL debug, info, warning
// or error), read at each Channel::Create and Server::Create, sets the
// threshold unless the program has called SetMinLogSeverity, and appends
// to PATH unless the program has installed a sink with SetLogSink
// (docs/debugging.md, "Without touching code").
//
// Threads: every function here may be called from any thread. Write() may
// run on several threads at once (the loop threads of several Channels and
// Servers) and must not call back into SetLogSink.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_LOG_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_LOG_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"
#include "rpcrdma/ids.h"

namespace rpcrdma {

enum class LogSeverity { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "DEBUG", "INFO", "WARNING", "ERROR".
absl::string_view LogSeverityName(LogSeverity severity);

struct LogRecord {
  LogSeverity severity = LogSeverity::kInfo;
  std::chrono::system_clock::time_point time;
  // Valid only during LogSink::Write.
  absl::string_view message;
  // Where in the library the record was made (file name without folders).
  absl::string_view file;
  int line = 0;
  // The connection the record is about, within the Server or Channel that
  // made the record (rpcrdma/ids.h: a Server's in accept order, a Channel's
  // one more per reconnect); ConnectionId() when it concerns none.
  ConnectionId connection;
};

class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(const LogRecord& record) = 0;
};

// The default sink: one line per record on stderr,
//   2026-11-23T21:30:00.123456Z WARNING channel.cc:123 [conn 2] message
std::shared_ptr<LogSink> MakeStderrLogSink();

// Installs `sink` for every record made from now on; nullptr restores the
// default (stderr, or RPCRDMA_LOG's file). Returns the sink it replaces. A
// record being written while the sink is replaced goes to either one, exactly
// once.
std::shared_ptr<LogSink> SetLogSink(std::shared_ptr<LogSink> sink);

// Records below `severity` are dropped before they are formatted (cheap).
// The default is kWarning (warnings and errors), or RPCRDMA_LOG's level
// until the program calls this.
void SetMinLogSeverity(LogSeverity severity);
LogSeverity MinLogSeverity();

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_LOG_H_
