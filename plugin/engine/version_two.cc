// RPC-over-RDMA version two (draft-cel-nfsv4-rpcrdma-version-two-04): the
// responder's side of the negotiation (§7.1), and the routing of messages
// in version two: calls and replies to the roles, transport properties
// (§5) and optional messages to the control (control.h), version-two
// errors (§6.2.4) to whichever awaits them. Calls and replies keep version
// one's chunk forms and credits (§4.2), so once a message is decoded it
// takes the version-one paths in its version-one form, with the direction
// the header states (§6.2.2).
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine.h"
#include "plugin/engine/engine_util.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {
namespace {

std::string V2ErrorDetail(const wire::V2Error& e) {
  switch (e.code) {
    case wire::V2ErrorCode::kVers:
      return absl::StrCat("the peer supports RPC-over-RDMA versions ",
                          e.vers_low, " to ", e.vers_high);
    case wire::V2ErrorCode::kBadXdr:
      return "the peer could not parse the transport header";
    case wire::V2ErrorCode::kInvalidProc:
      return "the peer does not know the transport procedure";
    case wire::V2ErrorCode::kReadChunks:
      return absl::StrCat("the peer takes at most ", e.max_chunks,
                          " read chunks");
    case wire::V2ErrorCode::kWriteChunks:
      return absl::StrCat("the peer takes at most ", e.max_chunks,
                          " write chunks");
    case wire::V2ErrorCode::kSegments:
      return absl::StrCat("the peer takes at most ", e.max_segments,
                          " segments per chunk");
    case wire::V2ErrorCode::kWriteResource:
      return absl::StrCat("write chunk ", e.chunk_index, " needs ",
                          e.length_needed, " octets");
    case wire::V2ErrorCode::kReplyResource:
      return absl::StrCat("the reply needs a reply chunk of ", e.length_needed,
                          " octets");
    case wire::V2ErrorCode::kInvalidOption:
      return "the peer does not support the optional message";
    case wire::V2ErrorCode::kSystem:
      return "the peer failed for a reason of its own";
  }
  return "unknown error";
}

// The status a caller sees for each error (the version-one mapping where
// one exists: ERR_VERS FAILED_PRECONDITION, ERR_CHUNK INVALID_ARGUMENT).
absl::StatusCode V2ErrorStatusCode(wire::V2ErrorCode code) {
  switch (code) {
    case wire::V2ErrorCode::kVers:
      return absl::StatusCode::kFailedPrecondition;
    case wire::V2ErrorCode::kWriteResource:
    case wire::V2ErrorCode::kReplyResource:
      return absl::StatusCode::kResourceExhausted;
    case wire::V2ErrorCode::kSystem:
      return absl::StatusCode::kInternal;
    case wire::V2ErrorCode::kInvalidOption:
      return absl::StatusCode::kUnimplemented;
    default:
      return absl::StatusCode::kInvalidArgument;
  }
}

}  // namespace

absl::Status V2ErrorStatus(const wire::V2Error& e) {
  return absl::Status(
      V2ErrorStatusCode(e.code),
      absl::StrCat("RDMA2_ERROR ", wire::V2ErrorCodeName(e.code), ": ",
                   V2ErrorDetail(e)));
}

uint32_t Engine::max_inline_reply() const {
  const size_t header = ctx_.HeaderSize(
      wire::V1Header{0, wire::kRpcRdmaVersion1, 0, wire::V1Msg{}});
  return ctx_.thresholds.receive > header
             ? static_cast<uint32_t>(ctx_.thresholds.receive - header)
             : 0;
}

absl::Status Engine::BackwardCallAllowed(const CallPlanInput& call) const {
  return control_.BackwardCallAllowed(call);
}

void Engine::OnReceiveV2(absl::Span<const uint8_t> bytes,
                         std::optional<uint32_t> invalidated, Actions& out) {
  if (bytes.size() < 16) return;  // not even rdma_proc
  const uint32_t xid = LoadBigEndian32(bytes.data());
  wire::DecodeResult<wire::V2Decoded> d =
      wire::DecodeV2(bytes, wire::V2Limits{ctx_.config.limits});
  if (!d.ok()) {
    ctx_.Observe({.xid = xid, .error = &d.error()});
    // An error is never answered with an error (§6.2.4 errors go from
    // responder to requester); a reply that does not decode fails its call.
    if (IsV2Proc(bytes, wire::V2Proc::kError)) return;
    if (ctx_.roles.requester_on && requester_.AwaitsReply(xid)) {
      requester_.FailUndecodableReply(xid, d.error().ToStatus(), invalidated,
                                      out);
      return;
    }
    if (!ctx_.roles.responder_on) return;
    ctx_.SendV2(
        wire::V2ErrorReplyFor(bytes, d.error(), ctx_.roles.responder_grant),
        out);
    return;
  }
  const wire::V2Header& h = d->header;
  if (const wire::V2ChunkLists* lists = h.chunks()) {
    wire::V1Decoded v1;
    v1.header.xid = h.xid;
    v1.header.vers = wire::kRpcRdmaVersion2;
    v1.header.credits = h.credits;
    if (h.proc() == wire::V2Proc::kMsg) {
      v1.header.body = wire::V1Msg{lists->lists};
    } else {
      v1.header.body = wire::V1NoMsg{lists->lists};
    }
    v1.header_length = d->header_length;
    const bool is_call = lists->direction == wire::MsgDirection::kCall;
    ctx_.Observe({.xid = xid, .header = &v1.header, .is_call = is_call});
    routing_inv_handle_ = lists->inv_handle;
    Route(v1, bytes, is_call, invalidated, out);
    routing_inv_handle_ = 0;
    return;
  }
  if (h.proc() == wire::V2Proc::kError) {
    ctx_.Observe({.xid = xid,
                  .v2_error = true,
                  .v2_code = std::get<wire::V2Error>(h.body).code});
    HandleV2Error(h, out);
    return;
  }
  if (const auto* opt = std::get_if<wire::V2Optional>(&h.body)) {
    control_.OnOptional(xid, *opt, bytes.subspan(d->header_length), out);
    return;
  }
  if (const auto* upd = std::get_if<wire::V2UpdProp>(&h.body)) {
    control_.AdoptPeerProperties(upd->now);  // §5.3.4: the sender's values now
    return;
  }
  if (const auto* req = std::get_if<wire::V2ReqProp>(&h.body)) {
    control_.OnPropertyRequest(xid, *req, out);
    return;
  }
  if (const auto* res = std::get_if<wire::V2ResProp>(&h.body)) {
    control_.OnPropertyAnswer(xid, *res, out);
    return;
  }
  // A later RDMA2_CONNPROP: ignored.
}

void Engine::HandleV2Error(const wire::V2Header& header, Actions& out) {
  const auto& e = std::get<wire::V2Error>(header.body);
  if (!ctx_.roles.requester_on || !requester_.AwaitsReply(header.xid)) {
    // The answer to a message without RPC of this side's (§4.1, §5.3).
    if (control_.OnPeerError(header.xid, V2ErrorStatus(e), out)) return;
    if (!ctx_.roles.requester_on) return;
    requester_.DropLateReply(header.xid, header.credits, out);
    return;
  }
  const bool reply_did_not_fit = e.code == wire::V2ErrorCode::kReplyResource ||
                                 e.code == wire::V2ErrorCode::kWriteResource;
  requester_.FailOnPeerError(header.xid, header.credits, V2ErrorStatus(e),
                             reply_did_not_fit, out);
}

}  // namespace rpcrdma::engine
