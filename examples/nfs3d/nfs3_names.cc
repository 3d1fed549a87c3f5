// The procedures on names in a directory: LOOKUP, READLINK, CREATE, MKDIR,
// SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "examples/nfs3d/attributes.h"
#include "examples/nfs3d/nfs3_server.h"

namespace rpcrdma::nfs3d {
namespace {

// RFC 1813 §3.3.8: an EXCLUSIVE CREATE's verifier, kept in the new file's
// times as Linux's nfsd keeps it (atime and mtime seconds), until the
// client's SETATTR that follows sets real ones.
struct timespec VerifierTimes(const createverf3 verifier, int half) {
  uint32_t word;
  std::memcpy(&word, verifier + 4 * half, 4);
  return {static_cast<time_t>(word), 0};
}

bool HoldsVerifier(const struct stat& st, const createverf3 verifier) {
  return st.st_atim.tv_sec == VerifierTimes(verifier, 0).tv_sec &&
         st.st_mtim.tv_sec == VerifierTimes(verifier, 1).tv_sec;
}

mode_t ModeOr(const sattr3& attributes, mode_t fallback) {
  return attributes.mode.set_it ? attributes.mode.set_mode3_u.mode & 07777
                                : fallback;
}

// Attributes a CREATE or MKDIR also asks for, beyond the mode the call
// that made the object used (the size of a new file is 0 already).
sattr3 WithoutMode(sattr3 attributes) {
  attributes.mode.set_it = FALSE;
  return attributes;
}

}  // namespace

void Nfs3Server::Describe(int dir, const char* name, post_op_fh3& handle,
                          post_op_attr& attributes) const {
  UniqueFd fd;
  if (export_->OpenChild(dir, name, fd) != NFS3_OK) return;
  FileHandle h;
  if (export_->HandleOf(fd.get(), dir, h) == NFS3_OK) {
    handle.handle_follows = TRUE;
    handle.post_op_fh3_u.handle = AllocatedNfsHandle(h);
  }
  attributes = PostOpAttributes(fd.get(), export_->fsid());
}

bool_t Nfs3Server::Lookup(const LOOKUP3args& a, LOOKUP3res& r) {
  UniqueFd dir;
  r.status = export_->Open(a.what.dir, O_PATH | O_DIRECTORY, dir);
  if (r.status != NFS3_OK) {
    r.LOOKUP3res_u.resfail.dir_attributes = post_op_attr{};
    return TRUE;
  }
  UniqueFd fd;
  FileHandle h;
  r.status = export_->OpenChild(dir.get(), a.what.name, fd);
  if (r.status == NFS3_OK) r.status = export_->HandleOf(fd.get(), dir.get(), h);
  if (r.status != NFS3_OK) {
    r.LOOKUP3res_u.resfail.dir_attributes =
        PostOpAttributes(dir.get(), export_->fsid());
    return TRUE;
  }
  LOOKUP3resok& ok = r.LOOKUP3res_u.resok;
  ok.object = AllocatedNfsHandle(h);
  ok.obj_attributes = PostOpAttributes(fd.get(), export_->fsid());
  ok.dir_attributes = PostOpAttributes(dir.get(), export_->fsid());
  return TRUE;
}

bool_t Nfs3Server::Readlink(const READLINK3args& a, READLINK3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.symlink, O_PATH | O_NOFOLLOW, fd);
  struct stat st {};
  if (r.status == NFS3_OK && fstat(fd.get(), &st) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status == NFS3_OK && !S_ISLNK(st.st_mode)) r.status = NFS3ERR_INVAL;
  char target[PATH_MAX + 1];
  ssize_t n = -1;
  if (r.status == NFS3_OK) {
    n = readlinkat(fd.get(), "", target, PATH_MAX);
    if (n < 0) r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) {
    r.READLINK3res_u.resfail.symlink_attributes =
        PostOpAttributes(fd.get(), export_->fsid());
    return TRUE;
  }
  READLINK3resok& ok = r.READLINK3res_u.resok;
  ok.symlink_attributes = PostOpAttributes(st, export_->fsid());
  ok.data = static_cast<char*>(malloc(static_cast<size_t>(n) + 1));
  std::memcpy(ok.data, target, static_cast<size_t>(n));
  ok.data[n] = '\0';
  return TRUE;
}

