// RPCRDMA_LOG, RPCRDMA_CAPTURE and RPCRDMA_CONFIG (plugin/api/environment.h)
// read by Channel::Create and Server::Create over the soft fabric: each
// takes effect when the program chose nothing, gives way to what the
// program chose, and a bad value is reported rather than ignored.
#include "plugin/api/environment.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "plugin/log/logging.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/log.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"

namespace rpcrdma {
namespace {

using api_internal::ExpandCapturePattern;
using api_internal::LogVariable;
using api_internal::ParseLogVariable;

// Sets (or, with nullopt, unsets) one variable for its lifetime, then puts
// back what the process had.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = getenv(name); old != nullptr) old_ = old;
    if (value.has_value()) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class CapturingSink : public LogSink {
 public:
  void Write(const LogRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({record.severity, std::string(record.message)});
  }
  // The lines containing `part`.
  std::vector<std::pair<LogSeverity, std::string>> Matching(
      absl::string_view part) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<LogSeverity, std::string>> out;
    for (const auto& line : lines_) {
      if (absl::StrContains(line.second, part)) out.push_back(line);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<LogSeverity, std::string>> lines_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// pcap-savefile(5): microsecond or nanosecond magic, either byte order.
bool StartsWithPcapMagic(const std::string& bytes) {
  if (bytes.size() < 24) return false;
  const std::string magic = bytes.substr(0, 4);
  for (const char* m : {"\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4",
                        "\x4d\x3c\xb2\xa1", "\xa1\xb2\x3c\x4d"}) {
    if (magic == std::string(m, 4)) return true;
  }
  return false;
}

// Sends what the process writes to stderr to `path` for its lifetime.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    std::FILE* f = std::fopen(path.c_str(), "w");
    dup2(fileno(f), STDERR_FILENO);
    std::fclose(f);
  }
  ~StderrToFile() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_;
};

class EnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_internal::ResetForTesting();
    api_internal::ForgetLogVariableForTesting();
    char dir[] = "/tmp/rpcrdma-env-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    log_internal::ResetForTesting();
    api_internal::ForgetLogVariableForTesting();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string Path(absl::string_view name) const {
    return absl::StrCat(dir_, "/", name);
  }

  // A Server and a Channel over soft+unix with `config`, and one call
  // answered: the connection is up on both sides when it returns.
  void Connect(const config::TransportConfig& config) {
    auto server = Server::Create(
        test::UniqueUnixUri("env"), config, [](IncomingCall call, Responder r) {
          HandlerReply reply;
          reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
          (void)r.Send(std::move(reply));
        });
    ASSERT_TRUE(server.ok()) << server.status();
    auto channel = Channel::Create((*server)->uri(), config);
    ASSERT_TRUE(channel.ok()) << channel.status();
    auto reply = (*channel)->Call(test::NullCall(1));
    ASSERT_EQ(reply.wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    ASSERT_TRUE(reply.get().ok());
    info_ = (*channel)->connection_info();
  }

  // A Server nobody connects to: only its Create matters.
  absl::Status CreateServer(const config::TransportConfig& config = {}) {
    return Server::Create(test::UniqueUnixUri("env-alone"), config,
                          [](IncomingCall, Responder) {})
        .status();
  }

  std::string dir_;
  ConnectionInfo info_;
  ScopedEnv log_{api_internal::kLogVariable, std::nullopt};
  ScopedEnv capture_{api_internal::kCaptureVariable, std::nullopt};
  ScopedEnv config_{api_internal::kConfigVariable, std::nullopt};
};

// RPCRDMA_LOG

TEST(LogVariableTest, ParsesLevelAndFile) {
  absl::StatusOr<LogVariable> v = ParseLogVariable("debug");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->severity, LogSeverity::kDebug);
  EXPECT_EQ(v->file, "");
  v = ParseLogVariable("Warning,file=/var/log/a,b.log");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->severity, LogSeverity::kWarning);
  EXPECT_EQ(v->file, "/var/log/a,b.log");
  for (const char* bad :
       {"", "loud", "info,", "info,file=", "info,/tmp/x", "info:/tmp/x"}) {
    v = ParseLogVariable(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(v.status().message(), "RPCRDMA_LOG"));
    EXPECT_TRUE(
        absl::StrContains(v.status().message(), "debug, info, warning, error"))
        << v.status();
  }
}

TEST_F(EnvironmentTest, LogLevelFromEnvironmentTakesEffect) {
  auto sink = std::make_shared<CapturingSink>();
  SetLogSink(sink);
  Connect({});
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kWarning);
  EXPECT_TRUE(sink->Matching("connection up").empty());
  ScopedEnv level(api_internal::kLogVariable, "info");
  Connect({});
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kInfo);
  auto up = sink->Matching("connection up");
  ASSERT_FALSE(up.empty());
  EXPECT_EQ(up[0].first, LogSeverity::kInfo);
}

