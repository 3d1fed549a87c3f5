// The procedures on one file: GETATTR, SETATTR, ACCESS, READ, WRITE,
// COMMIT, and those on the file system: FSSTAT, FSINFO, PATHCONF.
#include "examples/nfs3d/nfs3_server.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "examples/nfs3d/attributes.h"

namespace rpcrdma::nfs3d {
namespace {

Nfs3Server* installed = nullptr;

// RFC 1813 §3.3.2: the guard compares the object's ctime.
bool GuardHolds(const sattrguard3& guard, const struct stat& st) {
  return !guard.check || (guard.sattrguard3_u.obj_ctime.seconds ==
                              static_cast<uint32>(st.st_ctim.tv_sec) &&
                          guard.sattrguard3_u.obj_ctime.nseconds ==
                              static_cast<uint32>(st.st_ctim.tv_nsec));
}

}  // namespace

Nfs3Server::Nfs3Server(std::unique_ptr<Export> exported, ServerLimits limits,
                       ExportOptions options)
    : export_(std::move(exported)),
      limits_(limits),
      options_(options),
      workers_(limits.file_threads, 2 * size_t{limits.file_threads}) {
  std::random_device random;
  for (char& c : write_verifier_) c = static_cast<char>(random());
}

void Nfs3Server::Install(Nfs3Server* server) { installed = server; }
Nfs3Server& Nfs3Server::Installed() { return *installed; }

bool_t Nfs3Server::Getattr(const GETATTR3args& a, GETATTR3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.object, O_PATH, fd);
  struct stat st {};
  if (r.status == NFS3_OK && fstat(fd.get(), &st) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status == NFS3_OK) {
    r.GETATTR3res_u.resok.obj_attributes = AttributesOf(st, export_->fsid());
  }
  return TRUE;
}

bool_t Nfs3Server::Setattr(const SETATTR3args& a, SETATTR3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.object, O_PATH, fd);
  if (r.status != NFS3_OK) return TRUE;
  const std::optional<struct stat> before = StatBefore(fd.get());
  if (before.has_value() && !GuardHolds(a.guard, *before)) {
    r.status = NFS3ERR_NOT_SYNC;
  } else {
    r.status = ApplyAttributes(fd.get(), a.new_attributes);
  }
  // Both arms carry the same wcc_data.
  r.SETATTR3res_u.resok.obj_wcc = WccOf(before, fd.get(), export_->fsid());
  return TRUE;
}

bool_t Nfs3Server::Access(const ACCESS3args& a, ACCESS3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.object, O_PATH, fd);
  struct stat st {};
  if (r.status == NFS3_OK && fstat(fd.get(), &st) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) return TRUE;
  r.ACCESS3res_u.resok.obj_attributes = PostOpAttributes(st, export_->fsid());
  // The thread acts as the caller: the file system answers for it.
  r.ACCESS3res_u.resok.access = AccessOf(fd.get(), st, a.access);
  return TRUE;
}

