#include "tools/dump/protobuf_services.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpcrdma/protobuf/program.h"

namespace rpcrdma::dump {
namespace {

constexpr std::array<absl::string_view, 2> kStreamIdAndSeq = {"stream_id",
                                                              "seq"};
constexpr std::array<absl::string_view, 1> kStreamId = {"stream_id"};
constexpr std::array<absl::string_view, 2> kStreamIdAndCount = {"stream_id",
                                                                "count"};

// One entry per stream control procedure the adapter serves (a SEND's
// payload, after its seq, is not decoded).
const std::array<StreamProcedure, 4> kStreamProcedures = {{
    {protobuf::kStreamNextProcedure, "NEXT", kStreamIdAndSeq},
    {protobuf::kStreamCancelProcedure, "CANCEL", kStreamId},
    {protobuf::kStreamSendProcedure, "SEND", kStreamIdAndSeq},
    {protobuf::kStreamHalfCloseProcedure, "HALF_CLOSE", kStreamIdAndCount},
}};

}  // namespace

const StreamProcedure* FindStreamProcedure(uint32_t procedure) {
  for (const StreamProcedure& p : kStreamProcedures) {
    if (p.number == procedure) return &p;
  }
  return nullptr;
}

absl::StatusOr<ProtobufServices> ProtobufServices::Create(
    std::vector<ProtobufService> services) {
  ProtobufServices result;
  for (ProtobufService& service : services) {
    const uint32_t program = protobuf::ProgramNumberFor(service.full_name);
    auto [it, inserted] =
        result.by_program_.try_emplace(program, result.services_.size());
    if (!inserted) {
      const std::string& other = result.services_[it->second].full_name;
      if (other == service.full_name) continue;
      return absl::AlreadyExistsError(
          absl::StrCat("services ", other, " and ", service.full_name,
                       " have the same program number 0x", absl::Hex(program),
                       ": the dump cannot tell their calls apart"));
    }
    result.services_.push_back(std::move(service));
  }
  return result;
}

const ProtobufService* ProtobufServices::Find(uint32_t program,
                                              uint32_t version) const {
  if (version != protobuf::kProgramVersion) return nullptr;
  auto it = by_program_.find(program);
  return it == by_program_.end() ? nullptr : &services_[it->second];
}

const ProtobufMethod* FindMethod(const ProtobufService& service,
                                 uint32_t procedure) {
  if (procedure == 0 || procedure > service.methods.size()) return nullptr;
  return &service.methods[procedure - 1];
}

}  // namespace rpcrdma::dump