template <typename MakeFunction>
Nfs3Server::Made Nfs3Server::MakeIn(const diropargs3& where,
                                    MakeFunction make) {
  Made m;
  UniqueFd dir;
  m.status = export_->Open(where.dir, O_PATH | O_DIRECTORY, dir);
  if (m.status != NFS3_OK) return m;
  const char* name = where.name;
  if (name == nullptr || name[0] == '\0' || std::strcmp(name, ".") == 0 ||
      std::strcmp(name, "..") == 0) {
    m.status = NFS3ERR_EXIST;
  } else if (std::strchr(name, '/') != nullptr) {
    m.status = NFS3ERR_ACCES;
  } else if (std::strlen(name) > NAME_MAX) {
    m.status = NFS3ERR_NAMETOOLONG;
  }
  const std::optional<struct stat> before = StatBefore(dir.get());
  if (m.status == NFS3_OK) m.status = make(dir.get(), name);
  if (m.status == NFS3_OK) Describe(dir.get(), name, m.obj, m.attributes);
  m.dir_wcc = WccOf(before, dir.get(), export_->fsid());
  return m;
}

bool_t Nfs3Server::Create(const CREATE3args& a, CREATE3res& r) {
  const createhow3& how = a.how;
  Made m = MakeIn(a.where, [&](int dir, const char* name) -> nfsstat3 {
    if (how.mode == EXCLUSIVE) {
      UniqueFd fd(
          openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644));
      if (!fd.valid() && errno == EEXIST) {
        // A retransmission finds the file its first instance made.
        struct stat st {};
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && HoldsVerifier(st, how.createhow3_u.verf)) {
          return NFS3_OK;
        }
        return NFS3ERR_EXIST;
      }
      if (!fd.valid()) return StatusOfErrno(errno);
      const struct timespec times[2] = {
          VerifierTimes(how.createhow3_u.verf, 0),
          VerifierTimes(how.createhow3_u.verf, 1)};
      return futimens(fd.get(), times) == 0 ? NFS3_OK : StatusOfErrno(errno);
    }
    const sattr3& attributes = how.createhow3_u.obj_attributes;
    // O_EXCL always: opening an existing name for writing would wait on a
    // FIFO's reader, or open a device. UNCHECKED takes an existing regular
    // file (RFC 1813 §3.3.8) and, as nfsd, answers NFS3ERR_EXIST for any
    // other type, looked at without opening it (O_PATH).
    UniqueFd fd(openat(dir, name,
                       O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
                           O_NOCTTY | O_CLOEXEC,
                       ModeOr(attributes, 0644)));
    if (!fd.valid() && errno == EEXIST && how.mode == UNCHECKED) {
      fd = UniqueFd(openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat st {};
      if (!fd.valid() || fstat(fd.get(), &st) != 0) {
        return StatusOfErrno(errno);
      }
      if (!S_ISREG(st.st_mode)) return NFS3ERR_EXIST;
    }
    if (!fd.valid()) return StatusOfErrno(errno);
    return ApplyAttributes(fd.get(), WithoutMode(attributes));
  });
  r.status = m.status;
  if (m.status != NFS3_OK) {
    r.CREATE3res_u.resfail.dir_wcc = m.dir_wcc;
    return TRUE;
  }
  r.CREATE3res_u.resok = {m.obj, m.attributes, m.dir_wcc};
  return TRUE;
}

