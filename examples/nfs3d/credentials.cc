#include "examples/nfs3d/credentials.h"

#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace rpcrdma::nfs3d {
namespace {

// How often this thread changed its credentials (CredentialChanges).
thread_local uint64_t changes = 0;

// setfsuid and setfsgid answer the previous id and take -1 (never valid)
// to change nothing: that is how to read the current one.
uid_t FsUid() { return static_cast<uid_t>(syscall(SYS_setfsuid, -1)); }
gid_t FsGid() { return static_cast<gid_t>(syscall(SYS_setfsgid, -1)); }

bool SetFsUid(uid_t uid) {
  ++changes;
  syscall(SYS_setfsuid, uid);
  return FsUid() == uid;
}

bool SetFsGid(gid_t gid) {
  ++changes;
  syscall(SYS_setfsgid, gid);
  return FsGid() == gid;
}

// Not glibc's setgroups, which changes the groups of every thread.
bool SetGroups(const std::vector<gid_t>& groups) {
  ++changes;
  return syscall(SYS_setgroups, groups.size(), groups.data()) == 0;
}

std::vector<gid_t> Groups() {
  const int n = getgroups(0, nullptr);
  std::vector<gid_t> groups(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0 && getgroups(n, groups.data()) != n) groups.clear();
  return groups;
}

// The uid the process itself runs as (its threads' file system uid when
// not acting as a caller).
uid_t ServerUid() {
  static const uid_t uid = geteuid();
  return uid;
}

}  // namespace

Identity IdentityOf(const svc_req* q, const ExportOptions& options) {
  Identity anonymous{options.anonuid, options.anongid, {}};
  if (options.all_squash || q == nullptr || q->rq_cred.oa_flavor != AUTH_SYS ||
      q->rq_clntcred == nullptr) {
    return anonymous;
  }
  const auto* sys = static_cast<const authsys_parms*>(q->rq_clntcred);
  Identity id{sys->aup_uid, sys->aup_gid, {}};
  if (sys->aup_gids != nullptr) {
    id.groups.assign(sys->aup_gids, sys->aup_gids + sys->aup_len);
  }
  if (options.root_squash) {
    if (id.uid == 0) id.uid = options.anonuid;
    if (id.gid == 0) id.gid = options.anongid;
    for (uint32_t& g : id.groups) {
      if (g == 0) g = options.anongid;
    }
  }
  return id;
}

bool AlreadyActsAs(const Identity& identity) {
  if (FsUid() != identity.uid || FsGid() != identity.gid) return false;
  std::vector<gid_t> wanted(identity.groups.begin(), identity.groups.end());
  std::vector<gid_t> have = Groups();
  for (std::vector<gid_t>* groups : {&wanted, &have}) {
    std::sort(groups->begin(), groups->end());
    groups->erase(std::unique(groups->begin(), groups->end()), groups->end());
  }
  return wanted == have;
}

ActingAs::ActingAs(const Identity& identity)
    : saved_uid_(FsUid()), saved_gid_(FsGid()), saved_groups_(Groups()) {
  // Groups and gid first: once the file system uid is not 0 the thread
  // still has CAP_SETGID (not a file system capability), but keep the
  // order that needs the least.
  const std::vector<gid_t> groups(identity.groups.begin(),
                                  identity.groups.end());
  ok_ = SetGroups(groups) && SetFsGid(identity.gid) && SetFsUid(identity.uid);
}

ActingAs::~ActingAs() {
  // The uid first: back to 0 it gives the thread its file system
  // capabilities again.
  SetFsUid(saved_uid_);
  SetFsGid(saved_gid_);
  SetGroups(saved_groups_);
}

// A thread that already is the server changes nothing (a thread that never
// acted as a caller keeps its credentials).
ActingAsServer::ActingAsServer() : saved_uid_(FsUid()) {
  if (saved_uid_ != ServerUid()) SetFsUid(ServerUid());
}

ActingAsServer::~ActingAsServer() {
  if (saved_uid_ != ServerUid()) SetFsUid(saved_uid_);
}

uint64_t CredentialChanges() { return changes; }

}  // namespace rpcrdma::nfs3d
