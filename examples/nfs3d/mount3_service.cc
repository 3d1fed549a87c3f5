// MOUNT v3's procedures for rpcgen's dispatcher (mount_program_3, rpcgen
// -M), over Mount3Service.
#include "examples/nfs3d/mount3_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpc/rpc.h>

#include <cstdlib>
#include <cstring>

#include "mount3_prot.h"

namespace rpcrdma::nfs3d {
namespace {

Mount3Service* installed = nullptr;

char* Copy(const std::string& s) {
  char* out = static_cast<char*>(malloc(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// The caller's address as text, for DUMP.
std::string HostOf(svc_req* q) {
  const netbuf* caller = svc_getrpccaller(q->rq_xprt);
  char text[INET6_ADDRSTRLEN] = "unknown";
  if (caller != nullptr && caller->buf != nullptr) {
    const auto* sa = static_cast<const sockaddr*>(caller->buf);
    if (sa->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                text, sizeof text);
    } else if (sa->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                text, sizeof text);
    }
  }
  return text;
}

}  // namespace

void Mount3Service::Install(Mount3Service* service) { installed = service; }
Mount3Service& Mount3Service::Installed() { return *installed; }

bool Mount3Service::Names(const char* path) const {
  if (path == nullptr) return false;
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p == export_.path() || (!alias_.empty() && p == alias_);
}

void Mount3Service::Mounted(const std::string& host, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  mounts_.emplace(host, path);
}

void Mount3Service::Unmounted(const std::string& host,
                              const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  mounts_.erase({host, path});
}

void Mount3Service::UnmountedAll(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = mounts_.begin(); it != mounts_.end();) {
    it = it->first == host ? mounts_.erase(it) : std::next(it);
  }
}

std::set<std::pair<std::string, std::string>> Mount3Service::mounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mounts_;
}

}  // namespace rpcrdma::nfs3d

using rpcrdma::nfs3d::Mount3Service;

extern "C" {

bool_t mountproc3_null_3_svc(void*, void*, struct svc_req*) { return TRUE; }

bool_t mountproc3_mnt_3_svc(dirpath* path, mountres3* result, svc_req* q) {
  Mount3Service& service = Mount3Service::Installed();
  if (!service.Names(*path)) {
    result->fhs_status = MNT3ERR_NOENT;
    return TRUE;
  }
  const rpcrdma::nfs3d::FileHandle& root = service.exported().root_handle();
  result->fhs_status = MNT3_OK;
  mountres3_ok& ok = result->mountres3_u.mountinfo;
  ok.fhandle.fhandle3_len = static_cast<u_int>(root.size());
  ok.fhandle.fhandle3_val = static_cast<char*>(malloc(root.size()));
  std::memcpy(ok.fhandle.fhandle3_val, root.data(), root.size());
  // The flavors the NFS service takes (RFC 2623 §2.7).
  ok.auth_flavors.auth_flavors_len = 2;
  ok.auth_flavors.auth_flavors_val = static_cast<int*>(malloc(2 * sizeof(int)));
  ok.auth_flavors.auth_flavors_val[0] = AUTH_SYS;
  ok.auth_flavors.auth_flavors_val[1] = AUTH_NONE;
  service.Mounted(rpcrdma::nfs3d::HostOf(q), *path);
  return TRUE;
}

bool_t mountproc3_dump_3_svc(void*, mountlist* result, svc_req*) {
  *result = nullptr;
  mountlist* tail = result;
  for (const auto& [host, path] : Mount3Service::Installed().mounts()) {
    auto* body = static_cast<mountbody*>(calloc(1, sizeof(mountbody)));
    body->ml_hostname = rpcrdma::nfs3d::Copy(host);
    body->ml_directory = rpcrdma::nfs3d::Copy(path);
    *tail = body;
    tail = &body->ml_next;
  }
  return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath* path, void*, svc_req* q) {
  Mount3Service::Installed().Unmounted(rpcrdma::nfs3d::HostOf(q), *path);
  return TRUE;
}

bool_t mountproc3_umntall_3_svc(void*, void*, svc_req* q) {
  Mount3Service::Installed().UnmountedAll(rpcrdma::nfs3d::HostOf(q));
  return TRUE;
}

bool_t mountproc3_export_3_svc(void*, exports* result, svc_req*) {
  auto* node = static_cast<exportnode*>(calloc(1, sizeof(exportnode)));
  node->ex_dir =
      rpcrdma::nfs3d::Copy(Mount3Service::Installed().exported().path());
  // Every host may mount it: the group list names "*".
  auto* everyone = static_cast<groupnode*>(calloc(1, sizeof(groupnode)));
  everyone->gr_name = rpcrdma::nfs3d::Copy("*");
  node->ex_groups = everyone;
  *result = node;
  return TRUE;
}

int mount_program_3_freeresult(SVCXPRT*, xdrproc_t free_result,
                               caddr_t result) {
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"
