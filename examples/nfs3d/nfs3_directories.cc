// READDIR and READDIRPLUS (RFC 1813 §3.3.16, §3.3.17): a directory read
// from the cookie the client gives, as many entries as fit the reply size
// it asks for (READDIRPLUS: maxcount, dircount being a hint).
//
// Cookies are the directory's own offsets (getdents64's d_off, given back
// to lseek), as Linux's nfsd makes them: stable while the directory does
// not change, whatever the number of entries. The cookie verifier is the
// directory's change time; like nfsd, a stale one is not refused (the
// offsets stay meaningful after a change on the file systems this serves),
// so a client listing a directory that changes meanwhile still gets every
// entry that stayed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "examples/nfs3d/attributes.h"
#include "examples/nfs3d/nfs3_server.h"

namespace rpcrdma::nfs3d {
namespace {

// The kernel's struct linux_dirent64, up to its name.
struct Dirent64Head {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
};

size_t XdrString(size_t length) { return 4 + (length + 3) / 4 * 4; }

// What one entry costs in the reply (RFC 1813 §3.3.16: the count bounds
// the whole READDIR3resok; §3.3.17: maxcount the whole READDIRPLUS3resok),
// with the value-follows word before it: its fileid, name and cookie.
size_t EntrySize(size_t name_length) {
  return 4 + 8 + XdrString(name_length) + 8;
}

void VerifierOf(const struct stat& st, cookieverf3 out) {
  const uint32_t seconds = static_cast<uint32_t>(st.st_ctim.tv_sec);
  const uint32_t nanoseconds = static_cast<uint32_t>(st.st_ctim.tv_nsec);
  std::memcpy(out, &seconds, 4);
  std::memcpy(out + 4, &nanoseconds, 4);
}

char* Copy(const char* name) {
  const size_t n = std::strlen(name);
  char* out = static_cast<char*>(malloc(n + 1));
  std::memcpy(out, name, n + 1);
  return out;
}

// Reads the directory open at `fd` from `cookie`, calling `take` with each
// entry's name, inode and the cookie after it, until `take` says the reply
// is full. Sets `eof` when the directory ended first.
template <typename Take>
nfsstat3 ReadEntries(int fd, uint64_t cookie, bool& eof, Take take) {
  if (lseek(fd, static_cast<off_t>(cookie), SEEK_SET) < 0) {
    return cookie == 0 ? StatusOfErrno(errno) : NFS3ERR_BAD_COOKIE;
  }
  alignas(Dirent64Head) char buffer[32 * 1024];
  eof = false;
  for (;;) {
    const long n = getdents64(fd, buffer, sizeof buffer);
    if (n < 0) return StatusOfErrno(errno);
    if (n == 0) {
      eof = true;
      return NFS3_OK;
    }
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const Dirent64Head*>(buffer + at);
      const char* name = buffer + at + offsetof(Dirent64Head, d_type) + 1;
      at += d->d_reclen;
      if (!take(name, static_cast<uint64_t>(d->d_ino),
                static_cast<uint64_t>(d->d_off))) {
        return NFS3_OK;
      }
    }
  }
}

}  // namespace

bool_t Nfs3Server::Readdir(const READDIR3args& a, READDIR3res& r) {
  UniqueFd dir;
  r.status = export_->Open(a.dir, O_RDONLY | O_DIRECTORY, dir);
  struct stat st {};
  if (r.status == NFS3_OK && fstat(dir.get(), &st) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) {
    r.READDIR3res_u.resfail.dir_attributes =
        PostOpAttributes(dir.get(), export_->fsid());
    return TRUE;
  }
  READDIR3resok& ok = r.READDIR3res_u.resok;
  ok.dir_attributes = PostOpAttributes(st, export_->fsid());
  VerifierOf(st, ok.cookieverf);
  // status, attributes, verifier, the end of the list and eof.
  size_t used = 4 + 4 + 84 + NFS3_COOKIEVERFSIZE + 4 + 4;
  // rpcgen's multi-threaded dispatcher does not clear the result: the
  // list is empty until an entry is added, or it would be freed or sent
  // from whatever was on the stack.
  entry3** tail = &ok.reply.entries;
  *tail = nullptr;
  size_t listed = 0;
  bool eof = false;
  r.status =
      ReadEntries(dir.get(), a.cookie, eof,
                  [&](const char* name, uint64_t inode, uint64_t next_cookie) {
                    if (std::strcmp(name, "..") == 0 && export_->IsRoot(st)) {
                      inode = st.st_ino;
                    }
                    const size_t size = EntrySize(std::strlen(name));
                    if (used + size > a.count) return false;
                    used += size;
                    auto* e = static_cast<entry3*>(calloc(1, sizeof(entry3)));
                    e->fileid = inode;
                    e->name = Copy(name);
                    e->cookie = next_cookie;
                    *tail = e;
                    tail = &e->nextentry;
                    ++listed;
                    return true;
                  });
  ok.reply.eof = eof;
  if (r.status == NFS3_OK && listed == 0 && !eof) r.status = NFS3ERR_TOOSMALL;
  if (r.status != NFS3_OK) {
    xdr_free(reinterpret_cast<xdrproc_t>(
                 reinterpret_cast<void (*)()>(&xdr_dirlist3)),
             &ok.reply);
    r.READDIR3res_u.resfail.dir_attributes =
        PostOpAttributes(st, export_->fsid());
  }
  return TRUE;
}

