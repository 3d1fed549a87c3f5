// A hostile_figures_server in a process of its own, and its resident size
// as /proc/PID/status gives it (VmRSS now, VmHWM the peak since the last
// ResetPeak).
#ifndef RPCRDMA_BENCH_HOSTILE_SERVER_PROCESS_H_
#define RPCRDMA_BENCH_HOSTILE_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rpcrdma::bench::hostile {

class ServerProcess {
 public:
  // Starts `program` with `args` and waits (at most 30 s) for the URI it
  // prints.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& program, const std::vector<std::string>& args);
  // Closes the server's standard input (it stops serving) and reaps it.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& uri() const { return uri_; }
  // Whether the process still runs (it has not exited or been killed).
  bool Alive();
  // Resident octets now; 0 when unreadable.
  uint64_t Resident() const;
  // The peak resident octets since the last ResetPeak (or the start).
  uint64_t PeakResident() const;
  // Makes the peak the current resident size (/proc/PID/clear_refs "5");
  // false when the kernel does not allow it.
  bool ResetPeak() const;

 private:
  ServerProcess() = default;
  uint64_t StatusKib(const std::string& field) const;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  bool exited_ = false;
  std::string uri_;
};

}  // namespace rpcrdma::bench::hostile

#endif  // RPCRDMA_BENCH_HOSTILE_SERVER_PROCESS_H_