bool_t Nfs3Server::Read(const READ3args& a, READ3res& r) {
  UniqueFd fd;
  r.status = export_->OpenFile(a.file, O_RDONLY, fd);
  if (r.status != NFS3_OK) {
    r.READ3res_u.resfail.file_attributes = post_op_attr{};
    return TRUE;
  }
  READ3resok& ok = r.READ3res_u.resok;
  // RFC 1813 §3.3.6: a READ from past the end of the file is 0 octets and
  // eof, also from offsets no off_t reaches (2^63 and up), which pread
  // would refuse (EINVAL); nor does the read run past 2^63 - 1.
  constexpr uint64_t kMaxOffset = std::numeric_limits<int64_t>::max();
  const uint32_t count =
      a.offset >= kMaxOffset
          ? 0
          : static_cast<uint32_t>(std::min<uint64_t>(
                std::min(a.count, limits_.max_read), kMaxOffset - a.offset));
  // The data goes to the client from this buffer: by RDMA Write into the
  // write chunk its call offered (RFC 8267 §4.1), without another copy.
  ok.data.data_val = static_cast<char*>(malloc(count + 1));
  size_t done = 0;
  while (done < count) {
    const ssize_t n = pread(fd.get(), ok.data.data_val + done, count - done,
                            static_cast<off_t>(a.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.status = StatusOfErrno(errno);
      free(ok.data.data_val);
      r.READ3res_u.resfail.file_attributes =
          PostOpAttributes(fd.get(), export_->fsid());
      return TRUE;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  struct stat st {};
  fstat(fd.get(), &st);
  ok.data.data_len = static_cast<u_int>(done);
  ok.count = static_cast<count3>(done);
  ok.eof = a.offset + done >= static_cast<uint64_t>(st.st_size);
  ok.file_attributes = PostOpAttributes(st, export_->fsid());
  return TRUE;
}

bool_t Nfs3Server::Write(const WRITE3args& a, WRITE3res& r) {
  UniqueFd fd;
  r.status = export_->OpenFile(a.file, O_WRONLY, fd);
  if (r.status != NFS3_OK) {
    r.WRITE3res_u.resfail.file_wcc = wcc_data{};
    return TRUE;
  }
  const std::optional<struct stat> before = StatBefore(fd.get());
  // RFC 1813 §3.3.7: count says how much of data to write.
  const size_t count = std::min<size_t>(a.count, a.data.data_len);
  // Past what an off_t reaches: too large a file (pwrite says EINVAL).
  constexpr uint64_t kMaxOffset = std::numeric_limits<int64_t>::max();
  if (a.offset > kMaxOffset || count > kMaxOffset - a.offset) {
    r.status = NFS3ERR_FBIG;
    r.WRITE3res_u.resfail.file_wcc = WccOf(before, fd.get(), export_->fsid());
    return TRUE;
  }
  size_t done = 0;
  while (done < count) {
    const ssize_t n = pwrite(fd.get(), a.data.data_val + done, count - done,
                             static_cast<off_t>(a.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.status = StatusOfErrno(n < 0 ? errno : EIO);
      break;
    }
    done += static_cast<size_t>(n);
  }
  stable_how committed = a.stable;
  if (r.status == NFS3_OK && a.stable != UNSTABLE) {
    const int synced =
        a.stable == DATA_SYNC ? fdatasync(fd.get()) : fsync(fd.get());
    if (synced != 0) r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) {
    r.WRITE3res_u.resfail.file_wcc = WccOf(before, fd.get(), export_->fsid());
    return TRUE;
  }
  WRITE3resok& ok = r.WRITE3res_u.resok;
  ok.file_wcc = WccOf(before, fd.get(), export_->fsid());
  ok.count = static_cast<count3>(done);
  ok.committed = committed;
  std::memcpy(ok.verf, write_verifier_.data(), NFS3_WRITEVERFSIZE);
  return TRUE;
}

bool_t Nfs3Server::Commit(const COMMIT3args& a, COMMIT3res& r) {
  UniqueFd fd;
  r.status = export_->OpenFile(a.file, O_RDONLY, fd);
  if (r.status != NFS3_OK) {
    r.COMMIT3res_u.resfail.file_wcc = wcc_data{};
    return TRUE;
  }
  const std::optional<struct stat> before = StatBefore(fd.get());
  if (fsync(fd.get()) != 0) r.status = StatusOfErrno(errno);
  if (r.status != NFS3_OK) {
    r.COMMIT3res_u.resfail.file_wcc = WccOf(before, fd.get(), export_->fsid());
    return TRUE;
  }
  r.COMMIT3res_u.resok.file_wcc = WccOf(before, fd.get(), export_->fsid());
  std::memcpy(r.COMMIT3res_u.resok.verf, write_verifier_.data(),
              NFS3_WRITEVERFSIZE);
  return TRUE;
}

bool_t Nfs3Server::Fsstat(const FSSTAT3args& a, FSSTAT3res& r) {
  UniqueFd fd;
  // O_PATH: FSSTAT of any handle (a FIFO's too) opens nothing.
  r.status = export_->Open(a.fsroot, O_PATH, fd);
  struct statvfs vfs {};
  if (r.status == NFS3_OK && fstatvfs(fd.get(), &vfs) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) {
    r.FSSTAT3res_u.resfail.obj_attributes =
        PostOpAttributes(fd.get(), export_->fsid());
    return TRUE;
  }
  FSSTAT3resok& ok = r.FSSTAT3res_u.resok;
  ok.obj_attributes = PostOpAttributes(fd.get(), export_->fsid());
  ok.tbytes = uint64{vfs.f_blocks} * vfs.f_frsize;
  ok.fbytes = uint64{vfs.f_bfree} * vfs.f_frsize;
  ok.abytes = uint64{vfs.f_bavail} * vfs.f_frsize;
  ok.tfiles = vfs.f_files;
  ok.ffiles = vfs.f_ffree;
  ok.afiles = vfs.f_favail;
  ok.invarsec = 0;  // the numbers may change at any time
  return TRUE;
}

bool_t Nfs3Server::Fsinfo(const FSINFO3args& a, FSINFO3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.fsroot, O_PATH, fd);
  if (r.status != NFS3_OK) {
    r.FSINFO3res_u.resfail.obj_attributes = post_op_attr{};
    return TRUE;
  }
  FSINFO3resok& ok = r.FSINFO3res_u.resok;
  ok.obj_attributes = PostOpAttributes(fd.get(), export_->fsid());
  ok.rtmax = ok.rtpref = limits_.max_read;
  ok.rtmult = 4096;
  ok.wtmax = ok.wtpref = limits_.max_write;
  ok.wtmult = 4096;
  ok.dtpref = limits_.directory_preferred;
  ok.maxfilesize = 0x7fffffffffffffffull;
  ok.time_delta = nfstime3{0, 1};
  ok.properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
  return TRUE;
}

bool_t Nfs3Server::Pathconf(const PATHCONF3args& a, PATHCONF3res& r) {
  UniqueFd fd;
  r.status = export_->Open(a.object, O_PATH, fd);
  if (r.status != NFS3_OK) {
    r.PATHCONF3res_u.resfail.obj_attributes = post_op_attr{};
    return TRUE;
  }
  PATHCONF3resok& ok = r.PATHCONF3res_u.resok;
  ok.obj_attributes = PostOpAttributes(fd.get(), export_->fsid());
  const long link_max = fpathconf(fd.get(), _PC_LINK_MAX);
  const long name_max = fpathconf(fd.get(), _PC_NAME_MAX);
  ok.linkmax = link_max > 0 ? static_cast<uint32>(link_max) : 65000;
  ok.name_max = name_max > 0 ? static_cast<uint32>(name_max) : 255;
  ok.no_trunc = TRUE;
  ok.chown_restricted = TRUE;
  ok.case_insensitive = FALSE;
  ok.case_preserving = TRUE;
  return TRUE;
}

}  // namespace rpcrdma::nfs3d
