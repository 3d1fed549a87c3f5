// The exported directory and its NFSv3 file handles (RFC 1813 §2.3.3: at
// most 64 opaque octets, chosen by the server).
//
// A handle carries the kernel's own handle of the file (name_to_handle_at
// (2)): inode and generation, so it names the same file after the server
// restarts, and a file that was deleted is STALE, never another file that
// reused its inode. Behind a tag of this format:
//   octet 0      format (1)
//   octet 1      length of the parent hint's kernel handle (0: no hint)
//   octets 2-3   length of the kernel handle, big-endian
//   octets 4-7   the kernel handle's type, big-endian
//   octets 8-    the kernel handle (at most 56 octets)
// and, when octet 1 is not 0, the parent hint:
//   4 octets     the parent's kernel handle type, big-endian
//   the rest     the parent's kernel handle (octet 1 octets)
// Opening a handle needs CAP_DAC_READ_SEARCH (open_by_handle_at(2)), as
// the kernel's own nfsd has.
//
// A handle never leads outside the exported directory: one that names a
// file of another file system, or (when the export is not the root of its
// file system) a file whose path is not under the export, is STALE; LOOKUP
// of ".." at the export's root stays there.
//
// The parent hint: after a restart with cold caches the kernel opens a
// non-directory's handle as a disconnected file, without a path (it always
// reconnects a directory), so the path check above cannot pass. When the
// export is not the root of its file system, a non-directory's handle
// therefore also carries the handle of the directory it was found in, as
// nfsd's subtree_check does (FILEID_INO32_GEN_PARENT): when the file's
// path cannot be checked, that directory is opened (connected, checked to
// be inside the export) and the file looked for in it by inode, which
// connects it. The hint is left out when it does not fit in RFC 1813's 64
// octets; such a file, or one renamed into another directory since its
// handle was given, is STALE after a cold restart until its name is looked
// up again. The hint is not part of a file's identity (a file keeps its
// handle across RENAME): a file's handle is valid with any well-formed
// hint or none, while a directory's handle never carries one. As with
// subtree_check, a file found in two directories (moved, or linked) is
// given a handle per directory.
#ifndef RPCRDMA_EXAMPLES_NFS3D_EXPORT_H_
#define RPCRDMA_EXAMPLES_NFS3D_EXPORT_H_

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "examples/nfs3d/unique_fd.h"
#include "nfs3_prot.h"

namespace rpcrdma::nfs3d {

using FileHandle = std::vector<uint8_t>;

class Export {
 public:
  // The directory at `path`; FAILED_PRECONDITION when file handles cannot
  // be made or opened there (no support in the file system, or no
  // CAP_DAC_READ_SEARCH).
  static absl::StatusOr<std::unique_ptr<Export>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  int root() const { return root_.get(); }
  // The file system's identity, reported as fattr3.fsid.
  uint64_t fsid() const { return fsid_; }
  const FileHandle& root_handle() const { return root_handle_; }

  // The handle of the file `fd` opens, without a parent hint (the root).
  nfsstat3 HandleOf(int fd, FileHandle& out) const;
  // The handle of the file `fd` opens, found in the directory `dir`: with
  // `dir` as its parent hint when the export's paths are checked, the file
  // is not a directory and the hint fits.
  nfsstat3 HandleOf(int fd, int dir, FileHandle& out) const;
  // Opens the file `handle` names with `flags` (O_PATH to look at it,
  // O_RDONLY, O_RDWR, O_DIRECTORY...): NFS3ERR_BADHANDLE for a handle of
  // another format or length, NFS3ERR_STALE for a file that is gone or
  // outside the export. Never blocks: a file opened for more than O_PATH
  // is opened with O_NONBLOCK and O_NOCTTY (a FIFO would wait for its
  // other end), and a symbolic link only as O_PATH (NFS3ERR_INVAL).
  nfsstat3 Open(const nfs_fh3& handle, int flags, UniqueFd& out) const;
  // Opens the regular file `handle` names for its data (READ, WRITE,
  // COMMIT), as nfsd's fh_verify(..., S_IFREG) admits it: NFS3ERR_ISDIR
  // for a directory, NFS3ERR_INVAL for any other type. The type is checked
  // before the file is opened for I/O: opening a device can itself act on
  // the device, and never hands a client the raw device.
  nfsstat3 OpenFile(const nfs_fh3& handle, int flags, UniqueFd& out) const;
  // Opens `name` in the directory `dir` (O_PATH, without following a
  // symbolic link). ".." of the root is the root; "." and ".." elsewhere
  // are what they are; a name with '/' is NFS3ERR_ACCES.
  nfsstat3 OpenChild(int dir, const char* name, UniqueFd& out) const;
  bool IsRoot(const struct stat& st) const {
    return st.st_dev == root_stat_.st_dev && st.st_ino == root_stat_.st_ino;
  }

 private:
  Export() = default;
  bool Contains(int fd, const struct stat& st) const;
  // The file of `st` (disconnected, so its path cannot be checked) as
  // found in the directory the parent hint `hint` names, when that
  // directory is inside the export: an O_PATH descriptor with a checked
  // path in `out`, or false.
  bool ReconnectThroughHint(struct file_handle& hint, const struct stat& st,
                            UniqueFd& out) const;
  // Opens the file the O_PATH descriptor `path_fd` (of `st`) opens again,
  // with `flags`, O_NONBLOCK and O_NOCTTY.
  static nfsstat3 Reopen(int path_fd, const struct stat& st, int flags,
                         UniqueFd& out);

  std::string path_;
  UniqueFd root_;
  struct stat root_stat_ {};
  uint64_t fsid_ = 0;
  FileHandle root_handle_;
  // The export is the root of its file system, from
  // /proc/self/mountinfo (not from a device number, which a bind mount of
  // a sub-directory changes too): every file of that file system is
  // inside it. Otherwise each file's path is checked.
  bool whole_file_system_ = false;
};

// nfs_fh3 over `handle`'s octets (not copied: `handle` must outlive it).
nfs_fh3 AsNfsHandle(const FileHandle& handle);
// A copy that xdr_free can release (the results of a procedure).
nfs_fh3 AllocatedNfsHandle(const FileHandle& handle);

}  // namespace rpcrdma::nfs3d

#endif  // RPCRDMA_EXAMPLES_NFS3D_EXPORT_H_
