// rpcrdma-ping and rpcrdma-perf as a user runs them: the server, ping and
// the perf client each in their own process, over soft+tcp on loopback,
// their JSON output checked field by field. The Soft-RoCE VM runs the same
// test over rdma:// (RPCRDMA_TOOLS_TEST_URI, see CMakeLists.txt).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int exit_status = -1;  // -1 when the process did not exit normally
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/ping_perf_test." +
         std::to_string(getpid()) + "." + name;
}

// Runs `argv` to completion, its standard output and error in files.
Result RunTool(const std::vector<std::string>& argv) {
  const std::string out_path = TempPath("out");
  const std::string err_path = TempPath("err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  Result result;
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) !=
      0) {
    ADD_FAILURE() << "cannot start " << argv[0];
    posix_spawn_file_actions_destroy(&actions);
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

// The JSON object on the last line of `text`; fails the test if none.
nlohmann::json LastJsonLine(const std::string& text) {
  std::string last;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  EXPECT_TRUE(j.is_object()) << "no JSON object in: " << text;
  return j.is_object() ? j : nlohmann::json::object();
}

// `rpcrdma-perf server` in its own process.
class ServerProcess {
 public:
  // Starts it on `uri` and reads the URI it prints first.
  explicit ServerProcess(const std::string& uri) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    std::vector<std::string> argv = {RPCRDMA_PERF, "server", uri, "--json"};
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) !=
        0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    out_ = fdopen(pipe_fds[0], "r");
    char line[512];
    if (out_ != nullptr && std::fgets(line, sizeof line, out_) != nullptr) {
      uri_ = line;
      if (!uri_.empty() && uri_.back() == '\n') uri_.pop_back();
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) Stop();
    if (out_ != nullptr) std::fclose(out_);
  }

  const std::string& uri() const { return uri_; }

  // SIGTERM; returns its exit status and the rest of its standard output.
  Result Stop() {
    Result result;
    kill(pid_, SIGTERM);
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, out_)) > 0) {
      result.out.append(buffer, n);
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
    return result;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string uri_;
};

// Shows what a tool printed in the test log: the figures of a run in the
// VM are read there.
void Log(const std::string& what, const Result& result) {
  std::cout << what << " (exit " << result.exit_status << "):\n"
            << result.out << result.err;
}

// A loopback TCP port nothing listens on (bound, then released).
int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(PingPerfTest, HelpExitsZero) {
  for (const char* tool : {RPCRDMA_PING, RPCRDMA_PERF}) {
    Result help = RunTool({tool, "--help"});
    EXPECT_EQ(help.exit_status, 0) << tool;
    EXPECT_THAT(help.out, StartsWith("Usage")) << tool;
  }
}

TEST(PingPerfTest, UsageErrorsExitTwo) {
  Result no_uri = RunTool({RPCRDMA_PING});
  EXPECT_EQ(no_uri.exit_status, 2);
  EXPECT_THAT(no_uri.err, HasSubstr("give exactly one URI"));
  Result bad_option = RunTool(
      {RPCRDMA_PERF, "client", "soft+tcp://127.0.0.1:1", "--inflight", "many"});
  EXPECT_EQ(bad_option.exit_status, 2);
  EXPECT_THAT(bad_option.err, HasSubstr("--inflight"));
  Result no_mode = RunTool({RPCRDMA_PERF, "soft+tcp://127.0.0.1:1"});
  EXPECT_EQ(no_mode.exit_status, 2);
}

// A configuration error is printed once (the tool prints the status; the
// loader does not also log it), with the likely fix.
TEST(PingPerfTest, ConfigErrorIsPrintedOnceWithItsFix) {
  const std::string config = TempPath("typo.textproto");
  {
    std::ofstream out(config);
    out << "credit { max_requests: 32 }\n";
  }
  for (const char* tool : {RPCRDMA_PING, RPCRDMA_PERF}) {
    std::vector<std::string> argv = {tool};
    if (std::string(tool) == RPCRDMA_PERF) argv.push_back("client");
    argv.insert(argv.end(), {"soft+tcp://127.0.0.1:1", "--config", config});
    Result r = RunTool(argv);
    EXPECT_NE(r.exit_status, 0) << tool;
    EXPECT_THAT(r.err, HasSubstr("(did you mean \"credits\"?)")) << tool;
    size_t mentions = 0;
    for (size_t at = r.err.find("no field named"); at != std::string::npos;
         at = r.err.find("no field named", at + 1)) {
      ++mentions;
    }
    EXPECT_EQ(mentions, 1u) << tool << ": " << r.err;
  }
}

