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
    : config_(std::move(config)),
      exposer_(exposer),
      shared_budget_(shared_budget) {
  config_.credits = std::max<uint32_t>(config_.credits, 1);
  config_.max_segment_size = std::max<uint32_t>(config_.max_segment_size, 1);
  // RFC 8167 roles. A server (responder role only) with a configured peer
  // backchannel limit issues backward calls through the requester role; a
  // client (requester role) with backchannel credits serves backward calls
  // through the responder role.
  backward_requester_ = !config_.requester && config_.responder &&
                        config_.peer_backchannel_credits > 0;
  backward_responder_ = config_.requester && config_.backchannel_credits > 0;
  requester_on_ = config_.requester || backward_requester_;
  responder_on_ = config_.responder || backward_responder_;
  // RFC 8167 §3.1: forward and backward credits are accounted separately.
  requester_limit_ =
      backward_requester_ ? config_.peer_backchannel_credits : config_.credits;
  responder_grant_ =
      backward_responder_ ? config_.backchannel_credits : config_.credits;
  receives_ = ReceivesFor(config_);
}

uint32_t Engine::ReceivesFor(const Config& config) {
  // RFC 8167 §3.2: the client posts its backchannel credits beyond the
  // receives for forward replies; the server posts one more receive per
  // backward call it may have outstanding, for the backward replies.
  uint64_t receives = std::max<uint32_t>(config.credits, 1);
  if (config.requester) receives += config.backchannel_credits;
  if (!config.requester && config.responder) {
    receives += config.peer_backchannel_credits;
  }
  // Version two: messages without RPC and their answers (version_two.h).
  if ((config.requester && config.offered_version == 2) ||
      (!config.requester && config.serve_version_two)) {
    receives += 2 * kControlWindow;
  }
  return static_cast<uint32_t>(
      std::min<uint64_t>(receives, std::numeric_limits<uint32_t>::max()));
}

std::array<uint8_t, wire::kPrivateDataSize> Engine::LocalPrivateData() const {
  auto encoded = wire::EncodePrivateData(config_.local);
  if (encoded.ok()) return *encoded;
  // Sizes outside 1024..262144 cannot be encoded; advertise the defaults
  // every peer assumes anyway (RFC 8797 §5.1).
  return *wire::EncodePrivateData(wire::PrivateData{});
}

std::vector<uint8_t> Engine::TakeSendBuffer() {
  if (spare_send_buffers_.empty()) return {};
  std::vector<uint8_t> bytes = std::move(spare_send_buffers_.back());
  spare_send_buffers_.pop_back();
  bytes.clear();
  return bytes;
}

void Engine::RecycleSendBuffer(std::vector<uint8_t> bytes) {
  // As many as Sends can be in flight at once is enough to never allocate;
  // beyond that they go.
  if (spare_send_buffers_.size() < receives_ + 8) {
    spare_send_buffers_.push_back(std::move(bytes));
  }
}

Send Engine::MakeSend(OpId op, const wire::V1Header& header,
                      absl::Span<const uint8_t> payload,
                      std::optional<uint32_t> invalidate, uint32_t inv_handle,
                      absl::string_view why) {
  std::vector<uint8_t> bytes = TakeSendBuffer();
  const bool is_call = CarriesCall(header, payload);
  if (version_ == wire::kRpcRdmaVersion2) {
    // Version two carries the same chunk lists with the direction made
    // explicit (draft-04 §6.2.2) and the handle the responder may
    // invalidate named (§6.2.3).
    const wire::V2Header v2 = ToV2Header(header, is_call, inv_handle);
    const size_t header_size = wire::V2EncodedSize(v2);
    bytes.resize(header_size + payload.size());
    (void)wire::EncodeV2(v2, absl::MakeSpan(bytes).first(header_size));
    CopyBytes(bytes.data() + header_size, payload.data(), payload.size());
  } else {
    const size_t header_size = wire::V1EncodedSize(header);
    bytes.resize(header_size + payload.size());
    (void)wire::EncodeV1(header, absl::MakeSpan(bytes).first(header_size));
    CopyBytes(bytes.data() + header_size, payload.data(), payload.size());
  }
  if (observer_) {
    Observe({.sent = true,
             .xid = header.xid,
             .header = &header,
             .is_call = is_call,
             .why = why});
  }
  return Send{op, std::move(bytes), invalidate};
}

