// Who an NFS call acts as. Like Linux's nfsd, the server does each call's
// file system work with the caller's identity (RFC 1813 §4.4: the server
// checks permissions itself, from the AUTH_SYS credential, RFC 5531
// Appendix A), after the export's squashing:
// - root_squash (the default): uid 0 acts as anonuid, gid 0 (primary or
//   supplementary) as anongid;
// - all_squash: every caller acts as anonuid/anongid, without groups;
// - AUTH_NONE (and any other flavor) acts as anonuid/anongid.
//
// On Linux the identity is the calling thread's file system uid and gid
// and its supplementary groups, set with the raw system calls: each is
// per thread in the kernel, whereas glibc's setgroups (like setuid)
// changes every thread of the process. Other threads serving other
// callers meanwhile keep their own.
#ifndef RPCRDMA_EXAMPLES_NFS3D_CREDENTIALS_H_
#define RPCRDMA_EXAMPLES_NFS3D_CREDENTIALS_H_

#include <rpc/rpc.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace rpcrdma::nfs3d {

// The export's options that map callers to identities (exports(5)).
struct ExportOptions {
  bool root_squash = true;  // false: no_root_squash
  bool all_squash = false;
  uint32_t anonuid = 65534;
  uint32_t anongid = 65534;
};

struct Identity {
  uint32_t uid = 65534;
  uint32_t gid = 65534;
  std::vector<uint32_t> groups;

  bool operator==(const Identity&) const = default;
};

// The identity the call `q` acts as under `options`.
Identity IdentityOf(const svc_req* q, const ExportOptions& options);

// True when the calling thread's file system calls already act as
// `identity`: the same file system uid and gid, and the same set of
// supplementary groups (order and repeats aside, as the kernel keeps them
// sorted). Such a thread needs no credential change to act as it.
bool AlreadyActsAs(const Identity& identity);

// Makes the calling thread act as `identity` for its file system calls
// until destroyed, then as it did before. ok() is false when the thread
// could not take the identity (the server lacks CAP_SETUID/CAP_SETGID):
// the call must not run then.
class ActingAs {
 public:
  explicit ActingAs(const Identity& identity);
  ~ActingAs();
  ActingAs(const ActingAs&) = delete;
  ActingAs& operator=(const ActingAs&) = delete;

  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
  uid_t saved_uid_;
  gid_t saved_gid_;
  std::vector<gid_t> saved_groups_;
};

// Makes the calling thread act as the server itself until destroyed (the
// file system uid the process runs as, with its capabilities): for what
// the server does on the caller's behalf that no caller may do, such as
// open_by_handle_at, which needs CAP_DAC_READ_SEARCH, and which the kernel
// takes away from a thread whose file system uid is not 0.
class ActingAsServer {
 public:
  ActingAsServer();
  ~ActingAsServer();
  ActingAsServer(const ActingAsServer&) = delete;
  ActingAsServer& operator=(const ActingAsServer&) = delete;

 private:
  uid_t saved_uid_;
};

// How many times the calling thread has changed its credentials (each
// setfsuid, setfsgid or setgroups it made through this file): never, for
// a thread that calls into the transport.
uint64_t CredentialChanges();

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_CREDENTIALS_H_
