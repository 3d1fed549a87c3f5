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
    control_.SendVersionProbe(params.version_probe_xid, out);
    requester_.HoldProbeCredit();
    return;
  }
  requester_.Dispatch(out);
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
    if (std::optional<ProbeAnswer> answer = control_.TakeProbeAnswer(bytes)) {
      requester_.EndProbe(answer->credits);
      requester_.Dispatch(out);  // sends the waiting calls, or fails them
    }
    return;
  }
  const bool first = std::exchange(first_message_, false);
  if (ctx_.version == wire::kRpcRdmaVersion2) {
    OnReceiveV2(bytes, invalidated, out);
    return;
  }
  if (first && control_.TryOpenVersionTwo(bytes, out)) return;
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
