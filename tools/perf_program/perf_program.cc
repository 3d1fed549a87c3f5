#include "tools/perf_program/perf_program.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::perf {
namespace {

// RFC 5531 §9 constants (this program writes its own headers, AUTH_NONE
// only, rather than use <rpcrdma/rpc_msg.h>, to keep the calls it times as
// cheap as a hand-written client's).
constexpr uint32_t kCall = 0;
constexpr uint32_t kReply = 1;
constexpr uint32_t kRpcVersion = 2;
constexpr uint32_t kMsgAccepted = 0;
constexpr uint32_t kMsgDenied = 1;
constexpr uint32_t kAuthNone = 0;
// RFC 5531 §8.2: opaque_auth bodies are at most 400 octets.
constexpr uint32_t kMaxAuthBody = 400;

// Appending to a vector cannot fail.
void PutUint32(std::vector<uint8_t>& out, uint32_t value) {
  (void)XdrWriter(&out).WriteUint32("word", value);
}

// Reads XDR items (RFC 4506) from a message with rpcrdma::XdrReader; every
// failure is INVALID_ARGUMENT in this program's words, naming the item that
// does not fit.
class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> data)
      : xdr_(data), size_(data.size()) {}

  absl::StatusOr<uint32_t> Uint32(const char* what) {
    uint32_t value = 0;
    if (!xdr_.ReadUint32(what, &value).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the message ends before ", what, " (", size_, " octets)"));
    }
    return value;
  }

  // An opaque_auth (flavor, body of at most kMaxAuthBody octets).
  absl::Status SkipAuth(const char* what) {
    absl::StatusOr<uint32_t> flavor = Uint32(what);
    if (!flavor.ok()) return flavor.status();
    absl::StatusOr<uint32_t> length = Uint32(what);
    if (!length.ok()) return length.status();
    absl::Span<const uint8_t> body;
    if (*length > kMaxAuthBody ||
        !xdr_.ReadFixedOpaque(what, *length, &body).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " body of ", *length, " octets does not fit"));
    }
    return absl::OkStatus();
  }

  absl::Span<const uint8_t> Rest() const { return xdr_.rest(); }

 private:
  XdrReader xdr_;
  size_t size_;
};

std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t procedure) {
  std::vector<uint8_t> out;
  out.reserve(48);
  for (uint32_t word : {xid, kCall, kRpcVersion, kProgram, kVersion, procedure,
                        kAuthNone, 0u, kAuthNone, 0u}) {
    PutUint32(out, word);
  }
  return out;
}

// The results of the accepted, successful reply to `xid`.
absl::StatusOr<absl::Span<const uint8_t>> DecodeResults(
    absl::Span<const uint8_t> reply, uint32_t xid) {
  Reader in(reply);
  absl::StatusOr<uint32_t> got_xid = in.Uint32("the XID");
  if (!got_xid.ok()) return got_xid.status();
  if (*got_xid != xid) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the reply answers XID 0x%08x, not 0x%08x", *got_xid, xid));
  }
  absl::StatusOr<uint32_t> type = in.Uint32("msg_type");
  if (!type.ok()) return type.status();
  if (*type != kReply) {
    return absl::InvalidArgumentError(
        absl::StrCat("msg_type ", *type, " is not REPLY"));
  }
  absl::StatusOr<uint32_t> reply_stat = in.Uint32("reply_stat");
  if (!reply_stat.ok()) return reply_stat.status();
  if (*reply_stat == kMsgDenied) {
    return absl::FailedPreconditionError(
        "the server denied the call (MSG_DENIED, RFC 5531 §9)");
  }
  if (*reply_stat != kMsgAccepted) {
    return absl::InvalidArgumentError(
        absl::StrCat("reply_stat ", *reply_stat, " is unknown"));
  }
  if (absl::Status s = in.SkipAuth("the verifier"); !s.ok()) return s;
  absl::StatusOr<uint32_t> accept_stat = in.Uint32("accept_stat");
  if (!accept_stat.ok()) return accept_stat.status();
  switch (static_cast<AcceptStat>(*accept_stat)) {
    case AcceptStat::kSuccess:
      return in.Rest();
    case AcceptStat::kProgUnavail:
      return absl::FailedPreconditionError(absl::StrFormat(
          "the server does not serve program 0x%08x (PROG_UNAVAIL): is it "
          "rpcrdma-perf server?",
          kProgram));
    case AcceptStat::kProgMismatch:
      return absl::FailedPreconditionError(absl::StrFormat(
          "the server does not serve version %u of program 0x%08x "
          "(PROG_MISMATCH)",
          kVersion, kProgram));
    case AcceptStat::kProcUnavail:
      return absl::FailedPreconditionError(
          "the server does not know the procedure (PROC_UNAVAIL)");
    case AcceptStat::kGarbageArgs:
      return absl::FailedPreconditionError(
          "the server could not decode the arguments (GARBAGE_ARGS)");
    case AcceptStat::kSystemErr:
      return absl::FailedPreconditionError(
          "the server could not carry the call out (SYSTEM_ERR)");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the server refused the call (accept_stat ", *accept_stat, ")"));
}

}  // namespace