TEST_F(EnvironmentTest, DebugRecordAppearsOnlyWithDebug) {
  auto sink = std::make_shared<CapturingSink>();
  SetLogSink(sink);
  EXPECT_TRUE(CreateServer().ok());
  RPCRDMA_LOG(kDebug, 0, "probe one");
  EXPECT_TRUE(sink->Matching("probe one").empty());
  {
    ScopedEnv level(api_internal::kLogVariable, "DEBUG");
    EXPECT_TRUE(CreateServer().ok());
    RPCRDMA_LOG(kDebug, 0, "probe two");
    EXPECT_EQ(sink->Matching("probe two").size(), 1u);
  }
  // Unset again: the next Create restores the default threshold.
  EXPECT_TRUE(CreateServer().ok());
  RPCRDMA_LOG(kDebug, 0, "probe three");
  EXPECT_TRUE(sink->Matching("probe three").empty());
}

TEST_F(EnvironmentTest, LogFileReceivesTheRecords) {
  const std::string file = Path("rpcrdma.log");
  ScopedEnv level(api_internal::kLogVariable, absl::StrCat("info,file=", file));
  Connect({});
  const std::string text = ReadFile(file);
  EXPECT_TRUE(absl::StrContains(text, " INFO ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "connection up")) << text;
}

TEST_F(EnvironmentTest, ProgramSinkAndLevelWinOverTheEnvironment) {
  const std::string env_file = Path("environment.log");
  {
    // Nothing chosen by the program: the environment's level and file.
    ScopedEnv level(api_internal::kLogVariable,
                    absl::StrCat("debug,file=", env_file));
    EXPECT_TRUE(CreateServer().ok());
    EXPECT_EQ(MinLogSeverity(), LogSeverity::kDebug);
    RPCRDMA_LOG(kError, 0, "to the environment's file");
    EXPECT_TRUE(
        absl::StrContains(ReadFile(env_file), "to the environment's file"));
  }
  auto sink = std::make_shared<CapturingSink>();
  SetLogSink(sink);
  SetMinLogSeverity(LogSeverity::kError);
  const std::string file = Path("ignored.log");
  ScopedEnv level(api_internal::kLogVariable,
                  absl::StrCat("debug,file=", file));
  EXPECT_TRUE(CreateServer().ok());
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kError);
  RPCRDMA_LOG(kError, 0, "to the program's sink");
  EXPECT_EQ(sink->Matching("to the program's sink").size(), 1u);
  EXPECT_FALSE(Exists(file));
  EXPECT_FALSE(absl::StrContains(ReadFile(env_file), "to the program's sink"));
}

TEST_F(EnvironmentTest, BadLogValueIsReportedOnceAndDefaultsKept) {
  auto sink = std::make_shared<CapturingSink>();
  SetLogSink(sink);
  ScopedEnv level(api_internal::kLogVariable, "loud");
  EXPECT_TRUE(CreateServer().ok());
  EXPECT_TRUE(CreateServer().ok());
  auto reports = sink->Matching("RPCRDMA_LOG=\"loud\"");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].first, LogSeverity::kWarning);
  EXPECT_TRUE(absl::StrContains(reports[0].second,
                                "LEVEL[,file=PATH] with LEVEL one of debug, "
                                "info, warning, error"))
      << reports[0].second;
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kWarning);
}

TEST_F(EnvironmentTest, UnopenableLogFileIsReportedAndStderrUsed) {
  ScopedEnv level(api_internal::kLogVariable,
                  absl::StrCat("info,file=", Path("no/such/dir.log")));
  const std::string err = Path("stderr");
  {
    StderrToFile redirect(err);
    EXPECT_TRUE(CreateServer().ok());
    EXPECT_TRUE(CreateServer().ok());
  }
  const std::string text = ReadFile(err);
  EXPECT_TRUE(absl::StrContains(text, "WARNING environment.cc:")) << text;
  EXPECT_TRUE(absl::StrContains(
      text, absl::StrCat("RPCRDMA_LOG=\"info,file=", Path("no/such/dir.log"),
                         "\": cannot open the file: ")))
      << text;
  // Reported once; the level still applies, on stderr.
  EXPECT_EQ(text.find("cannot open"), text.rfind("cannot open")) << text;
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kInfo);
}

// RPCRDMA_CAPTURE

