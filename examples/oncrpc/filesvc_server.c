/*
 * filesvc's server: serves the regular files of DIRECTORY to filesvc
 * clients, over libtirpc's own TCP or over RPC-over-RDMA.
 *
 *   filesvc_server DIRECTORY tcp:HOST:PORT   libtirpc's TCP (svctcp_create)
 *   filesvc_server DIRECTORY URI             RPC-over-RDMA (svc_rdma_create):
 *                                            rdma://HOST:PORT,
 *                                            soft+tcp://HOST:PORT or
 *                                            soft+unix:///PATH
 *
 * A port of 0 picks one. The server prints the address clients give
 * filesvc_client on its first line, then serves until it is killed. The
 * two transports differ in one line each way (marked below); the program,
 * rpcgen's dispatcher and the procedures are the same. There is no rpcbind:
 * clients are given the address.
 */
#define _GNU_SOURCE /* O_DIRECTORY */

#include "filesvc_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpcrdma/oncrpc/svc_rdma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "filesvc.h"
#include "filesvc_policy.h"

/* A TCP socket listening on HOST:PORT (an IPv4 address). libtirpc's
 * svctcp_create binds and listens only on a socket it makes itself, on
 * every address; this one listens where it is told. */
static int listen_tcp(const char *host_port) {
  char host[64];
  unsigned port = 0;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  if (sscanf(host_port, "%63[^:]:%u", host, &port) != 2 || port > 65535 ||
      inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "filesvc_server: not an IPv4 HOST:PORT: %s\n", host_port);
    return -1;
  }
  addr.sin_port = htons((uint16_t)port);
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(sock, SOMAXCONN) != 0) {
    perror("filesvc_server: listen");
    if (sock >= 0) close(sock);
    return -1;
  }
  return sock;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr,
            "usage: filesvc_server DIRECTORY tcp:HOST:PORT\n"
            "       filesvc_server DIRECTORY rdma://HOST:PORT | "
            "soft+tcp://HOST:PORT | soft+unix:///PATH\n");
    return 2;
  }
  const char *where = argv[2];
  filesvc_dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (filesvc_dir < 0) {
    perror(argv[1]);
    return 1;
  }

  SVCXPRT *transp;
  if (strncmp(where, "tcp:", 4) == 0) {
    int sock = listen_tcp(where + 4);
    if (sock < 0) return 1;
    transp = svctcp_create(sock, 0, 0); /* TCP */
  } else {
    rdma_oncrpc_config *config = filesvc_rdma_config();
    transp = svc_rdma_create(where, config); /* RPC-over-RDMA */
    rdma_oncrpc_config_destroy(config);
  }
  if (transp == NULL) {
    fprintf(stderr, "filesvc_server: cannot serve on %s: %s\n", where,
            rdma_oncrpc_error());
    return 1;
  }
  /* A NULL netconfig: known to the dispatcher, not to rpcbind. */
  if (!svc_reg(transp, FILESVC, FILESVC_V1, filesvc_1, NULL)) {
    fprintf(stderr, "filesvc_server: svc_reg failed\n");
    return 1;
  }

  /* Where clients connect: the port chosen when it was 0. */
  if (strncmp(where, "tcp:", 4) == 0) {
    char host[64] = "";
    sscanf(where + 4, "%63[^:]", host);
    printf("tcp:%s:%u\n", host, (unsigned)transp->xp_port);
  } else {
    printf("%s\n", svc_rdma_uri(transp));
  }
  fflush(stdout);

  svc_run();
  fprintf(stderr, "filesvc_server: svc_run returned\n");
  return 1;
}
