#include "plugin/api/environment.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "plugin/api/capture_tap.h"
#include "plugin/log/logging.h"
#include "rpcrdma/config.h"

namespace rpcrdma::api_internal {
namespace {

constexpr absl::string_view kLogForm =
    "LEVEL[,file=PATH] with LEVEL one of debug, info, warning, error";

std::optional<std::string> Get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// What RPCRDMA_LOG was last applied with.
struct AppliedLog {
  std::optional<std::string> value;
  bool program_sink = false;

  bool operator==(const AppliedLog&) const = default;
};

// Applies RPCRDMA_LOG when its value (or whether the program has a sink)
// differs from what was last applied, so that a bad value is reported
// once, not at every Create, and a file is opened once. A program with a
// sink of its own never has the file opened.
std::mutex& AppliedLogMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
AppliedLog& Applied() {
  static AppliedLog* applied = new AppliedLog;
  return *applied;
}

void ApplyLogVariable() {
  const AppliedLog now{Get(kLogVariable), log_internal::ProgramSetSink()};
  std::lock_guard<std::mutex> lock(AppliedLogMutex());
  if (now == Applied()) return;
  Applied() = now;
  const std::optional<std::string>& value = now.value;
  if (!value.has_value()) {
    log_internal::ApplyEnvironment(std::nullopt, nullptr);
    return;
  }
  absl::StatusOr<LogVariable> parsed = ParseLogVariable(*value);
  if (!parsed.ok()) {
    log_internal::ApplyEnvironment(std::nullopt, nullptr);
    RPCRDMA_LOG(kWarning, 0, parsed.status().message(),
                "; using the default (warning, stderr)");
    return;
  }
  std::shared_ptr<LogSink> sink;
  absl::Status file_status;
  if (!parsed->file.empty() && !now.program_sink) {
    absl::StatusOr<std::shared_ptr<LogSink>> opened =
        log_internal::OpenFileLogSink(parsed->file);
    if (opened.ok()) {
      sink = *std::move(opened);
    } else {
      file_status = opened.status();
    }
  }
  log_internal::ApplyEnvironment(parsed->severity, std::move(sink));
  if (!file_status.ok()) {
    RPCRDMA_LOG(kWarning, 0, kLogVariable, "=\"", *value,
                "\": cannot open the file: ", file_status.message(),
                "; logging to stderr");
  }
}

absl::StatusOr<config::TransportConfig> ConfigFromFile(
    const std::string& path) {
  absl::StatusOr<config::TransportConfig> loaded = LoadConfigFile(path);
  if (loaded.ok()) return loaded;
  return absl::Status(loaded.status().code(),
                      absl::StrCat(kConfigVariable, "=", path, ": ",
                                   loaded.status().message()));
}

}  // namespace

void ForgetLogVariableForTesting() {
  std::lock_guard<std::mutex> lock(AppliedLogMutex());
  Applied() = AppliedLog();
}

absl::StatusOr<LogVariable> ParseLogVariable(absl::string_view value) {
  absl::string_view level = value;
  absl::string_view rest;
  if (const size_t comma = value.find(','); comma != absl::string_view::npos) {
    level = value.substr(0, comma);
    rest = value.substr(comma + 1);
  }
  LogVariable parsed;
  // The level is a severity's own name (LogSeverityName), in any case.
  bool known = false;
  for (LogSeverity severity : {LogSeverity::kDebug, LogSeverity::kInfo,
                               LogSeverity::kWarning, LogSeverity::kError}) {
    if (absl::EqualsIgnoreCase(level, LogSeverityName(severity))) {
      parsed.severity = severity;
      known = true;
    }
  }
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat(kLogVariable, "=\"", value, "\": unknown level \"", level,
                     "\"; expected ", kLogForm));
  }
  if (value.size() > level.size()) {
    // The path is everything after "file=": it may hold commas.
    if (!absl::ConsumePrefix(&rest, "file=") || rest.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kLogVariable, "=\"", value,
          "\": after the level expected \",file=PATH\"; expected ", kLogForm));
    }
    parsed.file = std::string(rest);
  }
  return parsed;
}

absl::StatusOr<std::string> ExpandCapturePattern(absl::string_view pattern,
                                                 int64_t pid,
                                                 uint64_t ordinal) {
  std::string with_ordinal(pattern);
  bool has_ordinal = false;
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    has_ordinal |= pattern[i + 1] == 'n';
    ++i;  // "%%n" is a literal "%n"
  }
  if (!has_ordinal) {
    absl::string_view stem = pattern;
    const bool pcap = absl::ConsumeSuffix(&stem, ".pcap");
    with_ordinal = absl::StrCat(stem, "-%n", pcap ? ".pcap" : "");
  }
  std::string out;
  for (size_t i = 0; i < with_ordinal.size(); ++i) {
    const char c = with_ordinal[i];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    const char next = i + 1 < with_ordinal.size() ? with_ordinal[i + 1] : '\0';
    ++i;
    if (next == 'p') {
      absl::StrAppend(&out, pid);
    } else if (next == 'n') {
      absl::StrAppend(&out, ordinal);
    } else if (next == '%') {
      out.push_back('%');
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          kCaptureVariable, "=\"", pattern,
          "\": a % must be followed by p (process id), n (capture number) "
          "or % (a %)"));
    }
  }
  return out;
}

absl::StatusOr<Environment> Environment::Read(
    const config::TransportConfig& config) {
  ApplyLogVariable();
  Environment env;
  env.config_ = config;
  // A config with no field set is what a program that configures nothing
  // passes ({} or TransportConfig()); any field set is the program's
  // choice, which the environment does not override.
  if (std::optional<std::string> path = Get(kConfigVariable);
      path.has_value() && !path->empty() && config.ByteSizeLong() == 0) {
    absl::StatusOr<config::TransportConfig> loaded = ConfigFromFile(*path);
    if (!loaded.ok()) {
      RPCRDMA_LOG(kError, 0,
                  "rejected configuration: ", loaded.status().message());
      return loaded.status();
    }
    env.config_ = *std::move(loaded);
  }
  if (std::optional<std::string> pattern = Get(kCaptureVariable);
      pattern.has_value() && !pattern->empty() &&
      env.config_.capture_path().empty()) {
    static std::atomic<uint64_t> captures{0};
    absl::StatusOr<std::string> path =
        ExpandCapturePattern(*pattern, getpid(), captures.fetch_add(1) + 1);
    if (!path.ok()) return path.status();
    env.config_.set_capture_path(*std::move(path));
    env.capture_pattern_ = *std::move(pattern);
  }
  return env;
}

absl::Status Environment::Annotate(absl::Status status) const {
  auto reason = status.GetPayload(kCaptureOpenFailure);
  if (capture_pattern_.empty() || !reason.has_value()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(kCaptureVariable, "=\"", capture_pattern_,
                                   "\": ", std::string(*reason)));
}

}  // namespace rpcrdma::api_internal
