#include "examples/nfs3d/export.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "examples/nfs3d/attributes.h"
#include "examples/nfs3d/credentials.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::nfs3d {
namespace {

constexpr uint8_t kFormat = 1;
constexpr size_t kTagSize = 8;
constexpr size_t kMaxKernelHandle = NFS3_FHSIZE - kTagSize;
// The parent hint's own tag: its kernel handle's type.
constexpr size_t kHintTagSize = 4;
// The kernel's handle types (FILEID_*) fit in 16 bits; the rest are flags.
constexpr uint32_t kHandleTypeMask = 0xffff;

// struct file_handle ends in a flexible array: room for its header and the
// largest handle, aligned for the header.
struct KernelHandle {
  alignas(struct file_handle) unsigned char storage[sizeof(struct file_handle) +
                                                    MAX_HANDLE_SZ] = {};
  struct file_handle* header() {
    return reinterpret_cast<struct file_handle*>(storage);
  }
};

// The kernel's handle of the file `fd` opens.
bool KernelHandleOf(int fd, KernelHandle& out) {
  out.header()->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  return name_to_handle_at(fd, "", out.header(), &mount_id, AT_EMPTY_PATH) == 0;
}

// The kernel handle of `type` (big-endian at `bytes`) whose `length`
// octets follow it, or false for a type with flags (bits 16 and up of the
// kernel's handle type are flags open_by_handle_at takes,
// FILEID_IS_CONNECTABLE, FILEID_IS_DIR, never a type; with them one file
// would have several valid handles. name_to_handle_at sets none without
// AT_HANDLE_CONNECTABLE, which this server does not ask for).
bool ParseKernelHandle(const uint8_t* bytes, size_t length, KernelHandle& out) {
  const uint32_t type = LoadBigEndian32(bytes);
  if ((type & ~kHandleTypeMask) != 0) return false;
  out.header()->handle_bytes = static_cast<unsigned int>(length);
  out.header()->handle_type = static_cast<int>(type);
  std::memcpy(out.header()->f_handle, bytes + 4, length);
  return true;
}

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

// A field of /proc/self/mountinfo, whose space, tab, newline and
// backslash are octal escapes (\040...).
std::string Unescaped(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' &&
        field[i + 1] <= '3') {
      out += static_cast<char>((field[i + 1] - '0') * 64 +
                               (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// Whether the directory open at `fd`, at `path`, is the root of its file
// system, so that every file of the file system is inside it. A different
// device than its parent's does not say so: a bind mount of a directory
// below a file system's root is a mount point too. /proc/self/mountinfo
// does: the directory must be the mount point of its mount, and the
// mount's root (the fourth field) the file system's root, "/".
bool IsFileSystemRoot(int fd, const std::string& path) {
  KernelHandle h{};
  h.header()->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = -1;
  if (name_to_handle_at(fd, "", h.header(), &mount_id, AT_EMPTY_PATH) != 0) {
    return false;
  }
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    int id = -1, parent = -1;
    std::string device, root, mount_point;
    if (!(fields >> id >> parent >> device >> root >> mount_point)) continue;
    if (id != mount_id) continue;
    return Unescaped(root) == "/" && Unescaped(mount_point) == path;
  }
  // Not found: the path check costs a readlink, and is always right.
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Export>> Export::Open(const std::string& path) {
  std::unique_ptr<Export> e(new Export());
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("export ", path, ": ", strerror(errno)));
  }
  e->path_ = resolved;
  // Not O_PATH: open_by_handle_at refuses an O_PATH descriptor as the
  // file system's (EBADF).
  e->root_ = UniqueFd(open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!e->root_.valid() || fstat(e->root_.get(), &e->root_stat_) != 0) {
    return absl::NotFoundError(
        absl::StrCat("export ", path, ": ", strerror(errno)));
  }
  e->whole_file_system_ = IsFileSystemRoot(e->root_.get(), e->path_);
  e->fsid_ = static_cast<uint64_t>(e->root_stat_.st_dev);
  if (e->HandleOf(e->root_.get(), e->root_handle_) != NFS3_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        "export ", path, ": the file system gives no file handles (",
        strerror(errno), ")"));
  }
  // Opening a handle is what every later call does: check it works here
  // (it needs CAP_DAC_READ_SEARCH).
  UniqueFd probe;
  if (e->Open(AsNfsHandle(e->root_handle_), O_PATH, probe) != NFS3_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        "export ", path, ": open_by_handle_at fails (", strerror(errno),
        "); the server needs CAP_DAC_READ_SEARCH"));
  }
  return e;
}

nfsstat3 Export::HandleOf(int fd, FileHandle& out) const {
  KernelHandle h{};
  if (!KernelHandleOf(fd, h)) return StatusOfErrno(errno);
  if (h.header()->handle_bytes > kMaxKernelHandle) return NFS3ERR_SERVERFAULT;
  out.assign(2, 0);
  out[0] = kFormat;
  out.push_back(static_cast<uint8_t>(h.header()->handle_bytes >> 8));
  out.push_back(static_cast<uint8_t>(h.header()->handle_bytes));
  AppendBigEndian32(out, static_cast<uint32_t>(h.header()->handle_type));
  out.insert(out.end(), h.header()->f_handle,
             h.header()->f_handle + h.header()->handle_bytes);
  return NFS3_OK;
}

