// What the kernel-client tests of nfs3d (nfs3d_kernel_test.cc) do inside
// the Soft-RoCE VM, as root: run nfs3d as a child process and read what it
// prints, and mount it with the kernel's NFS client over RDMA.
#ifndef RPCRDMA_INTEROP_KERNEL_NFS3D_GUEST_H_
#define RPCRDMA_INTEROP_KERNEL_NFS3D_GUEST_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rpcrdma::test {

// nfs3d running as a child of the test.
class Nfs3dProcess {
 public:
  // Starts `binary` with `args` and waits for its "nfs3d: ready" line
  // (false after `wait`, or when it exits first).
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             std::chrono::seconds wait = std::chrono::seconds(30));
  Nfs3dProcess() = default;
  Nfs3dProcess(const Nfs3dProcess&) = delete;
  Nfs3dProcess& operator=(const Nfs3dProcess&) = delete;
  ~Nfs3dProcess();

  // SIGKILL (a crash) or SIGTERM (it prints its counters, then exits);
  // waits for the exit.
  void Kill();
  void Stop();
  void Signal(int signal_number);
  // Asks for its counters (SIGUSR1) and returns the fields of the next
  // "nfs3d: counters" line.
  std::map<std::string, uint64_t> Counters();
  // The fields of every "nfs3d: settled" line printed so far.
  std::vector<std::map<std::string, std::string>> Settled();
  // Everything it printed so far.
  std::string Output();

 private:
  void Read(int fd);
  void Reap();

  pid_t pid_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable printed_;
  std::vector<std::string> lines_;
  bool closed_ = false;
};

// nfs3d's arguments to serve `export_path` to the guest's own client,
// which calls from `address`: NFS on rdma://`address`:`port`, MOUNT on
// TCP `mount_port` at `address` (not the loopback default) for clients
// of `address` alone. Without `root_squash` the guest's root works on the
// export as root (modes, owners).
std::vector<std::string> Nfs3dArgs(const std::string& export_path,
                                   const std::string& address, int port,
                                   int mount_port, bool root_squash);

// mount(2) of an NFSv3 export over RDMA, the way mount.nfs asks the
// kernel (text options; the kernel makes the MOUNT call itself):
// "vers=3,proto=rdma,port=P,mountproto=tcp,mountport=M,nolock,addr=A,
// mountaddr=A" plus `extra` ("nordirplus"...). Creates the mount point.
bool MountNfs3(const std::string& address, const std::string& export_path,
               const std::string& mount_point, int port, int mount_port,
               const std::string& extra, std::string& error);
bool Unmount(const std::string& mount_point);
// Drops the guest's page cache, so that reads go to the server.
void DropCaches();
// The "xprt: rdma ..." line of /proc/self/mountstats for `mount_point`.
std::optional<std::string> RdmaTransportStats(const std::string& mount_point);
// The client's per-procedure statistics of `mount_point` from
// /proc/self/mountstats ("GETATTR: ops trans timeouts bytes_sent
// bytes_recv queue_ms rtt_ms execute_ms ..."): calls and the summed round
// trip, in milliseconds, by procedure name.
struct OpStats {
  uint64_t ops = 0;
  uint64_t rtt_ms = 0;
};
std::map<std::string, OpStats> PerOpStats(const std::string& mount_point);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_KERNEL_NFS3D_GUEST_H_
