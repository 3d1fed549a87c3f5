#include "interop/kernel/nfs3d_guest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rpcrdma::test {
namespace {

// The "key=value" words of a line.
std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> out;
  for (absl::string_view word : absl::StrSplit(line, ' ')) {
    const size_t eq = word.find('=');
    if (eq == absl::string_view::npos) continue;
    out[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
  }
  return out;
}

}  // namespace

bool Nfs3dProcess::Start(const std::string& binary,
                         const std::vector<std::string>& args,
                         std::chrono::seconds wait) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.clear();
    closed_ = false;
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  if (pid_ < 0) {
    close(out[0]);
    return false;
  }
  reader_ = std::thread([this, fd = out[0]] { Read(fd); });
  std::unique_lock<std::mutex> lock(mu_);
  return printed_.wait_for(lock, wait, [this] {
    if (closed_) return true;
    for (const std::string& l : lines_) {
      if (absl::StartsWith(l, "nfs3d: ready")) return true;
    }
    return false;
  }) && !closed_;
}

void Nfs3dProcess::Read(int fd) {
  std::string pending;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t end;
    while ((end = pending.find('\n')) != std::string::npos) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(pending.substr(0, end));
      pending.erase(0, end + 1);
      printed_.notify_all();
    }
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  printed_.notify_all();
}

void Nfs3dProcess::Reap() {
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (reader_.joinable()) reader_.join();
}

void Nfs3dProcess::Kill() {
  if (pid_ > 0) kill(pid_, SIGKILL);
  Reap();
}

void Nfs3dProcess::Signal(int signal_number) {
  if (pid_ > 0) kill(pid_, signal_number);
}

void Nfs3dProcess::Stop() {
  if (pid_ > 0) kill(pid_, SIGTERM);
  Reap();
}

Nfs3dProcess::~Nfs3dProcess() { Kill(); }

std::map<std::string, uint64_t> Nfs3dProcess::Counters() {
  size_t seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = lines_.size();
  }
  if (pid_ > 0) kill(pid_, SIGUSR1);
  std::unique_lock<std::mutex> lock(mu_);
  std::map<std::string, uint64_t> out;
  printed_.wait_for(lock, std::chrono::seconds(10), [&] {
    for (size_t i = seen; i < lines_.size(); ++i) {
      if (!absl::StartsWith(lines_[i], "nfs3d: counters")) continue;
      for (const auto& [key, value] : Fields(lines_[i])) {
        uint64_t number = 0;
        if (absl::SimpleAtoi(value, &number)) out[key] = number;
      }
      return true;
    }
    return closed_;
  });
  return out;
}

std::vector<std::map<std::string, std::string>> Nfs3dProcess::Settled() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::map<std::string, std::string>> out;
  for (const std::string& l : lines_) {
    if (absl::StartsWith(l, "nfs3d: settled")) out.push_back(Fields(l));
  }
  return out;
}

std::string Nfs3dProcess::Output() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const std::string& l : lines_) absl::StrAppend(&out, l, "\n");
  return out;
}

std::vector<std::string> Nfs3dArgs(const std::string& export_path,
                                   const std::string& address, int port,
                                   int mount_port, bool root_squash) {
  std::vector<std::string> args = {
      "--export",     export_path,
      "--nfs",        absl::StrCat("rdma://", address, ":", port),
      "--mount-port", std::to_string(mount_port),
      "--listen",     address,
      "--client",     address};
  // A std::string of its own: GCC 12 warns (-Warray-bounds, wrongly) about
  // a temporary made from a literal past the short-string buffer here.
  static const std::string kNoRootSquash = "--no-root-squash";
  if (!root_squash) args.push_back(kNoRootSquash);
  return args;
}

bool MountNfs3(const std::string& address, const std::string& export_path,
               const std::string& mount_point, int port, int mount_port,
               const std::string& extra, std::string& error) {
  mkdir(mount_point.c_str(), 0755);
  std::string options = absl::StrCat(
      "vers=3,proto=rdma,port=", port, ",mountproto=tcp,mountport=", mount_port,
      ",nolock,addr=", address, ",mountaddr=", address);
  if (!extra.empty()) absl::StrAppend(&options, ",", extra);
  const std::string source = absl::StrCat(address, ":", export_path);
  if (mount(source.c_str(), mount_point.c_str(), "nfs", 0, options.c_str()) !=
      0) {
    error = absl::StrCat("mount ", source, " ", mount_point, " -o ", options,
                         ": ", strerror(errno));
    return false;
  }
  return true;
}

bool Unmount(const std::string& mount_point) {
  return umount2(mount_point.c_str(), 0) == 0;
}

void DropCaches() {
  sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

std::optional<std::string> RdmaTransportStats(const std::string& mount_point) {
  std::ifstream in("/proc/self/mountstats");
  std::string line;
  bool ours = false;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "device ")) {
      ours = absl::StrContains(
          line, absl::StrCat(" mounted on ", mount_point, " with fstype nfs"));
    }
    if (ours && absl::StrContains(line, "xprt:") &&
        absl::StrContains(line, "rdma")) {
      return line;
    }
  }
  return std::nullopt;
}

std::map<std::string, OpStats> PerOpStats(const std::string& mount_point) {
  std::map<std::string, OpStats> out;
  std::ifstream in("/proc/self/mountstats");
  std::string line;
  bool ours = false;
  bool per_op = false;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "device ")) {
      ours = absl::StrContains(
          line, absl::StrCat(" mounted on ", mount_point, " with fstype nfs"));
      per_op = false;
      continue;
    }
    if (!ours) continue;
    if (absl::StrContains(line, "per-op statistics")) {
      per_op = true;
      continue;
    }
    if (!per_op) continue;
    std::vector<std::string> f = absl::StrSplit(
        absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    if (f.size() < 8 || !absl::EndsWith(f[0], ":")) continue;
    OpStats stats;
    if (absl::SimpleAtoi(f[1], &stats.ops) &&
        absl::SimpleAtoi(f[7], &stats.rtt_ms)) {
      out[f[0].substr(0, f[0].size() - 1)] = stats;
    }
  }
  return out;
}

}  // namespace rpcrdma::test
