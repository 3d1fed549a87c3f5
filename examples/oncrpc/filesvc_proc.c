/*
 * filesvc's server procedures, written as rpcgen's classic (not -M) style
 * wants them: each returns a pointer to its static result, which rpcgen's
 * dispatcher (filesvc_svc.c) sends and leaves alone. Nothing here knows
 * the transport: the same functions serve TCP and RPC-over-RDMA.
 */
#define _GNU_SOURCE /* O_DIRECTORY, fdopendir, openat, pread, pwrite */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filesvc.h"
#include "filesvc_server.h"

int filesvc_dir = -1;

static fs_stat stat_of(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return FS_NOENT;
    case EACCES:
    case EPERM:
      return FS_ACCES;
    case EINVAL:
    case EISDIR:
    case ENAMETOOLONG:
      return FS_INVAL;
    case EFBIG:
      return FS_FBIG;
    default:
      return FS_IO;
  }
}

/* A plain name of the served directory: no path, no "." or "..". */
static int valid_name(const char *name) {
  return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL &&
         strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* Opens a regular file of the served directory; -1 with errno set. */
static int open_file(const char *name, int flags) {
  if (!valid_name(name)) {
    errno = EINVAL;
    return -1;
  }
  int fd = openat(filesvc_dir, name, flags | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EISDIR;
    return -1;
  }
  return fd;
}

void *filesvc_null_1_svc(void *argp, struct svc_req *rqstp) {
  static char nothing;
  (void)argp;
  (void)rqstp;
  return &nothing;
}

fs_read_res *filesvc_read_1_svc(fs_read_args *argp, struct svc_req *rqstp) {
  static fs_read_res res;
  /* READ's data is read into one buffer kept for every call. */
  static char *buffer;
  (void)rqstp;
  memset(&res, 0, sizeof res);
  if (buffer == NULL && (buffer = malloc(FILESVC_MAXIO)) == NULL) {
    res.status = FS_IO;
    return &res;
  }
  if (argp->offset > INT64_MAX - FILESVC_MAXIO) {
    res.status = FS_INVAL;
    return &res;
  }
  int fd = open_file(argp->name, O_RDONLY);
  if (fd < 0) {
    res.status = stat_of(errno);
    return &res;
  }
  /* A short read, as an NFS server answers beyond its rtmax. */
  size_t count = argp->count < FILESVC_MAXIO ? argp->count : FILESVC_MAXIO;
  size_t done = 0;
  while (done < count) {
    ssize_t n =
        pread(fd, buffer + done, count - done, (off_t)(argp->offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      res.status = stat_of(errno);
      close(fd);
      return &res;
    }
    if (n == 0) break;
    done += (size_t)n;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    res.status = stat_of(errno);
    close(fd);
    return &res;
  }
  close(fd);
  res.status = FS_OK;
  res.fs_read_res_u.ok.eof = argp->offset + done >= (uint64_t)st.st_size;
  res.fs_read_res_u.ok.data.data_len = (u_int)done;
  res.fs_read_res_u.ok.data.data_val = buffer;
  return &res;
}

fs_size_res *filesvc_write_1_svc(fs_write_args *argp, struct svc_req *rqstp) {
  static fs_size_res res;
  (void)rqstp;
  memset(&res, 0, sizeof res);
  /* rpcgen's XDR routine already refuses data over FILESVC_MAXIO. */
  if (argp->offset > INT64_MAX - FILESVC_MAXIO) {
    res.status = FS_INVAL;
    return &res;
  }
  int fd = open_file(argp->name, O_WRONLY | O_CREAT);
  if (fd < 0) {
    res.status = stat_of(errno);
    return &res;
  }
  const char *data = argp->data.data_val;
  size_t left = argp->data.data_len;
  off_t at = (off_t)argp->offset;
  while (left > 0) {
    ssize_t n = pwrite(fd, data, left, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      res.status = stat_of(errno);
      close(fd);
      return &res;
    }
    data += n;
    left -= (size_t)n;
    at += n;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    res.status = stat_of(errno);
  } else {
    res.status = FS_OK;
    res.fs_size_res_u.size = (u_quad_t)st.st_size;
  }
  close(fd);
  return &res;
}

fs_size_res *filesvc_getsize_1_svc(fs_name *argp, struct svc_req *rqstp) {
  static fs_size_res res;
  (void)rqstp;
  memset(&res, 0, sizeof res);
  int fd = open_file(*argp, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    res.status = stat_of(errno);
  } else {
    res.status = FS_OK;
    res.fs_size_res_u.size = (u_quad_t)st.st_size;
  }
  if (fd >= 0) close(fd);
  return &res;
}

fs_list_res *filesvc_list_1_svc(void *argp, struct svc_req *rqstp) {
  static fs_list_res res;
  (void)argp;
  (void)rqstp;
  /* The previous call's list was sent: free it now (xdr_free follows the
   * list as the XDR routine does). */
  xdr_free((xdrproc_t)xdr_fs_list_res, (char *)&res);
  memset(&res, 0, sizeof res);
  int fd = dup(filesvc_dir);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (dir == NULL) {
    res.status = stat_of(errno);
    if (fd >= 0) close(fd);
    return &res;
  }
  rewinddir(dir);
  fs_entry **tail = &res.fs_list_res_u.entries;
  struct dirent *d;
  while ((d = readdir(dir)) != NULL) {
    struct stat st;
    if (fstatat(filesvc_dir, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || strlen(d->d_name) > FILESVC_MAXNAME) {
      continue;
    }
    fs_entry *e = calloc(1, sizeof *e);
    if (e == NULL || (e->name = strdup(d->d_name)) == NULL) {
      free(e);
      closedir(dir);
      xdr_free((xdrproc_t)xdr_fs_list_res, (char *)&res);
      memset(&res, 0, sizeof res);
      res.status = FS_IO;
      return &res;
    }
    e->size = (u_quad_t)st.st_size;
    *tail = e;
    tail = &e->next;
  }
  closedir(dir);
  res.status = FS_OK;
  return &res;
}
