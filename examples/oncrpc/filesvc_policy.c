/* filesvc's DDP policy, in C; or read from the text-format file that
 * FILESVC_DDP_POLICY names (filesvc.ddp.textproto is the same policy). */
#include "filesvc_policy.h"

#include <rpcrdma/oncrpc/ddp_policy.h>
#include <stdio.h>
#include <stdlib.h>

#include "filesvc.h"

static rdma_ddp_policy *filesvc_policy(void) {
  rdma_ddp_policy *policy = rdma_ddp_policy_create();
  /* READ's data comes back in a write chunk: every READ offers one of
   * FILESVC_MAXIO octets and the server RDMA-Writes the data into it. */
  rdma_ddp_policy_set_write_chunk(policy, FILESVC_READ, FILESVC_MAXIO);
  /* A LIST of a large directory may be long: it may come back in a reply
   * chunk of up to 256 KiB. */
  rdma_ddp_policy_set_reply_chunk(policy, FILESVC_LIST, 256 * 1024);
  /* The other replies fit inline (READ's without its data): their calls
   * offer no reply chunk. WRITE's data needs nothing here: an opaque of at
   * least the argument threshold (1024 octets) goes as a read chunk by
   * default. */
  rdma_ddp_policy_set_default_reply(policy, 0);
  return policy;
}

rdma_oncrpc_config *filesvc_rdma_config(void) {
  const char *path = getenv("FILESVC_DDP_POLICY");
  rdma_ddp_policy *policy =
      path != NULL ? rdma_ddp_policy_load(path) : filesvc_policy();
  if (policy == NULL) {
    fprintf(stderr, "%s\n", rdma_oncrpc_error());
    exit(1);
  }
  rdma_oncrpc_config *config = rdma_oncrpc_config_create();
  rdma_oncrpc_config_set_ddp_policy(config, FILESVC, FILESVC_V1, policy);
  rdma_ddp_policy_destroy(policy);
  return config;
}
