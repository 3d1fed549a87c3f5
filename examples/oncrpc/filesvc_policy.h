/*
 * filesvc's Upper Layer Binding over RPC-over-RDMA (RFC 8166 §6): what of
 * its calls and replies moves by direct data placement. Client and server
 * use the same one.
 */
#ifndef RPCRDMA_EXAMPLES_ONCRPC_FILESVC_POLICY_H_
#define RPCRDMA_EXAMPLES_ONCRPC_FILESVC_POLICY_H_

#include <rpcrdma/oncrpc/config.h>

/* A configuration with filesvc's DDP policy (every transport setting at
 * its default). Destroy it with rdma_oncrpc_config_destroy once the
 * CLIENT or SVCXPRT is made. */
rdma_oncrpc_config *filesvc_rdma_config(void);

#endif /* RPCRDMA_EXAMPLES_ONCRPC_FILESVC_POLICY_H_ */
