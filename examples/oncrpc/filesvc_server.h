/* What filesvc's server main and its procedures (filesvc_proc.c) share. */
#ifndef RPCRDMA_EXAMPLES_ONCRPC_FILESVC_SERVER_H_
#define RPCRDMA_EXAMPLES_ONCRPC_FILESVC_SERVER_H_

#include <rpc/rpc.h>

/* The served directory, open (O_DIRECTORY); set by main. */
extern int filesvc_dir;

/* rpcgen's dispatcher (filesvc_svc.c), which filesvc.h does not declare. */
void filesvc_1(struct svc_req *rqstp, SVCXPRT *transp);

#endif /* RPCRDMA_EXAMPLES_ONCRPC_FILESVC_SERVER_H_ */
