/*
 * The ONC RPC adapter from C, over an installed rpcrdma: a program
 * compiled as C creates an RPC-over-RDMA SVCXPRT and CLIENT through the C
 * functions only (rpcrdma/oncrpc/ headers), serves a hand-written program
 * with a dispatcher of its own, and calls it. Exits 0 when every call
 * behaved; prints what did not otherwise. Also run in the tree as the
 * ctests oncrpc.c_api.*.
 *
 *   rpcrdma_oncrpc_consumer [URI]
 *     URI: where the server listens (default an abstract Unix socket;
 *     soft+tcp://127.0.0.1:0 for TCP)
 */
#include <rpc/rpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/oncrpc/clnt_rdma.h"
#include "rpcrdma/oncrpc/svc_rdma.h"

#define SQUARE_PROG 0x2000816a
#define SQUARE_VERS 1
#define SQUARE_PROC 1

static void square_dispatch(struct svc_req *request, SVCXPRT *xprt) {
  u_int n = 0;
  switch (request->rq_proc) {
    case NULLPROC:
      svc_sendreply(xprt, (xdrproc_t)xdr_void, NULL);
      return;
    case SQUARE_PROC:
      if (!svc_getargs(xprt, (xdrproc_t)xdr_u_int, (caddr_t)&n)) {
        svcerr_decode(xprt);
        return;
      }
      n *= n;
      svc_sendreply(xprt, (xdrproc_t)xdr_u_int, (caddr_t)&n);
      return;
    default:
      svcerr_noproc(xprt);
  }
}

int main(int argc, char **argv) {
  struct timeval timeout = {10, 0};
  rdma_oncrpc_config *config;
  SVCXPRT *xprt;
  CLIENT *clnt;
  u_int n = 12, squared = 0;
  int failures = 0;

  const char *uri = argc > 1 ? argv[1] : "soft+unix://@rpcrdma-oncrpc-consumer";

  if (argc > 2) {
    fprintf(stderr, "usage: %s [URI]\n", argv[0]);
    return 2;
  }
  config = rdma_oncrpc_config_create();
  if (!rdma_oncrpc_config_parse_transport(config,
                                          "credits { max_requests: 8 }")) {
    fprintf(stderr, "config: %s\n", rdma_oncrpc_error());
    return 1;
  }
  xprt = svc_rdma_create(uri, config);
  if (xprt == NULL) {
    fprintf(stderr, "svc_rdma_create: %s\n", rdma_oncrpc_error());
    return 1;
  }
  if (!svc_reg(xprt, SQUARE_PROG, SQUARE_VERS, square_dispatch, NULL) ||
      !svc_rdma_run_threads(xprt, 2)) {
    fprintf(stderr, "svc_reg or svc_rdma_run_threads failed\n");
    return 1;
  }
  clnt = clnt_rdma_create(svc_rdma_uri(xprt), SQUARE_PROG, SQUARE_VERS, config);
  rdma_oncrpc_config_destroy(config);
  if (clnt == NULL) {
    clnt_pcreateerror("clnt_rdma_create");
    return 1;
  }
  if (clnt_call(clnt, NULLPROC, (xdrproc_t)xdr_void, NULL, (xdrproc_t)xdr_void,
                NULL, timeout) != RPC_SUCCESS) {
    clnt_perror(clnt, "NULLPROC");
    ++failures;
  }
  if (clnt_call(clnt, SQUARE_PROC, (xdrproc_t)xdr_u_int, (caddr_t)&n,
                (xdrproc_t)xdr_u_int, (caddr_t)&squared,
                timeout) != RPC_SUCCESS ||
      squared != 144) {
    clnt_perror(clnt, "SQUARE");
    ++failures;
  }
  if (clnt_call(clnt, 42, (xdrproc_t)xdr_void, NULL, (xdrproc_t)xdr_void, NULL,
                timeout) != RPC_PROCUNAVAIL) {
    fprintf(stderr, "procedure 42 was not RPC_PROCUNAVAIL\n");
    ++failures;
  } else {
    /* clnt_sperror reads the handle's error for this thread. */
    const char *text = clnt_sperror(clnt, "42");
    if (strstr(text, "Procedure unavailable") == NULL) {
      fprintf(stderr, "clnt_sperror: %s\n", text);
      ++failures;
    }
  }
  clnt_destroy(clnt);
  svc_unreg(SQUARE_PROG, SQUARE_VERS);
  svc_destroy(xprt);
  return failures == 0 ? 0 : 1;
}
