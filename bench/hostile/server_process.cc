#include "bench/hostile/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace rpcrdma::bench::hostile {

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& program, const std::vector<std::string>& args) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // What the attacks make the server log would bury the table.
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  std::vector<std::string> words = {program};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  const int spawned = posix_spawn(&server->pid_, program.c_str(), &actions,
                                  nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  server->stdin_fd_ = in[1];
  if (spawned != 0) {
    close(out[0]);
    server->pid_ = -1;
    return absl::NotFoundError(
        absl::StrCat("cannot start ", program,
                     ": build the hostile_figures_server target beside "
                     "hostile_figures"));
  }
  // The URI, on the first line the server prints.
  std::string line;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buffer[256];
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  if (line.find('\n') == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat(program, " printed no URI within 30 s"));
  }
  server->uri_ = line.substr(0, line.find('\n'));
  return server;
}

ServerProcess::~ServerProcess() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (pid_ < 0 || exited_) return;
  // A server that does not stop within 10 s is ended.
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

bool ServerProcess::Alive() {
  if (exited_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

uint64_t ServerProcess::StatusKib(const std::string& field) const {
  std::ifstream status(absl::StrCat("/proc/", pid_, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest(line);
    if (!absl::ConsumePrefix(&rest, field)) continue;
    std::istringstream value{std::string(rest)};
    uint64_t kib = 0;
    value >> kib;
    return kib;
  }
  return 0;
}

uint64_t ServerProcess::Resident() const { return StatusKib("VmRSS:") * 1024; }

uint64_t ServerProcess::PeakResident() const {
  return StatusKib("VmHWM:") * 1024;
}

bool ServerProcess::ResetPeak() const {
  const int fd = open(absl::StrCat("/proc/", pid_, "/clear_refs").c_str(),
                      O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

}  // namespace rpcrdma::bench::hostile
