/*
 * filesvc's client: copies files to and from a filesvc server, over
 * libtirpc's own TCP or over RPC-over-RDMA, through rpcgen's stubs
 * (filesvc_clnt.c).
 *
 *   filesvc_client ADDRESS ls                 the files and their sizes
 *   filesvc_client ADDRESS size NAME          a file's size
 *   filesvc_client ADDRESS put LOCAL NAME     LOCAL to the server as NAME
 *   filesvc_client ADDRESS get NAME LOCAL     NAME from the server as LOCAL
 *
 * ADDRESS is what filesvc_server printed: tcp:HOST:PORT for libtirpc's TCP,
 * or an RPC-over-RDMA URI (rdma://, soft+tcp://, soft+unix://). The two
 * transports differ in one line (marked below). Exit status 0 on success,
 * 1 on an error, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpcrdma/oncrpc/clnt_rdma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "filesvc.h"
#include "filesvc_policy.h"

static const char *stat_text(fs_stat status) {
  switch (status) {
    case FS_OK:
      return "ok";
    case FS_NOENT:
      return "no such file";
    case FS_ACCES:
      return "permission denied";
    case FS_INVAL:
      return "invalid name or range";
    case FS_FBIG:
      return "too large";
    default:
      return "I/O error";
  }
}

/* A call that failed in the RPC layer: libtirpc's words, and the
 * transport's when it was RPC-over-RDMA. */
static int rpc_failed(CLIENT *clnt, const char *what) {
  clnt_perror(clnt, what);
  if (rdma_oncrpc_error()[0] != '\0') {
    fprintf(stderr, "  (%s)\n", rdma_oncrpc_error());
  }
  return 1;
}

static int failed(const char *what, const char *name, fs_stat status) {
  fprintf(stderr, "filesvc_client: %s %s: %s\n", what, name, stat_text(status));
  return 1;
}

static int list(CLIENT *clnt) {
  fs_list_res *res = filesvc_list_1(NULL, clnt);
  if (res == NULL) return rpc_failed(clnt, "LIST");
  if (res->status != FS_OK) return failed("LIST", "", res->status);
  for (fs_entry *e = res->fs_list_res_u.entries; e != NULL; e = e->next) {
    printf("%s %" PRIu64 "\n", e->name, (uint64_t)e->size);
  }
  clnt_freeres(clnt, (xdrproc_t)xdr_fs_list_res, (caddr_t)res);
  return 0;
}

static int size(CLIENT *clnt, char *name) {
  fs_size_res *res = filesvc_getsize_1(&name, clnt);
  if (res == NULL) return rpc_failed(clnt, "GETSIZE");
  if (res->status != FS_OK) return failed("GETSIZE", name, res->status);
  printf("%" PRIu64 "\n", (uint64_t)res->fs_size_res_u.size);
  return 0;
}

/* WRITEs of up to FILESVC_MAXIO octets (one, empty, for an empty file). */
static int put(CLIENT *clnt, const char *local, char *name) {
  int fd = open(local, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror(local);
    return 1;
  }
  char *buffer = malloc(FILESVC_MAXIO);
  if (buffer == NULL) {
    close(fd);
    return 1;
  }
  fs_write_args args;
  args.name = name;
  args.offset = 0;
  args.data.data_val = buffer;
  int status = 0;
  for (;;) {
    size_t filled = 0;
    ssize_t n = 1;
    while (filled < FILESVC_MAXIO && n > 0) {
      n = read(fd, buffer + filled, FILESVC_MAXIO - filled);
      if (n > 0) filled += (size_t)n;
      if (n < 0 && errno == EINTR) n = 1; /* interrupted: read again */
    }
    if (n < 0) {
      perror(local);
      status = 1;
      break;
    }
    args.data.data_len = (u_int)filled;
    fs_size_res *res = filesvc_write_1(&args, clnt);
    if (res == NULL) {
      status = rpc_failed(clnt, "WRITE");
      break;
    }
    if (res->status != FS_OK) {
      status = failed("WRITE", name, res->status);
      break;
    }
    args.offset += filled;
    if (filled < FILESVC_MAXIO) break; /* the end of the local file */
  }
  free(buffer);
  close(fd);
  return status;
}