absl::StatusOr<DecodedCall> DecodeCall(absl::Span<const uint8_t> message) {
  Reader in(message);
  DecodedCall call;
  absl::StatusOr<uint32_t> xid = in.Uint32("the XID");
  if (!xid.ok()) return xid.status();
  call.xid = *xid;
  absl::StatusOr<uint32_t> type = in.Uint32("msg_type");
  if (!type.ok()) return type.status();
  if (*type != kCall) {
    return absl::InvalidArgumentError(
        absl::StrCat("msg_type ", *type, " is not CALL"));
  }
  absl::StatusOr<uint32_t> rpc_version = in.Uint32("rpcvers");
  if (!rpc_version.ok()) return rpc_version.status();
  if (*rpc_version != kRpcVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("rpcvers ", *rpc_version, " is not 2"));
  }
  for (uint32_t* field : {&call.program, &call.version, &call.procedure}) {
    absl::StatusOr<uint32_t> value = in.Uint32("the call header");
    if (!value.ok()) return value.status();
    *field = *value;
  }
  if (absl::Status s = in.SkipAuth("the credential"); !s.ok()) return s;
  if (absl::Status s = in.SkipAuth("the verifier"); !s.ok()) return s;
  call.arguments = in.Rest();
  return call;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid, AcceptStat status) {
  std::vector<uint8_t> out;
  out.reserve(kMaxReducedReply);
  for (uint32_t word : {xid, kReply, kMsgAccepted, kAuthNone, 0u,
                        static_cast<uint32_t>(status)}) {
    PutUint32(out, word);
  }
  if (status == AcceptStat::kProgMismatch) {
    PutUint32(out, kVersion);  // low
    PutUint32(out, kVersion);  // high
  }
  return out;
}

void ServeCall(IncomingCall call, Responder responder) {
  // A reply to a connection lost meanwhile is dropped by the Server; there
  // is nobody to tell, so Send's status is not needed here.
  absl::StatusOr<DecodedCall> decoded = DecodeCall(call.message.span());
  if (!decoded.ok()) {
    (void)responder.Send({ReplyHeader(call.xid, AcceptStat::kGarbageArgs), {}});
    return;
  }
  if (decoded->program != kProgram) {
    (void)responder.Send({ReplyHeader(call.xid, AcceptStat::kProgUnavail), {}});
    return;
  }
  if (decoded->version != kVersion) {
    (void)responder.Send(
        {ReplyHeader(call.xid, AcceptStat::kProgMismatch), {}});
    return;
  }
  HandlerReply reply;
  switch (decoded->procedure) {
    case kNullProcedure:
      reply.xdr = ReplyHeader(call.xid, AcceptStat::kSuccess);
      break;
    case kEchoProcedure: {
      Reader args(decoded->arguments);
      absl::StatusOr<uint32_t> length = args.Uint32("the ECHO length");
      if (!length.ok() || args.Rest().size() < *length) {
        reply.xdr = ReplyHeader(call.xid, AcceptStat::kGarbageArgs);
        break;
      }
      reply.xdr = ReplyHeader(call.xid, AcceptStat::kSuccess);
      PutUint32(reply.xdr, *length);
      // DDP-eligible: the length word stays in the stream and the octets
      // go at the position after it, into the call's write chunk, straight
      // from the call's own buffer, which the reply keeps until the
      // transport is done with it (no copy in the RPC layer).
      const absl::Span<const uint8_t> data = args.Rest().first(*length);
      reply.results.push_back(
          ReplyItem::Lent(static_cast<uint32_t>(reply.xdr.size()), data));
      reply.on_released =
          [kept = std::make_shared<Buffer>(std::move(call.message))] {};
      break;
    }
    default:
      reply.xdr = ReplyHeader(call.xid, AcceptStat::kProcUnavail);
      break;
  }
  (void)responder.Send(std::move(reply));
}

CallRequest NullCall(uint32_t xid) {
  CallRequest request;
  request.xdr = CallHeader(xid, kNullProcedure);
  request.max_reply_size = kMaxReducedReply;
  return request;
}

CallRequest EchoCall(uint32_t xid, absl::Span<const uint8_t> argument,
                     absl::Span<uint8_t> result) {
  CallRequest request;
  request.xdr = CallHeader(xid, kEchoProcedure);
  PutUint32(request.xdr, static_cast<uint32_t>(argument.size()));
  request.arguments.push_back(
      {static_cast<uint32_t>(request.xdr.size()), argument});
  request.results.push_back(result);
  request.max_reply_size = kMaxReducedReply;
  return request;
}

absl::Status CheckNullReply(const Reply& reply, uint32_t xid) {
  absl::StatusOr<absl::Span<const uint8_t>> results =
      DecodeResults(reply.xdr, xid);
  if (!results.ok()) return results.status();
  if (!results->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NULL returned ", results->size(), " octets, not none"));
  }
  return absl::OkStatus();
}

absl::Status CheckEchoReply(const Reply& reply, uint32_t xid,
                            size_t expected_size) {
  absl::StatusOr<absl::Span<const uint8_t>> results =
      DecodeResults(reply.xdr, xid);
  if (!results.ok()) return results.status();
  Reader in(*results);
  absl::StatusOr<uint32_t> length = in.Uint32("the ECHO result length");
  if (!length.ok()) return length.status();
  if (reply.result_lengths.size() != 1) {
    return absl::DataLossError(
        "the ECHO result did not come back in the write chunk");
  }
  if (*length != expected_size || reply.result_lengths[0] != expected_size) {
    return absl::DataLossError(absl::StrCat(
        "ECHO returned ", *length, " octets (", reply.result_lengths[0],
        " written), not ", expected_size));
  }
  return absl::OkStatus();
}

}  // namespace rpcrdma::perf
