// MOUNT version 3 (RFC 1813 Appendix I) for the one exported directory:
// MNT gives its root file handle to a client that names it, DUMP and UMNT
// keep the list of who mounted it, EXPORT names it. Served over TCP by
// libtirpc's own transport (the kernel's client makes its MOUNT call over
// TCP or UDP, never over RDMA).
#ifndef RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_
#define RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "examples/nfs3d/export.h"

namespace rpcrdma::nfs3d {

class Mount3Service {
 public:
  // Clients name the export by its path on this machine or by `alias`
  // ("" for none).
  Mount3Service(const Export& exported, std::string alias)
      : export_(exported), alias_(std::move(alias)) {}

  static void Install(Mount3Service* service);
  static Mount3Service& Installed();

  const Export& exported() const { return export_; }
  bool Names(const char* path) const;
  void Mounted(const std::string& host, const std::string& path);
  void Unmounted(const std::string& host, const std::string& path);
  void UnmountedAll(const std::string& host);
  std::set<std::pair<std::string, std::string>> mounts() const;

 private:
  const Export& export_;
  const std::string alias_;
  mutable std::mutex mu_;
  std::set<std::pair<std::string, std::string>> mounts_;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_
