// ONC RPC message header codec (RFC 5531 §8-§9, Appendix A).
//
// Choices made here:
// - Encoders append with XdrWriter and validate everything first,
//   so `out` is left untouched on failure.
// - Decoders use XdrReader: truncation is OUT_OF_RANGE, a bad value
//   INVALID_ARGUMENT, and both name the RFC 5531 field and its offset. Every
//   length is checked against its bound and against what is left before
//   anything is copied or allocated. XDR padding content is not checked (as
//   in <rpcrdma/xdr.h> and the Linux kernel).
// - Any auth flavor and body decodes; only DecodeAuthSys interprets a body.
//   An AUTH_SYS body must hold exactly one authsys_parms: trailing octets are
//   INVALID_ARGUMENT. (Linux svcauth_unix_accept ignores the body length and
//   parses the fields in line, so a longer body would be misread there.)
#include "rpcrdma/rpc_msg.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/xdr.h"

#define RPC_MSG_RETURN_IF_ERROR(expr)                   \
  do {                                                  \
    if (absl::Status status_ = (expr); !status_.ok()) { \
      return status_;                                   \
    }                                                   \
  } while (0)

namespace rpcrdma {
namespace {

// --- Encoding --------------------------------------------------------------

// Appending to a vector cannot fail (the bodies are bounded far below
// XDR's 32-bit length), so these drop XdrWriter's status.
void PutUint32(std::vector<uint8_t>& out, uint32_t value) {
  (void)XdrWriter(&out).WriteUint32("word", value);
}

// Variable-length opaque (RFC 4506 §4.10): length, octets, zero padding.
// Callers have checked the length against its (small) RFC 5531 bound.
void PutOpaque(std::vector<uint8_t>& out, absl::Span<const uint8_t> bytes) {
  (void)XdrWriter(&out).WriteVarOpaque("opaque", bytes);
}

absl::Status CheckAuthBody(absl::string_view field, const OpaqueAuth& auth) {
  if (auth.body.size() > kMaxAuthBody) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", auth.body.size(),
                     " octets; RFC 5531 §8.2 allows at most ", kMaxAuthBody));
  }
  return absl::OkStatus();
}

void PutAuth(std::vector<uint8_t>& out, const OpaqueAuth& auth) {
  PutUint32(out, auth.flavor);
  PutOpaque(out, auth.body);
}

// --- Decoding --------------------------------------------------------------

absl::Status BadValue(absl::string_view field, uint32_t value, size_t offset,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "bad ", field, " ", value, " at offset ", offset, ": ", expected));
}

// Reads a uint32 and returns where it started in `*at`.
absl::Status ReadAt(XdrReader& r, absl::string_view field, size_t* at,
                    uint32_t* out) {
  *at = r.offset();
  return r.ReadUint32(field, out);
}

// RFC 5531 §8.2 opaque_auth: flavor, then body<400>.
absl::Status ReadAuth(XdrReader& r, absl::string_view flavor_field,
                      absl::string_view body_field, OpaqueAuth* auth) {
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32(flavor_field, &auth->flavor));
  absl::Span<const uint8_t> body;
  RPC_MSG_RETURN_IF_ERROR(r.ReadVarOpaque(body_field, kMaxAuthBody, &body));
  auth->body.assign(body.begin(), body.end());
  return absl::OkStatus();
}

absl::Status ReadMsgType(XdrReader& r, RpcMsgType want) {
  size_t at = 0;
  uint32_t mtype = 0;
  RPC_MSG_RETURN_IF_ERROR(ReadAt(r, "msg_type", &at, &mtype));
  if (mtype != static_cast<uint32_t>(want)) {
    return BadValue(
        "msg_type", mtype, at,
        want == RpcMsgType::kCall ? "expected CALL (0)" : "expected REPLY (1)");
  }
  return absl::OkStatus();
}

absl::Status InAuthSysBody(const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("AUTH_SYS body: ", status.message()));
}

// --- Names -----------------------------------------------------------------

