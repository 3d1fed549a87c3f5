#include "examples/nfs3d/attributes.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <limits>

namespace rpcrdma::nfs3d {
namespace {

nfstime3 TimeOf(const struct timespec& t) {
  return nfstime3{static_cast<uint32>(t.tv_sec),
                  static_cast<uint32>(t.tv_nsec)};
}

ftype3 TypeOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return NF3DIR;
    case S_IFBLK:
      return NF3BLK;
    case S_IFCHR:
      return NF3CHR;
    case S_IFLNK:
      return NF3LNK;
    case S_IFSOCK:
      return NF3SOCK;
    case S_IFIFO:
      return NF3FIFO;
    default:
      return NF3REG;
  }
}

// fchmodat and friends on an O_PATH descriptor: through /proc, as the
// kernel allows (fchmod itself refuses O_PATH).
void ProcPath(int fd, char (&out)[64]) {
  snprintf(out, sizeof out, "/proc/self/fd/%d", fd);
}

}  // namespace

nfsstat3 StatusOfErrno(int error) {
  switch (error) {
    case 0:
      return NFS3_OK;
    case EPERM:
      return NFS3ERR_PERM;
    case ENOENT:
      return NFS3ERR_NOENT;
    case ENXIO:
      return NFS3ERR_NXIO;
    case EACCES:
      return NFS3ERR_ACCES;
    case EEXIST:
      return NFS3ERR_EXIST;
    case EXDEV:
      return NFS3ERR_XDEV;
    case ENODEV:
      return NFS3ERR_NODEV;
    case ENOTDIR:
      return NFS3ERR_NOTDIR;
    case EISDIR:
      return NFS3ERR_ISDIR;
    case EINVAL:
      return NFS3ERR_INVAL;
    case EFBIG:
      return NFS3ERR_FBIG;
    case ENOSPC:
      return NFS3ERR_NOSPC;
    case EROFS:
      return NFS3ERR_ROFS;
    case EMLINK:
      return NFS3ERR_MLINK;
    case ENAMETOOLONG:
      return NFS3ERR_NAMETOOLONG;
    case ENOTEMPTY:
      return NFS3ERR_NOTEMPTY;
    case EDQUOT:
      return NFS3ERR_DQUOT;
    case ESTALE:
      return NFS3ERR_STALE;
    case ELOOP:
      // A symbolic link where a directory was needed (O_NOFOLLOW).
      return NFS3ERR_NOTDIR;
    case EOPNOTSUPP:
      return NFS3ERR_NOTSUPP;
    default:
      return NFS3ERR_IO;
  }
}

fattr3 AttributesOf(const struct stat& st, uint64_t fsid) {
  fattr3 a{};
  a.type = TypeOf(st.st_mode);
  a.mode = st.st_mode & 07777;
  a.nlink = static_cast<uint32>(st.st_nlink);
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.size = static_cast<uint64>(st.st_size);
  a.used = static_cast<uint64>(st.st_blocks) * 512;
  a.rdev.specdata1 = major(st.st_rdev);
  a.rdev.specdata2 = minor(st.st_rdev);
  a.fsid = fsid;
  a.fileid = st.st_ino;
  a.atime = TimeOf(st.st_atim);
  a.mtime = TimeOf(st.st_mtim);
  a.ctime = TimeOf(st.st_ctim);
  return a;
}

post_op_attr PostOpAttributes(const struct stat& st, uint64_t fsid) {
  post_op_attr p{};
  p.attributes_follow = TRUE;
  p.post_op_attr_u.attributes = AttributesOf(st, fsid);
  return p;
}

post_op_attr PostOpAttributes(int fd, uint64_t fsid) {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) return post_op_attr{};
  return PostOpAttributes(st, fsid);
}

std::optional<struct stat> StatBefore(int fd) {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) return std::nullopt;
  return st;
}

wcc_data WccOf(const std::optional<struct stat>& before, int fd,
               uint64_t fsid) {
  wcc_data w{};
  if (before.has_value()) {
    w.before.attributes_follow = TRUE;
    wcc_attr& a = w.before.pre_op_attr_u.attributes;
    a.size = static_cast<uint64>(before->st_size);
    a.mtime = TimeOf(before->st_mtim);
    a.ctime = TimeOf(before->st_ctim);
  }
  w.after = PostOpAttributes(fd, fsid);
  return w;
}

nfsstat3 ApplyAttributes(int fd, const sattr3& attributes) {
  // RFC 1813 §3.3.2: a size no off_t holds is too large a file (truncate
  // would say EINVAL); checked before anything changes.
  if (attributes.size.set_it &&
      attributes.size.set_size3_u.size >
          static_cast<uint64>(std::numeric_limits<off_t>::max())) {
    return NFS3ERR_FBIG;
  }
  char path[64];
  ProcPath(fd, path);
  if (attributes.mode.set_it &&
      chmod(path, attributes.mode.set_mode3_u.mode & 07777) != 0) {
    return StatusOfErrno(errno);
  }
  if (attributes.uid.set_it || attributes.gid.set_it) {
    const uid_t uid =
        attributes.uid.set_it ? attributes.uid.set_uid3_u.uid : uid_t(-1);
    const gid_t gid =
        attributes.gid.set_it ? attributes.gid.set_gid3_u.gid : gid_t(-1);
    if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0) {
      return StatusOfErrno(errno);
    }
  }
  if (attributes.size.set_it &&
      truncate(path, static_cast<off_t>(attributes.size.set_size3_u.size)) !=
          0) {
    return StatusOfErrno(errno);
  }
  struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
  auto set = [](time_how how, const nfstime3& t, struct timespec& out) {
    if (how == SET_TO_SERVER_TIME) out = {0, UTIME_NOW};
    if (how == SET_TO_CLIENT_TIME) out = {t.seconds, t.nseconds};
  };
  set(attributes.atime.set_it, attributes.atime.set_atime_u.atime, times[0]);
  set(attributes.mtime.set_it, attributes.mtime.set_mtime_u.mtime, times[1]);
  if ((times[0].tv_nsec != UTIME_OMIT || times[1].tv_nsec != UTIME_OMIT) &&
      utimensat(AT_FDCWD, path, times, 0) != 0) {
    return StatusOfErrno(errno);
  }
  return NFS3_OK;
}

uint32_t AccessOf(int fd, const struct stat& st, uint32_t asked) {
  char path[64];
  ProcPath(fd, path);
  auto may = [&](int mode) {
    return faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0;
  };
  const bool directory = S_ISDIR(st.st_mode);
  uint32_t granted = 0;
  if ((asked & ACCESS3_READ) != 0 && may(R_OK)) granted |= ACCESS3_READ;
  if ((asked & (ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE)) != 0 &&
      may(W_OK)) {
    granted |= ACCESS3_MODIFY | ACCESS3_EXTEND;
    // Removing a name needs search permission as well.
    if (directory && may(W_OK | X_OK)) granted |= ACCESS3_DELETE;
  }
  if ((asked & (ACCESS3_LOOKUP | ACCESS3_EXECUTE)) != 0 && may(X_OK)) {
    granted |= directory ? ACCESS3_LOOKUP : ACCESS3_EXECUTE;
  }
  return granted & asked;
}

}  // namespace rpcrdma::nfs3d
