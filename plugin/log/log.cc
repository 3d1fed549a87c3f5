#include "rpcrdma/log.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace {

// One line per record, in the format rpcrdma/log.h shows.
std::string FormatLine(const LogRecord& record) {
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
  if (record.connection != ConnectionId()) {
    absl::StrAppendFormat(&line, "[conn %d] ", record.connection);
  }
  absl::StrAppend(&line, record.message, "\n");
  return line;
}

// Writes to `file`, which it closes when it owns it (not stderr).
class FileLogSink : public LogSink {
 public:
  FileLogSink(std::FILE* file, bool owned) : file_(file), owned_(owned) {}
  ~FileLogSink() override {
    if (owned_) std::fclose(file_);
  }
  void Write(const LogRecord& record) override {
    const std::string line = FormatLine(record);
    // One fwrite per record: lines from several threads do not interleave.
    std::fwrite(line.data(), 1, line.size(), file_);
    // A log file is read while the process runs (tail -f) or after it
    // crashed: each record reaches the file at once.
    if (owned_) std::fflush(file_);
  }

 private:
  std::FILE* const file_;
  const bool owned_;
};

struct SinkSlot {
  std::mutex mu;
  std::shared_ptr<LogSink> sink;  // null: the environment's, or the default
  // What RPCRDMA_LOG asked for (a file); null: the default.
  std::shared_ptr<LogSink> environment_sink;
  // Whether the program chose the threshold (SetMinLogSeverity): the
  // environment's level then no longer applies.
  bool program_set_severity = false;
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
  return std::make_shared<FileLogSink>(stderr, false);
}

std::shared_ptr<LogSink> SetLogSink(std::shared_ptr<LogSink> sink) {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  std::shared_ptr<LogSink> previous = std::move(slot.sink);
  slot.sink = std::move(sink);
  if (previous == nullptr) previous = slot.environment_sink;
  return previous != nullptr ? previous : DefaultSink();
}

void SetMinLogSeverity(LogSeverity severity) {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.program_set_severity = true;
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
    sink = slot.sink != nullptr ? slot.sink : slot.environment_sink;
  }
  if (sink == nullptr) sink = DefaultSink();
  LogRecord record;
  record.severity = severity;
  record.time = std::chrono::system_clock::now();
  record.message = message;
  record.file = BaseName(file);
  record.line = line;
  record.connection = ConnectionId(connection);
  // Outside the lock: a slow sink does not hold up SetLogSink or other
  // threads' records.
  sink->Write(record);
}

absl::StatusOr<std::shared_ptr<LogSink>> OpenFileLogSink(
    const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrCat(path, ": ", std::strerror(error)));
  }
  return std::shared_ptr<LogSink>(std::make_shared<FileLogSink>(file, true));
}

void ApplyEnvironment(std::optional<LogSeverity> severity,
                      std::shared_ptr<LogSink> sink) {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.environment_sink = std::move(sink);
  if (!slot.program_set_severity) {
    min_severity.store(
        static_cast<int>(severity.value_or(LogSeverity::kWarning)),
        std::memory_order_relaxed);
  }
}

bool ProgramSetSink() {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  return slot.sink != nullptr;
}

void ResetForTesting() {
  SinkSlot& slot = Slot();
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.sink = nullptr;
  slot.environment_sink = nullptr;
  slot.program_set_severity = false;
  min_severity.store(static_cast<int>(LogSeverity::kWarning),
                     std::memory_order_relaxed);
}

void WriteAndAbort(const char* file, int line, absl::string_view message) {
  Write(LogSeverity::kError, file, line, 0, message);
  std::abort();
}

}  // namespace log_internal
}  // namespace rpcrdma
