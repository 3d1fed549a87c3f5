// The ONC RPC message header (RFC 5531 §8-§9, §14): the call header up to
// the procedure's arguments and the reply header up to the procedure's
// results, with the AUTH_NONE and AUTH_SYS (RFC 5531 Appendix A) flavors.
// rpcrdma carries whole RPC messages (CallRequest::xdr and
// IncomingCall::message, HandlerReply::xdr and Reply::xdr); a program builds
// and reads their headers with these and its arguments and results with
// <rpcrdma/xdr.h>.
//
// Programs put their own XDR arguments after EncodeCallHeader's output and
// read their results from DecodedReply::body_offset on. Decoders read only
// within the given span, check every length against what is left before
// using it, and name the field and offset of what was wrong.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RPC_MSG_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RPC_MSG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rpcrdma {

// RFC 5531 §9: enum msg_type { CALL = 0, REPLY = 1 }.
enum class RpcMsgType : uint32_t { kCall = 0, kReply = 1 };

// RFC 5531 §9: rpcvers is always 2.
constexpr uint32_t kRpcVersion = 2;
// RFC 5531 §8.2: the body of an opaque_auth is at most 400 octets.
constexpr uint32_t kMaxAuthBody = 400;
// RFC 5531 Appendix A: machinename<255>, gids<16>.
constexpr uint32_t kMaxMachineName = 255;
constexpr uint32_t kMaxAuthSysGids = 16;

// RFC 5531 §8.2 auth_flavor (only the two this codec builds are named; any
// flavor decodes).
enum class AuthFlavor : uint32_t { kNone = 0, kSys = 1 };

struct OpaqueAuth {
  uint32_t flavor = 0;
  std::vector<uint8_t> body;  // at most kMaxAuthBody octets

  friend bool operator==(const OpaqueAuth&, const OpaqueAuth&) = default;
};

// RFC 5531 Appendix A: struct authsys_parms.
struct AuthSysParams {
  uint32_t stamp = 0;
  std::string machine_name;  // at most kMaxMachineName octets
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> gids;  // at most kMaxAuthSysGids

  friend bool operator==(const AuthSysParams&, const AuthSysParams&) = default;
};

OpaqueAuth AuthNone();
// INVALID_ARGUMENT when a length exceeds its RFC 5531 bound.
absl::StatusOr<OpaqueAuth> AuthSys(const AuthSysParams& params);
// Decodes the body of an AUTH_SYS credential (flavor must be kSys).
absl::StatusOr<AuthSysParams> DecodeAuthSys(const OpaqueAuth& auth);

// RFC 5531 §9: the call_body fields before the procedure's arguments.
struct CallHeader {
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  OpaqueAuth credential;
  OpaqueAuth verifier;

  friend bool operator==(const CallHeader&, const CallHeader&) = default;
};

// Appends the XDR of `header` (msg_type CALL, rpcvers 2) to `out`.
// INVALID_ARGUMENT when an auth body exceeds kMaxAuthBody.
absl::Status EncodeCallHeader(const CallHeader& header,
                              std::vector<uint8_t>& out);

struct DecodedCall {
  CallHeader header;
  size_t body_offset = 0;  // where the procedure's arguments start
};
// INVALID_ARGUMENT for a message that is not a CALL, rpcvers other than 2,
// or an auth body over kMaxAuthBody; OUT_OF_RANGE when truncated.
absl::StatusOr<DecodedCall> DecodeCallHeader(absl::Span<const uint8_t> message);

// RFC 5531 §9 reply_stat, accept_stat, reject_stat, auth_stat.
enum class ReplyStat : uint32_t { kAccepted = 0, kDenied = 1 };
enum class AcceptStat : uint32_t {
  kSuccess = 0,
  kProgUnavail = 1,
  kProgMismatch = 2,
  kProcUnavail = 3,
  kGarbageArgs = 4,
  kSystemErr = 5,
};
enum class RejectStat : uint32_t { kRpcMismatch = 0, kAuthError = 1 };

// A reply header. Which fields mean something depends on the arms taken:
// - kAccepted: verifier, accept_stat; for kProgMismatch also
//   mismatch_low/high; for kSuccess the results follow at body_offset.
// - kDenied: reject_stat; for kRpcMismatch mismatch_low/high, for
//   kAuthError auth_stat (RFC 5531 §9 auth_stat, any value).
struct ReplyHeader {
  uint32_t xid = 0;
  ReplyStat reply_stat = ReplyStat::kAccepted;
  OpaqueAuth verifier;
  AcceptStat accept_stat = AcceptStat::kSuccess;
  RejectStat reject_stat = RejectStat::kRpcMismatch;
  uint32_t mismatch_low = 0;
  uint32_t mismatch_high = 0;
  uint32_t auth_stat = 0;

  friend bool operator==(const ReplyHeader&, const ReplyHeader&) = default;
};

absl::Status EncodeReplyHeader(const ReplyHeader& header,
                               std::vector<uint8_t>& out);

struct DecodedReply {
  ReplyHeader header;
  size_t body_offset = 0;  // where the results start (kSuccess)
};
// INVALID_ARGUMENT for a message that is not a REPLY or an unknown
// reply_stat/accept_stat/reject_stat; OUT_OF_RANGE when truncated.
absl::StatusOr<DecodedReply> DecodeReplyHeader(
    absl::Span<const uint8_t> message);

// OK for an accepted, successful reply; otherwise a status whose message
// says what the peer answered (e.g. "PROG_MISMATCH 3..4",
// "AUTH_ERROR AUTH_BADCRED (1)").
absl::Status ReplyStatus(const ReplyHeader& header);

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_RPC_MSG_H_
