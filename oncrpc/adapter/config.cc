#include "rpcrdma/oncrpc/config.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/text_proto.h"
#include "rpcrdma/config.h"
#include "rpcrdma/oncrpc/ddp_policy.pb.h"

namespace rpcrdma::oncrpc {
namespace {

absl::Status Prefixed(absl::string_view source, absl::string_view field,
                      const absl::Status& status) {
  return absl::Status(
      status.code(), absl::StrCat(source, ": ", field, ": ", status.message()));
}

}  // namespace

absl::StatusOr<AdapterConfig> AdapterConfig::FromProto(
    const config::AdapterConfig& proto, absl::string_view source_name) {
  AdapterConfig out;
  out.transport = proto.transport();
  if (absl::Status s = ValidateConfig(out.transport,
                                      absl::StrCat(source_name, ": transport"));
      !s.ok()) {
    return s;
  }
  if (proto.has_default_policy()) {
    absl::StatusOr<DdpPolicy> policy =
        DdpPolicy::FromProto(proto.default_policy());
    if (!policy.ok()) {
      return Prefixed(source_name, "default_policy", policy.status());
    }
    out.default_policy = *std::move(policy);
  }
  for (int i = 0; i < proto.programs_size(); ++i) {
    const config::ProgramPolicy& p = proto.programs(i);
    const std::string field = absl::StrCat("programs[", i, "]");
    if (p.program() == 0) {
      return Prefixed(
          source_name, field,
          absl::InvalidArgumentError("program: 0 is not a program"));
    }
    absl::StatusOr<DdpPolicy> policy = DdpPolicy::FromProto(p.policy());
    if (!policy.ok()) return Prefixed(source_name, field, policy.status());
    if (!out.policies
             .emplace(std::make_pair(p.program(), p.version()),
                      *std::move(policy))
             .second) {
      return Prefixed(source_name, field,
                      absl::InvalidArgumentError(
                          absl::StrCat("program ", p.program(), " version ",
                                       p.version(), " has a policy already")));
    }
  }
  out.backchannel = proto.backchannel();
  return out;
}

absl::StatusOr<AdapterConfig> AdapterConfig::Parse(
    absl::string_view text, absl::string_view source_name) {
  config::AdapterConfig proto;
  if (absl::Status s = ParseTextProto(text, source_name, &proto); !s.ok()) {
    return s;
  }
  return FromProto(proto, source_name);
}

absl::StatusOr<AdapterConfig> AdapterConfig::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path, "configuration file");
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

}  // namespace rpcrdma::oncrpc

namespace {

bool_t Take(rdma_oncrpc_config* config,
            absl::StatusOr<rpcrdma::config::TransportConfig> transport) {
  if (!transport.ok()) {
    rpcrdma::oncrpc::SetLastError(transport.status());
    return FALSE;
  }
  config->config.transport = *std::move(transport);
  return TRUE;
}

}  // namespace

extern "C" {

rdma_oncrpc_config* rdma_oncrpc_config_create(void) {
  return new rdma_oncrpc_config{};
}

rdma_oncrpc_config* rdma_oncrpc_config_load(const char* path) {
  if (path == nullptr) {
    rpcrdma::oncrpc::SetLastError("rdma_oncrpc_config_load: NULL");
    return nullptr;
  }
  absl::StatusOr<rpcrdma::oncrpc::AdapterConfig> config =
      rpcrdma::oncrpc::AdapterConfig::Load(path);
  if (!config.ok()) {
    rpcrdma::oncrpc::SetLastError(config.status());
    return nullptr;
  }
  return new rdma_oncrpc_config{*std::move(config)};
}

void rdma_oncrpc_config_destroy(rdma_oncrpc_config* config) { delete config; }

bool_t rdma_oncrpc_config_load_transport(rdma_oncrpc_config* config,
                                         const char* path) {
  if (path == nullptr) {
    rpcrdma::oncrpc::SetLastError("rdma_oncrpc_config_load_transport: NULL");
    return FALSE;
  }
  return Take(config, rpcrdma::LoadConfigFile(path));
}

bool_t rdma_oncrpc_config_parse_transport(rdma_oncrpc_config* config,
                                          const char* text) {
  if (text == nullptr) {
    rpcrdma::oncrpc::SetLastError("rdma_oncrpc_config_parse_transport: NULL");
    return FALSE;
  }
  return Take(config, rpcrdma::ParseConfig(text, "transport config"));
}

void rdma_oncrpc_config_set_ddp_policy(rdma_oncrpc_config* config,
                                       rpcprog_t prog, rpcvers_t vers,
                                       const rdma_ddp_policy* policy) {
  const rpcrdma::oncrpc::DdpPolicy copy =
      policy != nullptr ? policy->policy : rpcrdma::oncrpc::DdpPolicy{};
  if (prog == 0) {
    config->config.default_policy = copy;
  } else {
    config->config.policies[{prog, vers}] = copy;
  }
}

void rdma_oncrpc_config_set_backchannel(rdma_oncrpc_config* config,
                                        bool_t serve) {
  config->config.backchannel = serve != 0;
}

}  // extern "C"
