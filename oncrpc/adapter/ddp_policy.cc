#include "rpcrdma/oncrpc/ddp_policy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/text_proto.h"
#include "rpcrdma/oncrpc/ddp_policy.pb.h"

namespace rpcrdma::oncrpc {
namespace {

// RFC 1813 §3.3 procedure numbers the NFSv3 binding names.
constexpr uint32_t kNfs3Readlink = 5;
constexpr uint32_t kNfs3Read = 6;
constexpr uint32_t kNfs3Readdir = 16;
constexpr uint32_t kNfs3Readdirplus = 17;

}  // namespace

DdpPolicy DdpPolicy::Nfs3(uint32_t read_size, uint32_t directory_size) {
  DdpPolicy policy;
  // WRITE data needs no binding of its own: it is the one large opaque of
  // the arguments, so the argument threshold makes it a read chunk.
  policy.procedures[kNfs3Read].write_chunk_octets = read_size;
  for (uint32_t procedure : {kNfs3Readlink, kNfs3Readdir, kNfs3Readdirplus}) {
    policy.procedures[procedure].reply_chunk_octets = directory_size;
  }
  // Every other reply fits inline: RFC 1813's other results (READ's
  // without its data) are a few hundred octets, and inline thresholds are
  // at least 1024 (RFC 8166 §3.3.2). So no reply chunk, as the Linux
  // client offers none: nfsd uses any reply chunk it is offered (an RDMA
  // Write for each GETATTR), and one offered beside a READ's write chunk
  // must hold the READ's data as well or nfsd drops the connection.
  policy.default_reply_octets = 0;
  return policy;
}

absl::StatusOr<DdpPolicy> DdpPolicy::FromProto(const config::DdpPolicy& proto) {
  DdpPolicy policy;
  if (proto.binding() == "nfs3") {
    policy = Nfs3(proto.has_nfs3_read_size() ? proto.nfs3_read_size()
                                             : kDefaultNfs3ReadSize,
                  proto.has_nfs3_directory_size() ? proto.nfs3_directory_size()
                                                  : kDefaultNfs3DirectorySize);
  } else if (!proto.binding().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("binding: \"", proto.binding(),
                     "\" is not a ready binding (known: \"nfs3\")"));
  } else if (proto.has_nfs3_read_size() || proto.has_nfs3_directory_size()) {
    return absl::InvalidArgumentError(
        "nfs3_read_size, nfs3_directory_size: only with binding \"nfs3\"");
  }
  if (proto.has_argument_threshold()) {
    policy.argument_threshold = proto.argument_threshold();
  }
  if (proto.has_result_threshold()) {
    policy.result_threshold = proto.result_threshold();
  }
  if (proto.has_default_reply_octets()) {
    policy.default_reply_octets = proto.default_reply_octets();
  }
  absl::flat_hash_map<uint32_t, ProcedureBinding> own;
  for (int i = 0; i < proto.procedures_size(); ++i) {
    const config::ProcedureBinding& p = proto.procedures(i);
    ProcedureBinding binding;
    if (p.has_write_chunk_octets()) {
      binding.write_chunk_octets = p.write_chunk_octets();
    }
    if (p.has_reply_chunk_octets()) {
      binding.reply_chunk_octets = p.reply_chunk_octets();
    }
    if (!own.emplace(p.procedure(), binding).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "procedures[", i, "]: procedure ", p.procedure(), " is bound twice"));
    }
  }
  for (auto& [procedure, binding] : own) {
    policy.procedures[procedure] = binding;
  }
  return policy;
}

absl::StatusOr<DdpPolicy> DdpPolicy::Parse(absl::string_view text,
                                           absl::string_view source_name) {
  config::DdpPolicy proto;
  if (absl::Status s = ParseTextProto(text, source_name, &proto); !s.ok()) {
    return s;
  }
  absl::StatusOr<DdpPolicy> policy = FromProto(proto);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": ", policy.status().message()));
  }
  return policy;
}

absl::StatusOr<DdpPolicy> DdpPolicy::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path, "DDP policy file");
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

uint32_t DdpPolicy::WriteChunkOctets(uint32_t procedure) const {
  const ProcedureBinding* binding = Find(procedure);
  return binding != nullptr ? binding->write_chunk_octets.value_or(0) : 0;
}

uint32_t DdpPolicy::MaxReplyOctets(uint32_t procedure) const {
  const ProcedureBinding* binding = Find(procedure);
  if (binding != nullptr && binding->reply_chunk_octets.has_value()) {
    return *binding->reply_chunk_octets;
  }
  // NULLPROC's reply is the reply header alone (RFC 5531 §12.1).
  return procedure == 0 ? 0 : default_reply_octets;
}

}  // namespace rpcrdma::oncrpc

using rpcrdma::oncrpc::DdpPolicy;

namespace {

rdma_ddp_policy* Wrap(absl::StatusOr<DdpPolicy> policy) {
  if (!policy.ok()) {
    rpcrdma::oncrpc::SetLastError(policy.status());
    return nullptr;
  }
  return new rdma_ddp_policy{*std::move(policy)};
}

}  // namespace

extern "C" {

rdma_ddp_policy* rdma_ddp_policy_create(void) { return new rdma_ddp_policy{}; }

rdma_ddp_policy* rdma_ddp_policy_nfs3(u_int read_size, u_int directory_size) {
  return new rdma_ddp_policy{DdpPolicy::Nfs3(read_size, directory_size)};
}

rdma_ddp_policy* rdma_ddp_policy_load(const char* path) {
  if (path == nullptr) return Wrap(absl::InvalidArgumentError("path: NULL"));
  return Wrap(DdpPolicy::Load(path));
}

rdma_ddp_policy* rdma_ddp_policy_parse(const char* text) {
  if (text == nullptr) return Wrap(absl::InvalidArgumentError("text: NULL"));
  return Wrap(DdpPolicy::Parse(text, "policy"));
}

void rdma_ddp_policy_destroy(rdma_ddp_policy* policy) { delete policy; }

void rdma_ddp_policy_set_argument_threshold(rdma_ddp_policy* policy,
                                            u_int octets) {
  policy->policy.argument_threshold = octets;
}

void rdma_ddp_policy_set_result_threshold(rdma_ddp_policy* policy,
                                          u_int octets) {
  policy->policy.result_threshold = octets;
}

void rdma_ddp_policy_set_default_reply(rdma_ddp_policy* policy, u_int octets) {
  policy->policy.default_reply_octets = octets;
}

void rdma_ddp_policy_set_write_chunk(rdma_ddp_policy* policy, rpcproc_t proc,
                                     u_int max_octets) {
  auto& binding = policy->policy.procedures[proc];
  if (max_octets == 0) {
    binding.write_chunk_octets.reset();
  } else {
    binding.write_chunk_octets = max_octets;
  }
}

void rdma_ddp_policy_set_reply_chunk(rdma_ddp_policy* policy, rpcproc_t proc,
                                     u_int max_octets) {
  policy->policy.procedures[proc].reply_chunk_octets = max_octets;
}

}  // extern "C"
