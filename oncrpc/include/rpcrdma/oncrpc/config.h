/*
 * How an RPC-over-RDMA CLIENT (clnt_rdma.h) or SVCXPRT (svc_rdma.h) is
 * set up: the transport configuration (rpcrdma.config.TransportConfig, the
 * schema in rpcrdma/config.proto, every field with its default), the DDP
 * policy of each program (ddp_policy.h), and whether a CLIENT serves calls
 * its server makes back (RFC 8167).
 *
 * A configuration is copied by the functions that take it: destroy it once
 * the handles are made.
 */
#ifndef RPCRDMA_ONCRPC_CONFIG_H_
#define RPCRDMA_ONCRPC_CONFIG_H_

#include <rpc/types.h>

#include "rpcrdma/oncrpc/ddp_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdma_oncrpc_config rdma_oncrpc_config;

/* Every setting at its default. */
rdma_oncrpc_config *rdma_oncrpc_config_create(void);
/* Every setting from a text-format rpcrdma.oncrpc.config.AdapterConfig
 * file (rpcrdma/oncrpc/ddp_policy.proto: the transport, the default DDP
 * policy, each program's, the backchannel). NULL when it is not valid,
 * with rdma_oncrpc_error() naming the file, and the line or the field. */
rdma_oncrpc_config *rdma_oncrpc_config_load(const char *path);
void rdma_oncrpc_config_destroy(rdma_oncrpc_config *config);

/* The transport configuration from a text-format file, or from text.
 * FALSE when it is not valid, with rdma_oncrpc_error() naming the line or
 * field; the configuration is then unchanged. */
bool_t rdma_oncrpc_config_load_transport(rdma_oncrpc_config *config,
                                         const char *path);
bool_t rdma_oncrpc_config_parse_transport(rdma_oncrpc_config *config,
                                          const char *text);

/* The DDP policy of program `prog` version `vers` (copied), or, with prog
 * 0, of every program that has none of its own. */
void rdma_oncrpc_config_set_ddp_policy(rdma_oncrpc_config *config,
                                       rpcprog_t prog, rpcvers_t vers,
                                       const rdma_ddp_policy *policy);

/* A CLIENT made with this configuration serves backward-direction calls
 * (RFC 8167) through the SVCXPRT svc_rdma_backchannel() returns. Off by
 * default (the client then drops such calls, as Linux does without a
 * backchannel service). */
void rdma_oncrpc_config_set_backchannel(rdma_oncrpc_config *config,
                                        bool_t serve);

#ifdef __cplusplus
}

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/server.h"

namespace rpcrdma::oncrpc {

namespace config {
class AdapterConfig;
}  // namespace config

struct AdapterConfig {
  // Every field unset: every default.
  ::rpcrdma::config::TransportConfig transport;
  // For programs without a policy of their own.
  DdpPolicy default_policy;
  // By (program, version).
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, DdpPolicy> policies;
  // See rdma_oncrpc_config_set_backchannel.
  bool backchannel = false;
  // The runtime whose loops drive the handles; Runtime::Default() when
  // null.
  std::shared_ptr<Runtime> runtime;
  // An SVCXPRT's connections as they come and go (ServerOptions::
  // on_connection, rpcrdma/server.h: on the thread that reads the
  // connections, svc_run's or the adapter's, see svc_rdma.h; must not
  // block);
  // ServerOf(xprt)->connection_info(event.connection) says what each
  // settled.
  std::function<void(const ServerConnectionEvent &)> on_connection;

  // From its text form (rpcrdma.oncrpc.config.AdapterConfig); errors name
  // `source_name` and the line, or the field ("<source>: transport:
  // credits.max_requests: ...", "<source>: programs[2]: ...").
  static absl::StatusOr<AdapterConfig> FromProto(
      const config::AdapterConfig &proto, absl::string_view source_name);
  static absl::StatusOr<AdapterConfig> Parse(absl::string_view text,
                                             absl::string_view source_name);
  static absl::StatusOr<AdapterConfig> Load(const std::string &path);

  const DdpPolicy &PolicyFor(uint32_t program, uint32_t version) const {
    auto it = policies.find({program, version});
    return it == policies.end() ? default_policy : it->second;
  }
};

}  // namespace rpcrdma::oncrpc

struct rdma_oncrpc_config {
  rpcrdma::oncrpc::AdapterConfig config;
};
#endif

#endif /* RPCRDMA_ONCRPC_CONFIG_H_ */
