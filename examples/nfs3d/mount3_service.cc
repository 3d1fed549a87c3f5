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

// `text` as a network: an address and a prefix length (all of it without
// one).
bool ParseNetwork(const std::string& text, int& family, unsigned char* bytes,
                  int& prefix) {
  const size_t slash = text.find('/');
  const std::string address = text.substr(0, slash);
  if (inet_pton(AF_INET, address.c_str(), bytes) == 1) {
    family = AF_INET;
  } else if (inet_pton(AF_INET6, address.c_str(), bytes) == 1) {
    family = AF_INET6;
  } else {
    return false;
  }
  const int bits = family == AF_INET ? 32 : 128;
  prefix = bits;
  if (slash != std::string::npos) {
    const std::string length = text.substr(slash + 1);
    if (length.empty() || length.size() > 3 ||
        length.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    prefix = std::atoi(length.c_str());
    if (prefix > bits) return false;
  }
  return true;
}

bool PrefixMatches(const unsigned char* a, const unsigned char* b, int prefix) {
  const int whole = prefix / 8;
  if (std::memcmp(a, b, static_cast<size_t>(whole)) != 0) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const unsigned char mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

Mount3Service::Mount3Service(const Export& exported, std::string alias,
                             std::vector<std::string> clients)
    : export_(exported),
      alias_(std::move(alias)),
      clients_(std::move(clients)) {
  for (const std::string& client : clients_) {
    Network n;
    if (ParseNetwork(client, n.family, n.address, n.prefix)) {
      networks_.push_back(n);
    }
  }
}

absl::Status Mount3Service::ParseClient(const std::string& client) {
  Network n;
  if (!ParseNetwork(client, n.family, n.address, n.prefix)) {
    return absl::InvalidArgumentError(
        "client " + client + " is no IP address or ADDRESS/PREFIX network");
  }
  return absl::OkStatus();
}

bool Mount3Service::Allows(const struct sockaddr* address) const {
  if (address == nullptr) return false;
  int family = address->sa_family;
  const unsigned char* bytes = nullptr;
  if (family == AF_INET) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(address)->sin_addr);
  } else if (family == AF_INET6) {
    bytes = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
    // An IPv4 caller of an IPv6 socket is the IPv4 address it maps.
    if (IN6_IS_ADDR_V4MAPPED(
            &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr)) {
      family = AF_INET;
      bytes += 12;
    }
  } else {
    return false;
  }
  for (const Network& n : networks_) {
    if (n.family == family && PrefixMatches(n.address, bytes, n.prefix)) {
      return true;
    }
  }
  return false;
}

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
  const netbuf* caller = svc_getrpccaller(q->rq_xprt);
  if (caller == nullptr ||
      !service.Allows(static_cast<const sockaddr*>(caller->buf))) {
    result->fhs_status = MNT3ERR_ACCES;
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
  const Mount3Service& service = Mount3Service::Installed();
  auto* node = static_cast<exportnode*>(calloc(1, sizeof(exportnode)));
  node->ex_dir = rpcrdma::nfs3d::Copy(service.exported().path());
  // The clients it is for, as given (MNT refuses the others).
  groups* tail = &node->ex_groups;
  for (const std::string& client : service.clients()) {
    auto* group = static_cast<groupnode*>(calloc(1, sizeof(groupnode)));
    group->gr_name = rpcrdma::nfs3d::Copy(client);
    *tail = group;
    tail = &group->gr_next;
  }
  *result = node;
  return TRUE;
}

int mount_program_3_freeresult(SVCXPRT*, xdrproc_t free_result,
                               caddr_t result) {
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"