// RFC 5531 §9 enum auth_stat, including the deprecated AUTH_KERB errors and
// the RPCSEC_GSS ones (13, 14).
constexpr std::array<absl::string_view, 15> kAuthStatNames = {
    "AUTH_OK",
    "AUTH_BADCRED",
    "AUTH_REJECTEDCRED",
    "AUTH_BADVERF",
    "AUTH_REJECTEDVERF",
    "AUTH_TOOWEAK",
    "AUTH_INVALIDRESP",
    "AUTH_FAILED",
    "AUTH_KERB_GENERIC",
    "AUTH_TIMEEXPIRE",
    "AUTH_TKT_FILE",
    "AUTH_DECODE",
    "AUTH_NET_ADDR",
    "RPCSEC_GSS_CREDPROBLEM",
    "RPCSEC_GSS_CTXPROBLEM",
};

bool KnownAcceptStat(AcceptStat stat) {
  return static_cast<uint32_t>(stat) <=
         static_cast<uint32_t>(AcceptStat::kSystemErr);
}

}  // namespace

OpaqueAuth AuthNone() {
  return OpaqueAuth{static_cast<uint32_t>(AuthFlavor::kNone), {}};
}

absl::StatusOr<OpaqueAuth> AuthSys(const AuthSysParams& params) {
  if (params.machine_name.size() > kMaxMachineName) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AUTH_SYS machinename is ", params.machine_name.size(),
        " octets; RFC 5531 Appendix A allows at most ", kMaxMachineName));
  }
  if (params.gids.size() > kMaxAuthSysGids) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AUTH_SYS has ", params.gids.size(),
        " gids; RFC 5531 Appendix A allows at most ", kMaxAuthSysGids));
  }
  // At most 4 + 4 + 256 + 4 + 4 + 4 + 64 = 340 octets, within kMaxAuthBody.
  OpaqueAuth auth{static_cast<uint32_t>(AuthFlavor::kSys), {}};
  std::vector<uint8_t>& b = auth.body;
  PutUint32(b, params.stamp);
  PutOpaque(b, absl::Span<const uint8_t>(
                   reinterpret_cast<const uint8_t*>(params.machine_name.data()),
                   params.machine_name.size()));
  PutUint32(b, params.uid);
  PutUint32(b, params.gid);
  PutUint32(b, static_cast<uint32_t>(params.gids.size()));
  for (uint32_t g : params.gids) PutUint32(b, g);
  return auth;
}

absl::StatusOr<AuthSysParams> DecodeAuthSys(const OpaqueAuth& auth) {
  if (auth.flavor != static_cast<uint32_t>(AuthFlavor::kSys)) {
    return absl::InvalidArgumentError(
        absl::StrCat("auth flavor ", auth.flavor, " is not AUTH_SYS (1)"));
  }
  XdrReader r(auth.body);
  AuthSysParams p;
  absl::Span<const uint8_t> name;
  absl::Status s = r.ReadUint32("stamp", &p.stamp);
  if (s.ok()) s = r.ReadVarOpaque("machinename", kMaxMachineName, &name);
  if (s.ok()) s = r.ReadUint32("uid", &p.uid);
  if (s.ok()) s = r.ReadUint32("gid", &p.gid);
  size_t at = 0;
  uint32_t count = 0;
  if (s.ok()) s = ReadAt(r, "gids", &at, &count);
  if (!s.ok()) return InAuthSysBody(s);
  if (count > kMaxAuthSysGids) {
    return InAuthSysBody(absl::InvalidArgumentError(
        absl::StrCat("length ", count, " of gids (offset ", at,
                     ") exceeds the limit of ", kMaxAuthSysGids)));
  }
  if (r.remaining() / 4 < count) {
    return InAuthSysBody(absl::OutOfRangeError(absl::StrCat(
        "truncated at gids (offset ", at, "): ", count, " gids need ",
        4 * size_t{count}, " octets, ", r.remaining(), " remain")));
  }
  p.machine_name.assign(name.begin(), name.end());
  p.gids.resize(count);
  for (uint32_t& g : p.gids) {
    if (s = r.ReadUint32("gids", &g); !s.ok()) return InAuthSysBody(s);
  }
  if (r.remaining() != 0) {
    return InAuthSysBody(absl::InvalidArgumentError(
        absl::StrCat(r.remaining(), " octets follow gids (offset ", r.offset(),
                     ") inside the credential body")));
  }
  return p;
}

