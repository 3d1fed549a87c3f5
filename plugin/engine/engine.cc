// Connection handling: set-up, version negotiation, loss, and the
// dispatch of every received message to the requester or responder role.
#include "plugin/engine/engine.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine_util.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

Engine::Engine(Config config, MemoryExposer* exposer,
               ReassemblyBudget* shared_budget)
    : ctx_(std::move(config), exposer),
      requester_(ctx_, *this),
      responder_(ctx_, shared_budget),
      control_(ctx_, requester_) {}

uint32_t Engine::ReceivesFor(const Config& config) {
  return ReceivesPostedFor(config);
}

std::array<uint8_t, wire::kPrivateDataSize> Engine::LocalPrivateData() const {
  auto encoded = wire::EncodePrivateData(ctx_.config.local);
  if (encoded.ok()) return *encoded;
  // Sizes outside 1024..262144 cannot be encoded; advertise the defaults
  // every peer assumes anyway (RFC 8797 §5.1).
  return *wire::EncodePrivateData(wire::PrivateData{});
}

void Engine::OnConnected(const ConnectionParams& params, Actions& out) {
  ctx_.connected = true;
  // RFC 8797 §4.2 / §5.1, redone on every connection.
  peer_private_data_ = wire::FindPrivateData(params.peer_private_data);
  ctx_.thresholds = wire::NegotiateInline(
      ctx_.config.local, wire::PrivateDataOrDefault(params.peer_private_data));
  responder_.OnConnected(std::max<uint32_t>(params.max_outstanding_reads, 1));
  requester_.OnConnected();
  first_message_ = true;
  control_.OnConnected();
  // A responder settles the version from the client's first message; a
  // requester from the probe's answer.
  if (!ctx_.config.requester) ctx_.version = 1;
  out.push_back(PostReceives{ctx_.roles.receives, ctx_.ReceiveCapacity()});
  if (ctx_.roles.requester_on && !ctx_.roles.backward_requester &&
      ctx_.config.offered_version == 2 && ctx_.negotiation.ok()) {
    SendVersionProbe(params.version_probe_xid, out);
    return;
  }
  requester_.Dispatch(out);
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §7: a single version-two message
// first, no larger than the version-one default inline threshold; it
// holds the one credit a requester has before any reply (§7). An
// RDMA2_CONNPROP (§5.3.1) is the message every version-two peer must
// accept first, and it reports this side's receive buffer size (§5.2.1).
void Engine::SendVersionProbe(uint32_t xid, Actions& out) {
  wire::V2Header probe;
  probe.xid = xid;
  probe.vers = wire::kRpcRdmaVersion2;
  probe.credits = ctx_.roles.requester_limit;
  probe.body = control_.LocalConnProp();
  ctx_.negotiating = true;
  probe_xid_ = xid;
  requester_.HoldProbeCredit();
  out.push_back(Send{ctx_.NextOp(), wire::EncodeV2(probe), std::nullopt});
}

void Engine::HandleProbeAnswer(absl::Span<const uint8_t> bytes, Actions& out) {
  if (bytes.size() < 8) return;
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
      control_.AdoptPeerConnProp(*props);
      granted = d->header.credits;
    } else {
      ctx_.negotiation = absl::DataLossError(
          "the peer answered the version-two probe with a version-two "
          "message other than RDMA2_CONNPROP or RDMA2_ERR_VERS");
    }
  } else if (xid != probe_xid_) {
    return;  // nothing else is expected before the answer (§7)
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
  requester_.EndProbe(granted);
  requester_.Dispatch(out);  // sends the waiting calls, or fails them
}

void Engine::OnDisconnected(Actions& out) {
  ctx_.connected = false;
  ctx_.negotiating = false;
  control_.OnDisconnected(out);
  requester_.OnDisconnected(out);
  responder_.OnDisconnected(out);
}

void Engine::OnReceive(absl::Span<const uint8_t> bytes,
                       std::optional<uint32_t> invalidated, Actions& out) {
  if (!ctx_.connected || responder_.closing()) return;
  // The consumed receive is replaced at once (receives per credit).
  out.push_back(PostReceives{1, ctx_.ReceiveCapacity()});
  if (ctx_.negotiating) {
    HandleProbeAnswer(bytes, out);
    return;
  }
  const bool first = std::exchange(first_message_, false);
  if (ctx_.version == wire::kRpcRdmaVersion2) {
    OnReceiveV2(bytes, invalidated, out);
    return;
  }
  if (first && TryOpenVersionTwo(bytes, out)) return;
  if (bytes.size() < kMinReplyHeader) return;
  const uint32_t xid = LoadBigEndian32(bytes.data());
  wire::DecodeResult<wire::V1Decoded> decoded =
      wire::DecodeV1(bytes, ctx_.config.limits);

  // Told by its content (CarriesCall), even when the XID equals one of
  // this side's own calls.
  const bool is_call =
      decoded.ok() &&
      CarriesCall(decoded->header, bytes.subspan(decoded->header_length));
  ctx_.Observe({.xid = xid,
                .header = decoded.ok() ? &decoded->header : nullptr,
                .is_call = is_call,
                .error = decoded.ok() ? nullptr : &decoded.error()});
  if (!decoded.ok()) {
    Route(wire::V1Decoded{}, bytes, false, invalidated, out, &decoded.error());
    return;
  }
  if (is_call && ctx_.config.require_version_two && !ctx_.config.requester) {
    // version_policy V2: a version-one client is told which versions this
    // side speaks (§7.2) and served nothing.
    responder_.SendError(xid, wire::V1ErrorCode::kVers, out);
    return;
  }
  Route(*decoded, bytes, is_call, invalidated, out);
}

void Engine::Route(const wire::V1Decoded& decoded,
                   absl::Span<const uint8_t> bytes, bool is_call,
                   std::optional<uint32_t> invalidated, Actions& out,
                   const wire::DecodeError* error) {
  const uint32_t xid = LoadBigEndian32(bytes.data());
  if (ctx_.roles.requester_on && !is_call) {
    if (requester_.AwaitsReply(xid)) {
      if (error != nullptr) {
        requester_.FailUndecodableReply(xid, error->ToStatus(), invalidated,
                                        out);
      } else {
        requester_.OnReply(decoded, bytes, invalidated, out);
      }
      return;
    }
    // The late reply of a cancelled call: frees its credit, then dropped.
    if (requester_.DropLateReply(xid,
                                 error == nullptr
                                     ? std::optional(decoded.header.credits)
                                     : std::nullopt,
                                 out)) {
      return;
    }
  }
  // A client without backchannel credits drops calls, as the Linux client
  // does when it has no backchannel service (RFC 8167 §5 leaves it to the
  // ULP to use the backchannel only once both sides support it).
  if (!ctx_.roles.responder_on || bytes.size() < kMinCallHeader) return;
  if (error != nullptr) {
    responder_.OnUndecodableCall(bytes, *error, out);
    return;
  }
  responder_.OnCall(decoded, bytes, routing_inv_handle_, out);
}

}  // namespace rpcrdma::engine