/* READs of FILESVC_MAXIO octets until the server says eof. */
static int get(CLIENT *clnt, char *name, const char *local) {
  int fd = open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(local);
    return 1;
  }
  fs_read_args args;
  args.name = name;
  args.offset = 0;
  args.count = FILESVC_MAXIO;
  int status = 0;
  for (;;) {
    fs_read_res *res = filesvc_read_1(&args, clnt);
    if (res == NULL) {
      status = rpc_failed(clnt, "READ");
      break;
    }
    if (res->status != FS_OK) {
      status = failed("READ", name, res->status);
      break;
    }
    const fs_read_ok *ok = &res->fs_read_res_u.ok;
    size_t written = 0;
    while (written < ok->data.data_len && status == 0) {
      ssize_t n =
          write(fd, ok->data.data_val + written, ok->data.data_len - written);
      if (n < 0 && errno != EINTR) {
        perror(local);
        status = 1;
      } else if (n > 0) {
        written += (size_t)n;
      }
    }
    args.offset += ok->data.data_len;
    const int done = ok->eof || ok->data.data_len == 0;
    /* The stub's result is static: its data goes before the next call. */
    clnt_freeres(clnt, (xdrproc_t)xdr_fs_read_res, (caddr_t)res);
    if (status != 0 || done) break;
  }
  if (close(fd) != 0 && status == 0) {
    perror(local);
    status = 1;
  }
  return status;
}

/* tcp:HOST:PORT as an IPv4 address. */
static int tcp_address(const char *host_port, struct sockaddr_in *addr) {
  char host[64];
  unsigned port = 0;
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  if (sscanf(host_port, "%63[^:]:%u", host, &port) != 2 || port == 0 ||
      port > 65535 || inet_pton(AF_INET, host, &addr->sin_addr) != 1) {
    return -1;
  }
  addr->sin_port = htons((uint16_t)port);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: filesvc_client ADDRESS ls | size NAME | put LOCAL NAME | "
            "get NAME LOCAL\n"
            "ADDRESS: tcp:HOST:PORT or rdma://HOST:PORT, soft+tcp://..., "
            "soft+unix://...\n");
    return 2;
  }
  const char *where = argv[1];
  const char *command = argv[2];

  CLIENT *clnt;
  if (strncmp(where, "tcp:", 4) == 0) {
    struct sockaddr_in server;
    int sock = RPC_ANYSOCK;
    if (tcp_address(where + 4, &server) != 0) {
      fprintf(stderr, "filesvc_client: not tcp:HOST:PORT: %s\n", where);
      return 2;
    }
    clnt = clnttcp_create(&server, FILESVC, FILESVC_V1, &sock, 0, 0); /* TCP */
  } else {
    rdma_oncrpc_config *config = filesvc_rdma_config();
    clnt = clnt_rdma_create(where, FILESVC, FILESVC_V1, config); /* RDMA */
    rdma_oncrpc_config_destroy(config);
  }
  if (clnt == NULL) {
    clnt_pcreateerror(where);
    return 1;
  }

  int status = 2;
  if (strcmp(command, "ls") == 0 && argc == 3) {
    status = list(clnt);
  } else if (strcmp(command, "size") == 0 && argc == 4) {
    status = size(clnt, argv[3]);
  } else if (strcmp(command, "put") == 0 && argc == 5) {
    status = put(clnt, argv[3], argv[4]);
  } else if (strcmp(command, "get") == 0 && argc == 5) {
    status = get(clnt, argv[3], argv[4]);
  } else {
    fprintf(stderr, "filesvc_client: unknown command or arguments: %s\n",
            command);
  }
  clnt_destroy(clnt);
  return status;
}
