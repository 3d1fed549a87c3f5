#include "rpcrdma/log.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace {

class StderrLogSink : public LogSink {
 public:
  void Write(const LogRecord& record) override {
    const auto since_epoch = record.time.time_since_epoch();
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
        since_epoch - seconds);
    const std::time_t t = static_cast<std::time_t>(seconds.count());
    std::tm utc;
    gmtime_r(&t, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    std::string line = absl::StrFormat(
        "%s.%06dZ %s %s:%d ", stamp, static_cast<int>(micros.count()),
        LogSeverityName(record.severity), record.file, record.line);
    if (record.connection != 0) {
      absl::StrAppendFormat(&line, "[conn %d] ", record.connection);
    }
    absl::StrAppend(&line, record.message, "\n");
    // One fwrite per record: lines from several threads do not interleave.
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
};

struct SinkSlot {
  std::mutex mu;
  std::shared_ptr<LogSink> sink;  // null: the default
};

SinkSlot& Slot() {
  static SinkSlot* slot = new SinkSlot;  // never destroyed: logs at exit work
  return *slot;
}

std::shared_ptr<LogSink> DefaultSink() {
  static std::shared_ptr<LogSink>* sink =
      new std::shared_ptr<LogSink>(MakeStderrLogSink());
  return *sink;
}

absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

absl::string_view LogSeverityName(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kDebug:
      return "DEBUG";
    case LogSeverity::kInfo:
      return "INFO";
    case LogSeverity::kWarning:
      return "WARNING";
    case LogSeverity::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::shared_ptr<LogSink> MakeStderrLogSink() {
  return std::make_shared<StderrLogSink>();
}

std::shared_ptr<LogSink> SetLogSink(std::shared_ptr<LogSink> sink) {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  std::shared_ptr<LogSink> previous = std::move(slot.sink);
  slot.sink = std::move(sink);
  return previous != nullptr ? previous : DefaultSink();
}

void SetMinLogSeverity(LogSeverity severity) {
  log_internal::min_severity.store(static_cast<int>(severity),
                                   std::memory_order_relaxed);
}

LogSeverity MinLogSeverity() {
  return static_cast<LogSeverity>(
      log_internal::min_severity.load(std::memory_order_relaxed));
}

namespace log_internal {

std::atomic<int> min_severity{static_cast<int>(LogSeverity::kWarning)};

void Write(LogSeverity severity, const char* file, int line,
           uint64_t connection, absl::string_view message) {
  std::shared_ptr<LogSink> sink;
  {
    SinkSlot& slot = Slot();
    std::lock_guard<std::mutex> lock(slot.mu);
    sink = slot.sink;
  }
  if (sink == nullptr) sink = DefaultSink();
  LogRecord record;
  record.severity = severity;
  record.time = std::chrono::system_clock::now();
  record.message = message;
  record.file = BaseName(file);
  record.line = line;
  record.connection = connection;
  // Outside the lock: a slow sink does not hold up SetLogSink or other
  // threads' records.
  sink->Write(record);
}

void WriteAndAbort(const char* file, int line, absl::string_view message) {
  Write(LogSeverity::kError, file, line, 0, message);
  std::abort();
}

}  // namespace log_internal
}  // namespace rpcrdma
