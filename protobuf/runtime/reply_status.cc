#include "protobuf/runtime/reply_status.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::protobuf::runtime {

absl::Status FromRpcReply(const ReplyHeader& header) {
  absl::Status rpc = ReplyStatus(header);
  if (rpc.ok()) return rpc;
  const std::string what = absl::StrCat("the server answered ", rpc.message());
  if (header.reply_stat == ReplyStat::kDenied) {
    return absl::UnauthenticatedError(what);
  }
  switch (header.accept_stat) {
    case AcceptStat::kProgUnavail:
    case AcceptStat::kProgMismatch:
    case AcceptStat::kProcUnavail:
      return absl::UnimplementedError(
          absl::StrCat(what, ": it does not serve this method"));
    case AcceptStat::kGarbageArgs:
      return absl::InvalidArgumentError(what);
    default:
      return absl::InternalError(what);
  }
}

absl::StatusCode CodeFromWire(uint32_t code) {
  if (code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

}  // namespace rpcrdma::protobuf::runtime