nfsstat3 Export::HandleOf(int fd, int dir, FileHandle& out) const {
  const nfsstat3 status = HandleOf(fd, out);
  if (status != NFS3_OK) return status;
  // No hint where no path is checked (every file of the file system is
  // inside the export), nor for a directory, which the kernel always
  // reconnects: their handles stay one per file whatever directory they
  // are found in.
  if (whole_file_system_) return NFS3_OK;
  struct stat st {};
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) return NFS3_OK;
  // Without a hint the handle is still valid, only not found after a cold
  // restart (export.h).
  KernelHandle parent{};
  if (!KernelHandleOf(dir, parent)) return NFS3_OK;
  const size_t hint_length = parent.header()->handle_bytes;
  if (hint_length == 0 || hint_length > UINT8_MAX ||
      out.size() + kHintTagSize + hint_length > NFS3_FHSIZE) {
    return NFS3_OK;
  }
  out[1] = static_cast<uint8_t>(hint_length);
  AppendBigEndian32(out, static_cast<uint32_t>(parent.header()->handle_type));
  out.insert(out.end(), parent.header()->f_handle,
             parent.header()->f_handle + hint_length);
  return NFS3_OK;
}

nfsstat3 Export::Open(const nfs_fh3& handle, int flags, UniqueFd& out) const {
  const auto* bytes = reinterpret_cast<const uint8_t*>(handle.data.data_val);
  const u_int length = handle.data.data_len;
  if (length < kTagSize || length > NFS3_FHSIZE || bytes[0] != kFormat) {
    return NFS3ERR_BADHANDLE;
  }
  const size_t hint_length = bytes[1];
  const size_t kernel_length = size_t{bytes[2]} << 8 | bytes[3];
  const size_t file_part = kTagSize + kernel_length;
  const size_t hint_part = hint_length == 0 ? 0 : kHintTagSize + hint_length;
  if (kernel_length > kMaxKernelHandle || file_part + hint_part != length) {
    return NFS3ERR_BADHANDLE;
  }
  KernelHandle h{};
  KernelHandle hint{};
  if (!ParseKernelHandle(bytes + 4, kernel_length, h) ||
      (hint_length != 0 &&
       !ParseKernelHandle(bytes + file_part, hint_length, hint))) {
    return NFS3ERR_BADHANDLE;
  }
  // Every handle is opened as O_PATH first, which acts on nothing (a FIFO
  // waits for no peer, a device is not opened), and only then, when the
  // caller wants more than that, opened again through /proc without
  // blocking (O_NONBLOCK) and without becoming a controlling terminal.
  const int path_flags =
      (flags & O_PATH) != 0 ? flags : O_PATH | (flags & O_DIRECTORY);
  // As the server: open_by_handle_at needs CAP_DAC_READ_SEARCH, which no
  // caller has. O_PATH checks no permission of the file's, only what
  // follows, as the caller, does.
  std::optional<ActingAsServer> server(std::in_place);
  UniqueFd fd(
      open_by_handle_at(root_.get(), h.header(), path_flags | O_CLOEXEC));
  if (!fd.valid()) {
    // ESTALE: deleted; EINVAL: a handle the file system does not take.
    return errno == ELOOP || errno == EISDIR || errno == ENOTDIR ||
                   errno == EACCES || errno == EPERM
               ? StatusOfErrno(errno)
               : NFS3ERR_STALE;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return NFS3ERR_STALE;
  // The server never gives a directory a hint (export.h).
  if (hint_length != 0 && S_ISDIR(st.st_mode)) return NFS3ERR_BADHANDLE;
  if (!Contains(fd.get(), st)) {
    // Disconnected after a cold restart, or outside the export: the file
    // in the hint's directory, if it is there.
    UniqueFd connected;
    if (hint_length == 0 ||
        !ReconnectThroughHint(*hint.header(), st, connected)) {
      return NFS3ERR_STALE;
    }
    fd = std::move(connected);
  }
  // Whatever else the kernel tolerates in a handle (octets it ignores,
  // another encoding of the same inode): the only valid handle of a file
  // is the one this server gives for it, but for the hint, which a file
  // keeps across RENAME and is no part of its identity (as nfsd ignores
  // the parent in the handle of a connected file).
  FileHandle canonical;
  if (HandleOf(fd.get(), canonical) != NFS3_OK ||
      canonical.size() != file_part || canonical[0] != bytes[0] ||
      std::memcmp(canonical.data() + 2, bytes + 2, file_part - 2) != 0) {
    return NFS3ERR_BADHANDLE;
  }
  if ((flags & O_PATH) != 0) {
    out = std::move(fd);
    return NFS3_OK;
  }
  server.reset();
  // Opened again as the caller: the open checks the caller's permission.
  return Reopen(fd.get(), st, flags, out);
}

nfsstat3 Export::Reopen(int path_fd, const struct stat& st, int flags,
                        UniqueFd& out) {
  // A symbolic link opened through /proc would be followed.
  if (S_ISLNK(st.st_mode)) return NFS3ERR_INVAL;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", path_fd);
  UniqueFd fd(
      open(path, (flags & ~O_NOFOLLOW) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return StatusOfErrno(errno);
  struct stat again {};
  if (fstat(fd.get(), &again) != 0) return StatusOfErrno(errno);
  if (again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
    return NFS3ERR_STALE;
  }
  out = std::move(fd);
  return NFS3_OK;
}

nfsstat3 Export::OpenFile(const nfs_fh3& handle, int flags,
                          UniqueFd& out) const {
  UniqueFd path;
  nfsstat3 status = Open(handle, O_PATH, path);
  if (status != NFS3_OK) return status;
  struct stat st {};
  if (fstat(path.get(), &st) != 0) return StatusOfErrno(errno);
  if (S_ISDIR(st.st_mode)) return NFS3ERR_ISDIR;
  if (!S_ISREG(st.st_mode)) return NFS3ERR_INVAL;
  // Opened again from the descriptor just checked: the same inode.
  return Reopen(path.get(), st, flags, out);
}

bool Export::Contains(int fd, const struct stat& st) const {
  if (st.st_dev != root_stat_.st_dev) return false;
  if (whole_file_system_ || IsRoot(st)) return true;
  // A directory below the root of its file system: the file's path must
  // be under it (a file with several links counts under the one the
  // kernel shows).
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[PATH_MAX];
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  const size_t root_length = path_.size();
  return std::strncmp(target, path_.c_str(), root_length) == 0 &&
         (target[root_length] == '/' || target[root_length] == '\0');
}

bool Export::ReconnectThroughHint(struct file_handle& hint,
                                  const struct stat& st, UniqueFd& out) const {
  // Opened for reading its entries; the kernel reconnects a directory, so
  // its path is checked as any file's.
  UniqueFd dir(open_by_handle_at(root_.get(), &hint,
                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat dir_stat {};
  if (!dir.valid() || fstat(dir.get(), &dir_stat) != 0 ||
      !Contains(dir.get(), dir_stat)) {
    return false;
  }
  // Read through a descriptor of its own: closedir closes it.
  const int scan_fd = fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);
  if (scan_fd < 0) return false;
  std::unique_ptr<DIR, DirCloser> entries(fdopendir(scan_fd));
  if (entries == nullptr) {
    close(scan_fd);
    return false;
  }
  // Looking the name up connects the file: the kernel splices its
  // disconnected dentry into place, and its path can be checked.
  while (const struct dirent* entry = readdir(entries.get())) {
    if (entry->d_ino != st.st_ino || std::strcmp(entry->d_name, ".") == 0 ||
        std::strcmp(entry->d_name, "..") == 0) {
      continue;
    }
    UniqueFd child(
        openat(dir.get(), entry->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat child_stat {};
    if (child.valid() && fstat(child.get(), &child_stat) == 0 &&
        child_stat.st_dev == st.st_dev && child_stat.st_ino == st.st_ino &&
        Contains(child.get(), child_stat)) {
      out = std::move(child);
      return true;
    }
  }
  return false;
}

nfsstat3 Export::OpenChild(int dir, const char* name, UniqueFd& out) const {
  if (name == nullptr || name[0] == '\0') return NFS3ERR_NOENT;
  if (std::strchr(name, '/') != nullptr) return NFS3ERR_ACCES;
  if (std::strlen(name) > NAME_MAX) return NFS3ERR_NAMETOOLONG;
  struct stat dir_stat {};
  if (std::strcmp(name, "..") == 0 && fstat(dir, &dir_stat) == 0 &&
      IsRoot(dir_stat)) {
    name = ".";
  }
  UniqueFd fd(openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return StatusOfErrno(errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return StatusOfErrno(errno);
  if (!Contains(fd.get(), st)) return NFS3ERR_ACCES;
  out = std::move(fd);
  return NFS3_OK;
}

nfs_fh3 AsNfsHandle(const FileHandle& handle) {
  nfs_fh3 fh;
  fh.data.data_len = static_cast<u_int>(handle.size());
  fh.data.data_val =
      reinterpret_cast<char*>(const_cast<uint8_t*>(handle.data()));
  return fh;
}

nfs_fh3 AllocatedNfsHandle(const FileHandle& handle) {
  nfs_fh3 fh;
  fh.data.data_len = static_cast<u_int>(handle.size());
  fh.data.data_val = static_cast<char*>(malloc(handle.size() + 1));
  std::memcpy(fh.data.data_val, handle.data(), handle.size());
  return fh;
}

}  // namespace rpcrdma::nfs3d