TEST(PingPerfTest, NothingListeningFailsWithTheReason) {
  const std::string uri =
      "soft+tcp://127.0.0.1:" + std::to_string(UnusedPort());
  Result ping = RunTool({RPCRDMA_PING, "--count", "1", uri});
  EXPECT_EQ(ping.exit_status, 1);
  EXPECT_THAT(ping.err, HasSubstr("cannot connect to " + uri + ": "));
  EXPECT_THAT(ping.err, HasSubstr("UNAVAILABLE"));
  Result perf = RunTool({RPCRDMA_PERF, "client", uri, "--duration", "1s"});
  EXPECT_EQ(perf.exit_status, 1);
  EXPECT_THAT(perf.err, HasSubstr("cannot connect to " + uri));
}

// A peer that takes the TCP connection and never answers the soft fabric's
// connect request: each tool gives up after its --timeout, not after the
// configuration's 60 s connect timeout.
TEST(PingPerfTest, TimeoutBoundsConnecting) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  ASSERT_EQ(
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string uri =
      "soft+tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const std::vector<std::vector<std::string>> runs = {
      {RPCRDMA_PING, "--count", "1", "--timeout", "1s", uri},
      {RPCRDMA_PERF, "client", uri, "--duration", "1s", "--timeout", "1s"}};
  for (const std::vector<std::string>& argv : runs) {
    const auto start = std::chrono::steady_clock::now();
    Result r = RunTool(argv);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.exit_status, 1) << argv[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("cannot connect to " + uri)) << argv[0];
    EXPECT_THAT(r.err, HasSubstr("no answer within 1000 ms")) << argv[0];
    EXPECT_LT(took, std::chrono::seconds(20)) << argv[0];
  }
  close(listener);
}

TEST(PingPerfTest, ServerOnABusyAddressFailsWithTheReason) {
  ServerProcess first("soft+tcp://127.0.0.1:0");
  ASSERT_THAT(first.uri(), StartsWith("soft+tcp://127.0.0.1:"));
  Result second = RunTool({RPCRDMA_PERF, "server", first.uri()});
  EXPECT_EQ(second.exit_status, 1);
  EXPECT_THAT(second.err, HasSubstr("cannot listen on " + first.uri() + ": "));
  EXPECT_TRUE(second.out.empty()) << "a URI only once it listens";
}

// Where the server listens: a URI whose port is 0.
std::string ListenUri() {
  const char* uri = std::getenv("RPCRDMA_TOOLS_TEST_URI");
  return uri != nullptr ? uri : "soft+tcp://127.0.0.1:0";
}

