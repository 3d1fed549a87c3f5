/*
 * A program's DDP policy: its Upper Layer Binding (RFC 8166 §6) as the ONC
 * RPC adapter applies it. rpcrdma/oncrpc/ddp_policy.proto documents each
 * setting; this is the same in code, from C and from C++. Give it to a
 * CLIENT or SVCXPRT through rdma_oncrpc_config (rpcrdma/oncrpc/config.h).
 *
 * DDP is off for every message whose credential is RPCSEC_GSS, as the
 * Linux client switches it off under integrity and privacy (the adapter
 * cannot tell the GSS service from the AUTH handle, so it does so for all
 * three services).
 */
#ifndef RPCRDMA_ONCRPC_DDP_POLICY_H_
#define RPCRDMA_ONCRPC_DDP_POLICY_H_

#include <rpc/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdma_ddp_policy rdma_ddp_policy;

/* Defaults: both thresholds 1024, no bound procedures, replies up to
 * 1048576 octets through a reply chunk. */
rdma_ddp_policy *rdma_ddp_policy_create(void);
/* The NFSv3 binding (RFC 8267 §4, as Linux applies it): READ results in a
 * write chunk of up to read_size octets, WRITE data in a read chunk,
 * READLINK, READDIR and READDIRPLUS replies in a reply chunk of up to
 * directory_size octets, every other reply inline (no reply chunk). */
rdma_ddp_policy *rdma_ddp_policy_nfs3(u_int read_size, u_int directory_size);
/* Reads a text-format rpcrdma.oncrpc.config.DdpPolicy. NULL on error, with
 * rdma_oncrpc_error() naming the line or field that was wrong. */
rdma_ddp_policy *rdma_ddp_policy_load(const char *path);
rdma_ddp_policy *rdma_ddp_policy_parse(const char *text);
void rdma_ddp_policy_destroy(rdma_ddp_policy *policy);

void rdma_ddp_policy_set_argument_threshold(rdma_ddp_policy *policy,
                                            u_int octets);
void rdma_ddp_policy_set_result_threshold(rdma_ddp_policy *policy,
                                          u_int octets);
void rdma_ddp_policy_set_default_reply(rdma_ddp_policy *policy, u_int octets);
/* The procedure's results carry one DDP-eligible opaque of at most
 * max_octets (0 removes the binding). */
void rdma_ddp_policy_set_write_chunk(rdma_ddp_policy *policy, rpcproc_t proc,
                                     u_int max_octets);
/* The procedure's reduced reply may be up to max_octets (0: it must fit
 * inline). */
void rdma_ddp_policy_set_reply_chunk(rdma_ddp_policy *policy, rpcproc_t proc,
                                     u_int max_octets);

/* The message of the calling thread's last failure of an rdma_* or
 * *_rdma_* function, or of its last clnt_call on an RPC-over-RDMA CLIENT
 * that did not succeed ("" if none). */
const char *rdma_oncrpc_error(void);

#ifdef __cplusplus
}

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::oncrpc {

namespace config {
class DdpPolicy;
}  // namespace config

struct ProcedureBinding {
  std::optional<uint32_t> write_chunk_octets;
  std::optional<uint32_t> reply_chunk_octets;
};

struct DdpPolicy {
  static constexpr uint32_t kDefaultThreshold = 1024;
  static constexpr uint32_t kDefaultReplyOctets = 1u << 20;
  static constexpr uint32_t kDefaultNfs3ReadSize = 1u << 20;
  static constexpr uint32_t kDefaultNfs3DirectorySize = 64u << 10;

  uint32_t argument_threshold = kDefaultThreshold;
  uint32_t result_threshold = kDefaultThreshold;
  uint32_t default_reply_octets = kDefaultReplyOctets;
  absl::flat_hash_map<uint32_t, ProcedureBinding> procedures;

  static DdpPolicy Nfs3(uint32_t read_size = kDefaultNfs3ReadSize,
                        uint32_t directory_size = kDefaultNfs3DirectorySize);
  // INVALID_ARGUMENT naming the field (an unknown binding, a procedure
  // bound twice).
  static absl::StatusOr<DdpPolicy> FromProto(const config::DdpPolicy &proto);
  // Text format; errors name `source_name` and the line.
  static absl::StatusOr<DdpPolicy> Parse(absl::string_view text,
                                         absl::string_view source_name);
  static absl::StatusOr<DdpPolicy> Load(const std::string &path);

  const ProcedureBinding *Find(uint32_t procedure) const {
    auto it = procedures.find(procedure);
    return it == procedures.end() ? nullptr : &it->second;
  }
  // The write chunk every call of `procedure` offers (0: none).
  uint32_t WriteChunkOctets(uint32_t procedure) const;
  // The largest reduced reply a call of `procedure` accepts.
  uint32_t MaxReplyOctets(uint32_t procedure) const;
};

}  // namespace rpcrdma::oncrpc

struct rdma_ddp_policy {
  rpcrdma::oncrpc::DdpPolicy policy;
};
#endif

#endif /* RPCRDMA_ONCRPC_DDP_POLICY_H_ */