bool_t Nfs3Server::Mkdir(const MKDIR3args& a, MKDIR3res& r) {
  Made m = MakeIn(a.where, [&](int dir, const char* name) -> nfsstat3 {
    if (mkdirat(dir, name, ModeOr(a.attributes, 0755)) != 0) {
      return StatusOfErrno(errno);
    }
    UniqueFd fd(openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    return fd.valid() ? ApplyAttributes(fd.get(), WithoutMode(a.attributes))
                      : StatusOfErrno(errno);
  });
  r.status = m.status;
  if (m.status != NFS3_OK) {
    r.MKDIR3res_u.resfail.dir_wcc = m.dir_wcc;
    return TRUE;
  }
  r.MKDIR3res_u.resok = {m.obj, m.attributes, m.dir_wcc};
  return TRUE;
}

bool_t Nfs3Server::Symlink(const SYMLINK3args& a, SYMLINK3res& r) {
  Made m = MakeIn(a.where, [&](int dir, const char* name) -> nfsstat3 {
    const char* target = a.symlink.symlink_data;
    if (target == nullptr) return NFS3ERR_INVAL;
    return symlinkat(target, dir, name) == 0 ? NFS3_OK : StatusOfErrno(errno);
  });
  r.status = m.status;
  if (m.status != NFS3_OK) {
    r.SYMLINK3res_u.resfail.dir_wcc = m.dir_wcc;
    return TRUE;
  }
  r.SYMLINK3res_u.resok = {m.obj, m.attributes, m.dir_wcc};
  return TRUE;
}

bool_t Nfs3Server::Mknod(const MKNOD3args& a, MKNOD3res& r) {
  Made m = MakeIn(a.where, [&](int dir, const char* name) -> nfsstat3 {
    const mknoddata3& what = a.what;
    mode_t type;
    const sattr3* attributes;
    switch (what.type) {
      case NF3CHR:
      case NF3BLK:
        // Never a device node: READ and WRITE of it would be raw I/O on
        // whatever device the client names, below every file permission.
        // nfsd answers an unprivileged or squashed caller so (mknod needs
        // CAP_MKNOD); this server answers every caller so, root included,
        // as an export mounted nodev would have it.
        return NFS3ERR_PERM;
      case NF3SOCK:
      case NF3FIFO:
        type = what.type == NF3SOCK ? S_IFSOCK : S_IFIFO;
        attributes = &what.mknoddata3_u.pipe_attributes;
        break;
      default:
        return NFS3ERR_BADTYPE;
    }
    return mknodat(dir, name, type | ModeOr(*attributes, 0644), 0) == 0
               ? NFS3_OK
               : StatusOfErrno(errno);
  });
  r.status = m.status;
  if (m.status != NFS3_OK) {
    r.MKNOD3res_u.resfail.dir_wcc = m.dir_wcc;
    return TRUE;
  }
  r.MKNOD3res_u.resok = {m.obj, m.attributes, m.dir_wcc};
  return TRUE;
}

bool_t Nfs3Server::Remove(const REMOVE3args& a, REMOVE3res& r) {
  Made m = MakeIn(a.object, [&](int dir, const char* name) -> nfsstat3 {
    return unlinkat(dir, name, 0) == 0 ? NFS3_OK : StatusOfErrno(errno);
  });
  r.status = m.status;
  r.REMOVE3res_u.resok.dir_wcc = m.dir_wcc;  // the same in both arms
  // Describe found nothing to describe: the name is gone.
  return TRUE;
}

bool_t Nfs3Server::Rmdir(const RMDIR3args& a, RMDIR3res& r) {
  Made m = MakeIn(a.object, [&](int dir, const char* name) -> nfsstat3 {
    return unlinkat(dir, name, AT_REMOVEDIR) == 0 ? NFS3_OK
                                                  : StatusOfErrno(errno);
  });
  r.status = m.status;
  r.RMDIR3res_u.resok.dir_wcc = m.dir_wcc;
  return TRUE;
}

bool_t Nfs3Server::Rename(const RENAME3args& a, RENAME3res& r) {
  UniqueFd to;
  r.status = export_->Open(a.to.dir, O_PATH | O_DIRECTORY, to);
  std::optional<struct stat> to_before = StatBefore(to.get());
  Made m;
  if (r.status == NFS3_OK) {
    m = MakeIn(a.from, [&](int dir, const char* name) -> nfsstat3 {
      const char* to_name = a.to.name;
      if (to_name == nullptr || to_name[0] == '\0' ||
          std::strcmp(to_name, ".") == 0 || std::strcmp(to_name, "..") == 0) {
        return NFS3ERR_INVAL;
      }
      if (std::strchr(to_name, '/') != nullptr) return NFS3ERR_ACCES;
      return renameat(dir, name, to.get(), to_name) == 0 ? NFS3_OK
                                                         : StatusOfErrno(errno);
    });
    r.status = m.status;
  }
  RENAME3resok& both = r.RENAME3res_u.resok;  // the same in both arms
  both.fromdir_wcc = m.dir_wcc;
  both.todir_wcc = WccOf(to_before, to.get(), export_->fsid());
  return TRUE;
}

bool_t Nfs3Server::Link(const LINK3args& a, LINK3res& r) {
  UniqueFd file;
  r.status = export_->Open(a.file, O_PATH, file);
  Made m;
  if (r.status == NFS3_OK) {
    m = MakeIn(a.link, [&](int dir, const char* name) -> nfsstat3 {
      struct stat st {};
      if (fstat(file.get(), &st) == 0 && S_ISDIR(st.st_mode)) {
        return NFS3ERR_ISDIR;
      }
      char path[64];
      snprintf(path, sizeof path, "/proc/self/fd/%d", file.get());
      return linkat(AT_FDCWD, path, dir, name, AT_SYMLINK_FOLLOW) == 0
                 ? NFS3_OK
                 : StatusOfErrno(errno);
    });
    r.status = m.status;
  }
  LINK3resok& both = r.LINK3res_u.resok;  // the same in both arms
  both.file_attributes = PostOpAttributes(file.get(), export_->fsid());
  both.linkdir_wcc = m.dir_wcc;
  // What Describe made of the new name: this result has no room for it.
  xdr_free(reinterpret_cast<xdrproc_t>(
               reinterpret_cast<void (*)()>(&xdr_post_op_fh3)),
           &m.obj);
  return TRUE;
}

}  // namespace rpcrdma::nfs3d