TEST(CapturePatternTest, Expands) {
  EXPECT_EQ(*ExpandCapturePattern("/t/c-%p-%n.pcap", 42, 3), "/t/c-42-3.pcap");
  EXPECT_EQ(*ExpandCapturePattern("/t/c.pcap", 42, 3), "/t/c-3.pcap");
  EXPECT_EQ(*ExpandCapturePattern("/t/c", 42, 3), "/t/c-3");
  EXPECT_EQ(*ExpandCapturePattern("/t/100%%-%n", 42, 3), "/t/100%-3");
  EXPECT_EQ(*ExpandCapturePattern("/t/100%%n", 42, 3), "/t/100%n-3");
  for (const char* bad : {"/t/%q", "/t/c%"}) {
    absl::StatusOr<std::string> p = ExpandCapturePattern(bad, 1, 1);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(p.status().message(), "RPCRDMA_CAPTURE"));
  }
}

TEST_F(EnvironmentTest, CaptureWritesOnePcapPerChannelAndServer) {
  ScopedEnv capture(api_internal::kCaptureVariable, Path("cap-%p-%n.pcap"));
  Connect({});
  std::vector<std::string> files;
  for (int n = 1; n <= 8; ++n) {
    const std::string f = Path(absl::StrCat("cap-", getpid(), "-", n, ".pcap"));
    if (Exists(f)) files.push_back(f);
  }
  // The Server's and the Channel's (the numbers count on across the tests
  // of one process, hence the search).
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& f : files) {
    EXPECT_TRUE(StartsWithPcapMagic(ReadFile(f))) << f;
    EXPECT_GT(ReadFile(f).size(), 24u) << f << ": no frame";
  }
}

TEST_F(EnvironmentTest, CaptureGivesWayToTheConfigsCapturePath) {
  ScopedEnv capture(api_internal::kCaptureVariable, Path("env-%n.pcap"));
  auto env_files = [&] {
    int n = 0;
    for (int i = 1; i <= 16; ++i) {
      n += Exists(Path(absl::StrCat("env-", i, ".pcap")));
    }
    return n;
  };
  ASSERT_TRUE(CreateServer().ok());
  EXPECT_EQ(env_files(), 1);
  config::TransportConfig config;
  config.set_capture_path(Path("own.pcap"));
  ASSERT_TRUE(CreateServer(config).ok());
  EXPECT_TRUE(StartsWithPcapMagic(ReadFile(Path("own.pcap"))));
  EXPECT_EQ(env_files(), 1);
}

TEST_F(EnvironmentTest, BadCaptureFailsCreateNamingTheVariable) {
  {
    ScopedEnv capture(api_internal::kCaptureVariable, Path("c-%q.pcap"));
    absl::Status s = CreateServer();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(s.message(), "RPCRDMA_CAPTURE=")) << s;
  }
  ScopedEnv capture(api_internal::kCaptureVariable, Path("no/dir/c.pcap"));
  absl::Status s = CreateServer();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(s.message(), "RPCRDMA_CAPTURE=")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), Path("no/dir/c-"))) << s;
}

// RPCRDMA_CONFIG

TEST_F(EnvironmentTest, ConfigFileAppliesWhenTheProgramPassedNone) {
  const std::string file = Path("tuned.textproto");
  std::ofstream(file) << "inline_threshold {\n  receive: 2048\n}\n";
  ScopedEnv env(api_internal::kConfigVariable, file);
  Connect({});
  EXPECT_EQ(info_.receive_threshold, 2048u);
}

TEST_F(EnvironmentTest, ConfigFileGivesWayToTheProgramsConfig) {
  const std::string file = Path("tuned.textproto");
  std::ofstream(file) << "inline_threshold {\n  receive: 2048\n}\n";
  ScopedEnv env(api_internal::kConfigVariable, file);
  Connect({});
  EXPECT_EQ(info_.receive_threshold, 2048u);
  config::TransportConfig config;
  config.mutable_inline_threshold()->set_receive(3072);
  Connect(config);
  EXPECT_EQ(info_.receive_threshold, 3072u);
}

TEST_F(EnvironmentTest, BrokenConfigFileFailsCreateWithItsLine) {
  const std::string file = Path("broken.textproto");
  std::ofstream(file) << "inline_threshold {\n  recieve: 2048\n}\n";
  ScopedEnv env(api_internal::kConfigVariable, file);
  for (bool channel : {false, true}) {
    absl::Status s =
        channel
            ? Channel::Create(test::UniqueUnixUri("env-broken"), {}).status()
            : CreateServer();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(absl::StartsWith(
        s.message(), absl::StrCat("RPCRDMA_CONFIG=", file, ": ", file, ":2:")))
        << s;
  }
}

TEST_F(EnvironmentTest, MissingConfigFileFailsCreate) {
  ScopedEnv env(api_internal::kConfigVariable, Path("absent.textproto"));
  absl::Status s = CreateServer();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), "RPCRDMA_CONFIG=")) << s;
}

}  // namespace
}  // namespace rpcrdma