bool_t Nfs3Server::Readdirplus(const READDIRPLUS3args& a, READDIRPLUS3res& r) {
  UniqueFd dir;
  r.status = export_->Open(a.dir, O_RDONLY | O_DIRECTORY, dir);
  struct stat st {};
  if (r.status == NFS3_OK && fstat(dir.get(), &st) != 0) {
    r.status = StatusOfErrno(errno);
  }
  if (r.status != NFS3_OK) {
    r.READDIRPLUS3res_u.resfail.dir_attributes =
        PostOpAttributes(dir.get(), export_->fsid());
    return TRUE;
  }
  READDIRPLUS3resok& ok = r.READDIRPLUS3res_u.resok;
  ok.dir_attributes = PostOpAttributes(st, export_->fsid());
  VerifierOf(st, ok.cookieverf);
  size_t used = 4 + 4 + 84 + NFS3_COOKIEVERFSIZE + 4 + 4;
  // RFC 1813 §3.3.17: dircount (the entries' fileid, name and cookie) is
  // a hint; maxcount bounds the reply. Like Linux's nfsd, the reply is
  // filled up to maxcount, so that a listing takes fewer calls (the Linux
  // client asks for a dircount of an eighth of its maxcount), and never
  // past what the server would READ at once, whatever the client asks.
  const size_t maxcount = std::min<size_t>(a.maxcount, limits_.max_read);
  entryplus3** tail = &ok.reply.entries;
  *tail = nullptr;  // as in Readdir
  size_t listed = 0;
  bool eof = false;
  r.status = ReadEntries(
      dir.get(), a.cookie, eof,
      [&](const char* name, uint64_t inode, uint64_t next_cookie) {
        // ".." of the export's root is the root (export.h).
        if (std::strcmp(name, "..") == 0 && export_->IsRoot(st)) {
          inode = st.st_ino;
        }
        post_op_fh3 handle{};
        post_op_attr attributes{};
        Describe(dir.get(), name, handle, attributes);
        const size_t name_length = std::strlen(name);
        const size_t size =
            EntrySize(name_length) + 4 +
            (attributes.attributes_follow ? 84 : 0) + 4 +
            (handle.handle_follows
                 ? XdrString(handle.post_op_fh3_u.handle.data.data_len)
                 : 0);
        if (used + size > maxcount) {
          xdr_free(reinterpret_cast<xdrproc_t>(
                       reinterpret_cast<void (*)()>(&xdr_post_op_fh3)),
                   &handle);
          return false;
        }
        used += size;
        auto* e = static_cast<entryplus3*>(calloc(1, sizeof(entryplus3)));
        e->fileid = inode;
        e->name = Copy(name);
        e->cookie = next_cookie;
        e->name_attributes = attributes;
        e->name_handle = handle;
        *tail = e;
        tail = &e->nextentry;
        ++listed;
        return true;
      });
  ok.reply.eof = eof;
  if (r.status == NFS3_OK && listed == 0 && !eof) r.status = NFS3ERR_TOOSMALL;
  if (r.status != NFS3_OK) {
    xdr_free(reinterpret_cast<xdrproc_t>(
                 reinterpret_cast<void (*)()>(&xdr_dirlistplus3)),
             &ok.reply);
    r.READDIRPLUS3res_u.resfail.dir_attributes =
        PostOpAttributes(st, export_->fsid());
  }
  return TRUE;
}

}  // namespace rpcrdma::nfs3d