absl::Status EncodeCallHeader(const CallHeader& header,
                              std::vector<uint8_t>& out) {
  RPC_MSG_RETURN_IF_ERROR(CheckAuthBody("cred.body", header.credential));
  RPC_MSG_RETURN_IF_ERROR(CheckAuthBody("verf.body", header.verifier));
  PutUint32(out, header.xid);
  PutUint32(out, static_cast<uint32_t>(RpcMsgType::kCall));
  PutUint32(out, kRpcVersion);
  PutUint32(out, header.program);
  PutUint32(out, header.version);
  PutUint32(out, header.procedure);
  PutAuth(out, header.credential);
  PutAuth(out, header.verifier);
  return absl::OkStatus();
}

absl::StatusOr<DecodedCall> DecodeCallHeader(
    absl::Span<const uint8_t> message) {
  XdrReader r(message);
  DecodedCall d;
  CallHeader& h = d.header;
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("xid", &h.xid));
  RPC_MSG_RETURN_IF_ERROR(ReadMsgType(r, RpcMsgType::kCall));
  size_t at = 0;
  uint32_t rpcvers = 0;
  RPC_MSG_RETURN_IF_ERROR(ReadAt(r, "rpcvers", &at, &rpcvers));
  if (rpcvers != kRpcVersion) {
    return BadValue("rpcvers", rpcvers, at,
                    "RFC 5531 §9 defines only version 2");
  }
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("prog", &h.program));
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("vers", &h.version));
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("proc", &h.procedure));
  RPC_MSG_RETURN_IF_ERROR(
      ReadAuth(r, "cred.flavor", "cred.body", &h.credential));
  RPC_MSG_RETURN_IF_ERROR(ReadAuth(r, "verf.flavor", "verf.body", &h.verifier));
  d.body_offset = r.offset();
  return d;
}