TEST(PingPerfTest, PingAndPerfAgainstAServerProcess) {
  const std::string listen_uri = ListenUri();
  ServerProcess server(listen_uri);
  // The same URI with the port the server bound in place of 0.
  ASSERT_THAT(server.uri(),
              StartsWith(listen_uri.substr(0, listen_uri.size() - 1)));
  ASSERT_NE(server.uri(), listen_uri);

  Result ping = RunTool({RPCRDMA_PING, "--count", "3", "--interval", "10ms",
                         "--json", server.uri()});
  Log("rpcrdma-ping", ping);
  EXPECT_EQ(ping.exit_status, 0) << ping.err;
  nlohmann::json p = LastJsonLine(ping.out);
  EXPECT_EQ(p.value("sent", -1), 3);
  EXPECT_EQ(p.value("ok", -1), 3);
  EXPECT_EQ(p.value("lost", -1), 0);
  EXPECT_EQ(p["connection"].value("version", 0), 1);
  EXPECT_GE(p["connection"].value("send_threshold", 0), 1024);
  EXPECT_GE(p["connection"].value("receive_threshold", 0), 1024);
  EXPECT_TRUE(p["connection"].value("peer_private_data", false));
  ASSERT_EQ(p["calls"].size(), 3u);
  for (const nlohmann::json& call : p["calls"]) {
    EXPECT_TRUE(call.value("ok", false));
    EXPECT_GT(call.value("rtt_us", 0.0), 0.0);
  }
  EXPECT_GT(p["rtt"].value("p50_us", 0.0), 0.0);

  // ECHO larger than the inline threshold: a read chunk and a write chunk.
  Result echo = RunTool({RPCRDMA_PING, "--count", "2", "--interval", "0s",
                         "--size", "100000", "--json", server.uri()});
  Log("rpcrdma-ping --size 100000", echo);
  EXPECT_EQ(echo.exit_status, 0) << echo.err;
  EXPECT_EQ(LastJsonLine(echo.out).value("ok", -1), 2);

  Result perf = RunTool({RPCRDMA_PERF, "client", server.uri(), "--duration",
                         "1s", "--inflight", "4", "--json"});
  Log("rpcrdma-perf client --inflight 4", perf);
  EXPECT_EQ(perf.exit_status, 0) << perf.err;
  nlohmann::json null_calls = LastJsonLine(perf.out);
  EXPECT_GT(null_calls.value("calls", 0), 0);
  EXPECT_EQ(null_calls.value("errors", -1), 0);
  EXPECT_GT(null_calls.value("calls_per_second", 0.0), 0.0);
  EXPECT_GT(null_calls["latency"].value("p99_us", 0.0), 0.0);
  EXPECT_EQ(null_calls["connection"].value("version", 0), 1);
  EXPECT_TRUE(perf.err.empty()) << "--json implies no progress lines";

  // The synchronous path: a thread per connection in BlockingCall, here
  // polling instead of sleeping (execution.busy_poll_us).
  const std::string spin_config = ::testing::TempDir() + "/busy_poll.textproto";
  {
    std::ofstream out(spin_config);
    out << "execution { busy_poll_us: 100 }\n";
  }
  Result blocking =
      RunTool({RPCRDMA_PERF, "client", server.uri(), "--duration", "500ms",
               "--blocking", "--config", spin_config, "--json"});
  Log("rpcrdma-perf client --blocking", blocking);
  EXPECT_EQ(blocking.exit_status, 0) << blocking.err;
  nlohmann::json blocking_calls = LastJsonLine(blocking.out);
  EXPECT_GT(blocking_calls.value("calls", 0), 0);
  EXPECT_EQ(blocking_calls.value("errors", -1), 0);
  EXPECT_TRUE(blocking_calls.value("blocking", false));
  Result refused = RunTool(
      {RPCRDMA_PERF, "client", server.uri(), "--blocking", "--inflight", "2"});
  EXPECT_EQ(refused.exit_status, 2) << refused.err;
  EXPECT_NE(refused.err.find("--inflight must be 1"), std::string::npos)
      << refused.err;

  Result bulk = RunTool({RPCRDMA_PERF, "client", server.uri(), "--duration",
                         "1s", "--connections", "2", "--inflight", "2",
                         "--size", "65536", "--json"});
  Log("rpcrdma-perf client --size 65536", bulk);
  EXPECT_EQ(bulk.exit_status, 0) << bulk.err;
  nlohmann::json bulk_calls = LastJsonLine(bulk.out);
  EXPECT_GT(bulk_calls.value("calls", 0), 0);
  EXPECT_EQ(bulk_calls.value("errors", -1), 0);
  EXPECT_GT(bulk_calls.value("gigabytes_per_second_each_way", 0.0), 0.0);
  EXPECT_GT(bulk_calls["counters"].value("read_chunk_calls", 0), 0);
  EXPECT_GT(bulk_calls["counters"].value("write_chunks", 0), 0);

  Result stopped = server.Stop();
  Log("rpcrdma-perf server", stopped);
  EXPECT_EQ(stopped.exit_status, 0);
  nlohmann::json served = LastJsonLine(stopped.out);
  EXPECT_GE(served["counters"].value("calls", 0),
            5 + null_calls.value("calls", 0) + bulk_calls.value("calls", 0));
}

}  // namespace
