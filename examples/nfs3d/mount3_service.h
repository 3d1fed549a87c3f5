// MOUNT version 3 (RFC 1813 Appendix I) for the one exported directory:
// MNT gives its root file handle to a client that names it, if the
// client is one of those the export is for; DUMP and UMNT keep the list of
// who mounted it; EXPORT names it and the clients it is for. Served over TCP by
// libtirpc's own transport (the kernel's client makes its MOUNT call over
// TCP or UDP, never over RDMA).
#ifndef RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_
#define RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_

#include <sys/socket.h>

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "examples/nfs3d/export.h"

namespace rpcrdma::nfs3d {

class Mount3Service {
 public:
  // Clients name the export by its path on this machine or by `alias`
  // ("" for none). `clients` are the addresses that may mount it: IPv4 or
  // IPv6 addresses, each with an optional /prefix length ("10.0.0.0/8");
  // by default the loopback addresses. An entry that is none of these
  // allows nothing (ParseClient says what is wrong with it).
  Mount3Service(const Export& exported, std::string alias,
                std::vector<std::string> clients = DefaultClients());

  static std::vector<std::string> DefaultClients() {
    return {"127.0.0.1", "::1"};
  }
  // OK when `client` is an address or network the constructor takes.
  static absl::Status ParseClient(const std::string& client);

  static void Install(Mount3Service* service);
  static Mount3Service& Installed();

  const Export& exported() const { return export_; }
  bool Names(const char* path) const;
  // Whether a caller at `address` may mount the export.
  bool Allows(const struct sockaddr* address) const;
  const std::vector<std::string>& clients() const { return clients_; }
  void Mounted(const std::string& host, const std::string& path);
  void Unmounted(const std::string& host, const std::string& path);
  void UnmountedAll(const std::string& host);
  std::set<std::pair<std::string, std::string>> mounts() const;

 private:
  const Export& export_;
  const std::string alias_;
  const std::vector<std::string> clients_;
  struct Network {
    int family = 0;
    unsigned char address[16] = {};
    int prefix = 0;
  };
  std::vector<Network> networks_;
  mutable std::mutex mu_;
  std::set<std::pair<std::string, std::string>> mounts_;
};

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_MOUNT3_SERVICE_H_
