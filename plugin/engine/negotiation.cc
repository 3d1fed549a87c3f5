// Which version a connection speaks (draft-cel-nfsv4-rpcrdma-version-two-04
// §7): the requester's probe and its answer, and the responder's opening of
// version two on a client's RDMA2_CONNPROP.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/control.h"
#include "plugin/engine/engine_util.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

// draft-cel-nfsv4-rpcrdma-version-two-04 §7: a single version-two message
// first, no larger than the version-one default inline threshold; it
// holds the one credit a requester has before any reply (§7). An
// RDMA2_CONNPROP (§5.3.1) is the message every version-two peer must
// accept first, and it reports this side's receive buffer size (§5.2.1).
void Control::SendVersionProbe(uint32_t xid, Actions& out) {
  wire::V2Header probe;
  probe.xid = xid;
  probe.vers = wire::kRpcRdmaVersion2;
  probe.credits = ctx_.roles.requester_limit;
  probe.body = LocalConnProp();
  ctx_.negotiating = true;
  probe_xid_ = xid;
  out.push_back(Send{ctx_.NextOp(), wire::EncodeV2(probe), std::nullopt});
}

std::optional<ProbeAnswer> Control::TakeProbeAnswer(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < 8) return std::nullopt;
  const uint32_t xid = LoadBigEndian32(bytes.data());
  const uint32_t vers = LoadBigEndian32(bytes.data() + 4);
  // §7.2: the answer of a server without version two is RDMA2_ERROR /
  // RDMA2_ERR_VERS with the probe's XID. It may come as a version-one
  // RDMA_ERROR ERR_VERS, or with rdma_vers 2 as Linux's svcrdma sends it
  // (it copies rdma_vers from the message it rejects): the same octets, a
  // well-formed version-two RDMA2_ERROR.
  std::optional<std::pair<uint32_t, uint32_t>> range;
  std::optional<uint32_t> granted;
  if (vers == wire::kRpcRdmaVersion2) {
    wire::DecodeResult<wire::V2Decoded> d = wire::DecodeV2(bytes);
    const wire::V2Error* err =
        d.ok() ? std::get_if<wire::V2Error>(&d->header.body) : nullptr;
    ctx_.Observe(
        {.xid = xid,
         .v2_error = err != nullptr,
         .error = d.ok() ? nullptr : &d.error(),
         .v2_code = err != nullptr ? std::optional(err->code) : std::nullopt});
    const wire::V2ConnProp* props =
        d.ok() ? std::get_if<wire::V2ConnProp>(&d->header.body) : nullptr;
    if (err != nullptr && err->code == wire::V2ErrorCode::kVers &&
        xid == probe_xid_) {
      range = {err->vers_low, err->vers_high};
    } else if (props != nullptr) {
      // §7.1: the peer's own RDMA2_CONNPROP; version two from now on, with
      // its properties and its credit grant.
      ctx_.version = wire::kRpcRdmaVersion2;
      peer_version_low_ = peer_version_high_ = wire::kRpcRdmaVersion2;
      AdoptPeerConnProp(*props);
      granted = d->header.credits;
    } else {
      ctx_.negotiation = absl::DataLossError(
          "the peer answered the version-two probe with a version-two "
          "message other than RDMA2_CONNPROP or RDMA2_ERR_VERS");
    }
  } else if (xid != probe_xid_) {
    return std::nullopt;  // nothing else is expected before the answer (§7)
  } else {
    wire::DecodeResult<wire::V1Decoded> d = wire::DecodeV1(bytes);
    const wire::V1Error* err =
        d.ok() ? std::get_if<wire::V1Error>(&d->header.body) : nullptr;
    ctx_.Observe({.xid = xid,
                  .header = d.ok() ? &d->header : nullptr,
                  .error = d.ok() ? nullptr : &d.error()});
    if (err == nullptr || err->code != wire::V1ErrorCode::kVers) {
      ctx_.negotiation = absl::DataLossError(
          "the peer answered the version-two probe with neither a "
          "version-two message nor RDMA_ERROR ERR_VERS");
    } else {
      range = {err->vers_low, err->vers_high};
    }
  }
  if (range) {
    peer_version_low_ = range->first;
    peer_version_high_ = range->second;
    // §7.2: the client selects a version in the peer's range.
    if (ctx_.config.version_fallback && range->first <= 1 &&
        range->second >= 1) {
      ctx_.version = 1;
    } else {
      ctx_.negotiation = absl::FailedPreconditionError(absl::StrCat(
          "the peer supports RPC-over-RDMA versions ", range->first, " to ",
          range->second, ", not version 2 (ERR_VERS)"));
    }
  }
  ctx_.negotiating = false;
  return ProbeAnswer{granted};
}

// §7.1: a responder that serves version two answers a client's opening
// RDMA2_CONNPROP with its own, and the connection is in version two.
bool Control::TryOpenVersionTwo(absl::Span<const uint8_t> bytes, Actions& out) {
  if (!ctx_.config.serve_version_two || ctx_.config.requester ||
      !IsV2Proc(bytes, wire::V2Proc::kConnProp)) {
    return false;
  }
  wire::DecodeResult<wire::V2Decoded> d =
      wire::DecodeV2(bytes, wire::V2Limits{ctx_.config.limits});
  if (!d.ok()) return false;  // answered ERR_VERS as version one would be
  ctx_.version = wire::kRpcRdmaVersion2;
  peer_version_low_ = peer_version_high_ = wire::kRpcRdmaVersion2;
  AdoptPeerConnProp(std::get<wire::V2ConnProp>(d->header.body));
  ctx_.SendV2(wire::V2Header{d->header.xid, wire::kRpcRdmaVersion2,
                             ctx_.roles.responder_grant, LocalConnProp()},
              out);
  return true;
}

}  // namespace rpcrdma::engine