absl::Status EncodeReplyHeader(const ReplyHeader& header,
                               std::vector<uint8_t>& out) {
  switch (header.reply_stat) {
    case ReplyStat::kAccepted:
      RPC_MSG_RETURN_IF_ERROR(CheckAuthBody("verf.body", header.verifier));
      if (!KnownAcceptStat(header.accept_stat)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown accept_stat ", static_cast<uint32_t>(header.accept_stat)));
      }
      break;
    case ReplyStat::kDenied:
      if (header.reject_stat != RejectStat::kRpcMismatch &&
          header.reject_stat != RejectStat::kAuthError) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown reject_stat ", static_cast<uint32_t>(header.reject_stat)));
      }
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown reply_stat ", static_cast<uint32_t>(header.reply_stat)));
  }
  PutUint32(out, header.xid);
  PutUint32(out, static_cast<uint32_t>(RpcMsgType::kReply));
  PutUint32(out, static_cast<uint32_t>(header.reply_stat));
  if (header.reply_stat == ReplyStat::kAccepted) {
    PutAuth(out, header.verifier);
    PutUint32(out, static_cast<uint32_t>(header.accept_stat));
    if (header.accept_stat == AcceptStat::kProgMismatch) {
      PutUint32(out, header.mismatch_low);
      PutUint32(out, header.mismatch_high);
    }
  } else {
    PutUint32(out, static_cast<uint32_t>(header.reject_stat));
    if (header.reject_stat == RejectStat::kRpcMismatch) {
      PutUint32(out, header.mismatch_low);
      PutUint32(out, header.mismatch_high);
    } else {
      PutUint32(out, header.auth_stat);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DecodedReply> DecodeReplyHeader(
    absl::Span<const uint8_t> message) {
  XdrReader r(message);
  DecodedReply d;
  ReplyHeader& h = d.header;
  RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("xid", &h.xid));
  RPC_MSG_RETURN_IF_ERROR(ReadMsgType(r, RpcMsgType::kReply));
  size_t at = 0;
  uint32_t stat = 0;
  RPC_MSG_RETURN_IF_ERROR(ReadAt(r, "reply_stat", &at, &stat));
  if (stat == static_cast<uint32_t>(ReplyStat::kAccepted)) {
    h.reply_stat = ReplyStat::kAccepted;
    RPC_MSG_RETURN_IF_ERROR(
        ReadAuth(r, "verf.flavor", "verf.body", &h.verifier));
    RPC_MSG_RETURN_IF_ERROR(ReadAt(r, "accept_stat", &at, &stat));
    h.accept_stat = static_cast<AcceptStat>(stat);
    if (!KnownAcceptStat(h.accept_stat)) {
      return BadValue("accept_stat", stat, at,
                      "RFC 5531 §9 defines SUCCESS (0) to SYSTEM_ERR (5)");
    }
    if (h.accept_stat == AcceptStat::kProgMismatch) {
      RPC_MSG_RETURN_IF_ERROR(
          r.ReadUint32("mismatch_info.low", &h.mismatch_low));
      RPC_MSG_RETURN_IF_ERROR(
          r.ReadUint32("mismatch_info.high", &h.mismatch_high));
    }
  } else if (stat == static_cast<uint32_t>(ReplyStat::kDenied)) {
    h.reply_stat = ReplyStat::kDenied;
    RPC_MSG_RETURN_IF_ERROR(ReadAt(r, "reject_stat", &at, &stat));
    if (stat == static_cast<uint32_t>(RejectStat::kRpcMismatch)) {
      h.reject_stat = RejectStat::kRpcMismatch;
      RPC_MSG_RETURN_IF_ERROR(
          r.ReadUint32("mismatch_info.low", &h.mismatch_low));
      RPC_MSG_RETURN_IF_ERROR(
          r.ReadUint32("mismatch_info.high", &h.mismatch_high));
    } else if (stat == static_cast<uint32_t>(RejectStat::kAuthError)) {
      h.reject_stat = RejectStat::kAuthError;
      RPC_MSG_RETURN_IF_ERROR(r.ReadUint32("auth_stat", &h.auth_stat));
    } else {
      return BadValue("reject_stat", stat, at,
                      "expected RPC_MISMATCH (0) or AUTH_ERROR (1)");
    }
  } else {
    return BadValue("reply_stat", stat, at,
                    "expected MSG_ACCEPTED (0) or MSG_DENIED (1)");
  }
  d.body_offset = r.offset();
  return d;
}

// Mapping to absl codes: the program or procedure is not there
// (PROG_UNAVAIL, PROC_UNAVAIL) is UNIMPLEMENTED; a version outside what the
// peer supports (PROG_MISMATCH, RPC_MISMATCH) is FAILED_PRECONDITION with the
// supported range "low..high"; GARBAGE_ARGS says our arguments did not decode,
// INVALID_ARGUMENT; SYSTEM_ERR is INTERNAL; AUTH_ERROR is UNAUTHENTICATED
// with the auth_stat name and number. A header holding an enum value outside
// RFC 5531 (only possible if built by hand) is UNKNOWN.
absl::Status ReplyStatus(const ReplyHeader& header) {
  auto range = [&](absl::string_view what) {
    return absl::StrCat(what, " ", header.mismatch_low, "..",
                        header.mismatch_high);
  };
  if (header.reply_stat == ReplyStat::kAccepted) {
    switch (header.accept_stat) {
      case AcceptStat::kSuccess:
        return absl::OkStatus();
      case AcceptStat::kProgUnavail:
        return absl::UnimplementedError("PROG_UNAVAIL");
      case AcceptStat::kProgMismatch:
        return absl::FailedPreconditionError(range("PROG_MISMATCH"));
      case AcceptStat::kProcUnavail:
        return absl::UnimplementedError("PROC_UNAVAIL");
      case AcceptStat::kGarbageArgs:
        return absl::InvalidArgumentError("GARBAGE_ARGS");
      case AcceptStat::kSystemErr:
        return absl::InternalError("SYSTEM_ERR");
    }
    return absl::UnknownError(absl::StrCat(
        "unknown accept_stat ", static_cast<uint32_t>(header.accept_stat)));
  }
  if (header.reply_stat == ReplyStat::kDenied) {
    switch (header.reject_stat) {
      case RejectStat::kRpcMismatch:
        return absl::FailedPreconditionError(range("RPC_MISMATCH"));
      case RejectStat::kAuthError: {
        absl::string_view name = header.auth_stat < kAuthStatNames.size()
                                     ? kAuthStatNames[header.auth_stat]
                                     : "unknown auth_stat";
        return absl::UnauthenticatedError(
            absl::StrCat("AUTH_ERROR ", name, " (", header.auth_stat, ")"));
      }
    }
    return absl::UnknownError(absl::StrCat(
        "unknown reject_stat ", static_cast<uint32_t>(header.reject_stat)));
  }
  return absl::UnknownError(absl::StrCat(
      "unknown reply_stat ", static_cast<uint32_t>(header.reply_stat)));
}

}  // namespace rpcrdma

#undef RPC_MSG_RETURN_IF_ERROR