void Engine::OnConnected(const ConnectionParams& params, Actions& out) {
  connected_ = true;
  closing_ = false;
  // RFC 8797 §4.2 / §5.1, redone on every connection.
  peer_private_data_ = wire::FindPrivateData(params.peer_private_data);
  thresholds_ = wire::NegotiateInline(
      config_.local, wire::PrivateDataOrDefault(params.peer_private_data));
  max_reads_ = std::max<uint32_t>(params.max_outstanding_reads, 1);
  // RFC 8166 §3.3.1: one call outstanding until the first reply.
  grant_ = 1;
  outstanding_ = 0;
  first_message_ = true;
  StartVersionTwo();
  // A responder settles the version from the client's first message; a
  // requester from the probe's answer.
  if (!config_.requester) version_ = 1;
  out.push_back(PostReceives{receives_, ReceiveCapacity()});
  if (requester_on_ && !backward_requester_ && config_.offered_version == 2 &&
      negotiation_.ok()) {
    SendVersionProbe(params.version_probe_xid, out);
    return;
  }
  Dispatch(out);
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
  probe.credits = requester_limit_;
  probe.body = LocalConnProp();
  negotiating_ = true;
  probe_xid_ = xid;
  outstanding_ = 1;
  out.push_back(Send{NextOp(), wire::EncodeV2(probe), std::nullopt});
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
  if (vers == wire::kRpcRdmaVersion2) {
    wire::DecodeResult<wire::V2Decoded> d = wire::DecodeV2(bytes);
    const wire::V2Error* err =
        d.ok() ? std::get_if<wire::V2Error>(&d->header.body) : nullptr;
    Observe(
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
      version_ = wire::kRpcRdmaVersion2;
      peer_version_low_ = peer_version_high_ = wire::kRpcRdmaVersion2;
      AdoptPeerConnProp(*props);
      grant_ = std::clamp<uint32_t>(d->header.credits, 1, requester_limit_);
    } else {
      negotiation_ = absl::DataLossError(
          "the peer answered the version-two probe with a version-two "
          "message other than RDMA2_CONNPROP or RDMA2_ERR_VERS");
    }
  } else if (xid != probe_xid_) {
    return;  // nothing else is expected before the answer (§7)
  } else {
    wire::DecodeResult<wire::V1Decoded> d = wire::DecodeV1(bytes);
    const wire::V1Error* err =
        d.ok() ? std::get_if<wire::V1Error>(&d->header.body) : nullptr;
    Observe({.xid = xid,
             .header = d.ok() ? &d->header : nullptr,
             .error = d.ok() ? nullptr : &d.error()});
    if (err == nullptr || err->code != wire::V1ErrorCode::kVers) {
      negotiation_ = absl::DataLossError(
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
    if (config_.version_fallback && range->first <= 1 && range->second >= 1) {
      version_ = 1;
    } else {
      negotiation_ = absl::FailedPreconditionError(absl::StrCat(
          "the peer supports RPC-over-RDMA versions ", range->first, " to ",
          range->second, ", not version 2 (ERR_VERS)"));
    }
  }
  negotiating_ = false;
  outstanding_ = 0;
  Dispatch(out);  // sends the waiting calls, or fails them
}

void Engine::OnDisconnected(Actions& out) {
  connected_ = false;
  negotiating_ = false;
  FailExchanges(out);
  grant_ = 1;
  outstanding_ = 0;
  by_xid_.clear();
  cancelled_xids_.clear();
  // Requester: every call not already finishing fails, after invalidation,
  // in the order the calls were made.
  queue_.clear();
  std::vector<CallId> ids;
  for (auto& [id, c] : requests_) {
    if (c.state != ReqState::kFinishing) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  for (CallId id : ids) {
    RequesterCall& c = requests_.at(id);
    c.holds_credit = false;
    const bool never_sent = c.state == ReqState::kQueued;
    Finish(
        c,
        FailCall{
            id,
            absl::UnavailableError(
                never_sent ? "RPC-over-RDMA connection lost before the call "
                             "was sent"
                           : "RPC-over-RDMA connection lost before the reply"),
            never_sent,
            never_sent ? std::move(c.call.xdr) : std::vector<uint8_t>{}},
        std::nullopt, out);
  }
  // Responder: calls not waiting for a read or send completion are dropped
  // (releasing their memory); memory the fabric may still touch stays
  // reserved until its flush completion ends the call. No credit survives
  // the connection.
  read_queue_.clear();
  awaiting_memory_.clear();
  calls_awaiting_memory_ = 0;
  std::vector<CallId> ended;
  for (auto& [id, c] : incoming_) {
    ReleaseResponderCredit(c);
    bool busy = false;
    for (const auto& [op, call] : reads_in_flight_) busy |= call == id;
    if (!busy && c.state != RespState::kSending) ended.push_back(id);
  }
  std::sort(ended.begin(), ended.end());
  for (CallId id : ended) EndIncoming(id, out);
}

// ---- Requester ------------------------------------------------------------

void Engine::OnReceive(absl::Span<const uint8_t> bytes,
                       std::optional<uint32_t> invalidated, Actions& out) {
  if (!connected_ || closing_) return;
  // The consumed receive is replaced at once (receives per credit).
  out.push_back(PostReceives{1, ReceiveCapacity()});
  if (negotiating_) {
    HandleProbeAnswer(bytes, out);
    return;
  }
  const bool first = std::exchange(first_message_, false);
  if (version_ == wire::kRpcRdmaVersion2) {
    OnReceiveV2(bytes, invalidated, out);
    return;
  }
  if (first && TryOpenVersionTwo(bytes, out)) return;
  if (bytes.size() < kMinReplyHeader) return;
  const uint32_t xid = LoadBigEndian32(bytes.data());
  wire::DecodeResult<wire::V1Decoded> decoded =
      wire::DecodeV1(bytes, config_.limits);

  // Told by its content (CarriesCall), even when the XID equals one of
  // this side's own calls.
  const bool is_call =
      decoded.ok() &&
      CarriesCall(decoded->header, bytes.subspan(decoded->header_length));
  Observe({.xid = xid,
           .header = decoded.ok() ? &decoded->header : nullptr,
           .is_call = is_call,
           .error = decoded.ok() ? nullptr : &decoded.error()});
  if (!decoded.ok()) {
    Route(wire::V1Decoded{}, bytes, false, invalidated, out, &decoded.error());
    return;
  }
  if (is_call && config_.require_version_two && !config_.requester) {
    // version_policy V2: a version-one client is told which versions this
    // side speaks (§7.2) and served nothing.
    SendError(xid, wire::V1ErrorCode::kVers, out);
    return;
  }
  Route(*decoded, bytes, is_call, invalidated, out);
}

void Engine::Route(const wire::V1Decoded& decoded,
                   absl::Span<const uint8_t> bytes, bool is_call,
                   std::optional<uint32_t> invalidated, Actions& out,
                   const wire::DecodeError* error) {
  const uint32_t xid = LoadBigEndian32(bytes.data());
  if (requester_on_ && !is_call) {
    auto it = by_xid_.find(xid);
    if (it != by_xid_.end()) {
      RequesterCall& c = requests_.at(it->second);
      if (error != nullptr) {
        ReleaseCredit(c);
        Finish(c,
               FailCall{c.id, absl::DataLossError(
                                  absl::StrCat("undecodable reply: ",
                                               error->ToStatus().message()))},
               invalidated, out);
        Dispatch(out);
        return;
      }
      HandleReply(decoded, bytes, c, invalidated, out);
      return;
    }
    if (cancelled_xids_.erase(xid) != 0) {
      // The late reply of a cancelled call: frees its credit, then dropped.
      --outstanding_;
      if (error == nullptr) {
        grant_ =
            std::clamp<uint32_t>(decoded.header.credits, 1, requester_limit_);
      }
      Dispatch(out);
      return;
    }
  }
  // A client without backchannel credits drops calls, as the Linux client
  // does when it has no backchannel service (RFC 8167 §5 leaves it to the
  // ULP to use the backchannel only once both sides support it).
  if (!responder_on_ || bytes.size() < kMinCallHeader) return;
  if (error != nullptr) {
    // An error is never answered with an error (RFC 8166 §4.5: RDMA_ERROR
    // goes from responder to requester only); a malformed one is dropped,
    // as Linux's svcrdma drops every RDMA_ERROR.
    if (LoadBigEndian32(bytes.data() + 12) ==
        static_cast<uint32_t>(wire::V1Proc::kError)) {
      return;
    }
    // RFC 8166 §4.5.1 / §4.5.2.
    wire::V1Header reply =
        wire::V1ErrorReplyFor(bytes, *error, responder_grant_);
    out.push_back(MakeSend(NextOp(), reply, {}));
    return;
  }
  HandleCall(decoded, bytes, out);
}

// ---- Responder
// ---------------------------------------------------------------

}  // namespace rpcrdma::engine
