// Version two's messages without RPC (draft-cel-nfsv4-rpcrdma-version-two-04):
// optional messages (§4.1, §6.2.2) and the window that bounds how many of
// this side's RDMA2_REQPROP, RDMA2_UPDPROP and RDMA2_OPTIONAL await their
// answer (version_two.h says why).
#include "plugin/engine/control.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine_util.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {

uint32_t Control::NextControlXid() {
  auto taken = [this](uint32_t xid) {
    if (requester_xids_.IsLiveXid(xid) || v2_.in_flight.contains(xid))
      return true;
    return std::any_of(
        v2_.waiting.begin(), v2_.waiting.end(),
        [xid](const VersionTwoState::Exchange& x) { return x.xid == xid; });
  };
  uint32_t xid = v2_.next_xid++;
  while (taken(xid)) xid = v2_.next_xid++;
  return xid;
}

void Control::Enqueue(VersionTwoState::Exchange exchange, Actions& out) {
  v2_.waiting.push_back(std::move(exchange));
  AdmitExchanges(out);
}

// In order: a later exchange never overtakes an earlier one that waits
// for room.
void Control::AdmitExchanges(Actions& out) {
  while (!v2_.waiting.empty() &&
         v2_.slots_used + v2_.waiting.front().slots <= kControlWindow) {
    VersionTwoState::Exchange x = std::move(v2_.waiting.front());
    v2_.waiting.pop_front();
    v2_.slots_used += x.slots;
    if (x.kind == VersionTwoState::Exchange::Kind::kUpdate) {
      // This side's new values hold from the update's Send on: the peer
      // takes it before any message sent after it (§5.2.1: a larger
      // receive buffer size is announced only once every posted receive
      // holds it, which UpdateProperties checked).
      for (const wire::PropVal& p : x.want) {
        if (p.which == wire::kPropIdRbsiz) {
          wire::DecodeResult<wire::KnownProperties> known =
              wire::InterpretProperties({p});
          if (known.ok() && known->rbsiz) {
            v2_.local_rbsiz = *known->rbsiz;
            ctx_.thresholds.receive = *known->rbsiz;
          }
          continue;
        }
        for (wire::PropVal& q : v2_.local_experimental) {
          if (q.which == p.which) q.data = p.data;
        }
      }
      ++v2_.epoch;
    }
    for (std::vector<uint8_t>& bytes : x.messages) {
      out.push_back(Send{ctx_.NextOp(), std::move(bytes), std::nullopt});
    }
    x.messages.clear();
    const uint32_t xid = x.xid;
    v2_.in_flight.emplace(xid, std::move(x));
  }
}

std::optional<VersionTwoState::Exchange> Control::EndExchange(uint32_t xid,
                                                              Actions& out) {
  auto it = v2_.in_flight.find(xid);
  if (it == v2_.in_flight.end()) return std::nullopt;
  VersionTwoState::Exchange x = std::move(it->second);
  v2_.in_flight.erase(it);
  v2_.slots_used -= x.slots;
  AdmitExchanges(out);
  return x;
}

void Control::FailExchange(const VersionTwoState::Exchange& x,
                           absl::Status status, Actions& out) {
  const bool lost = absl::IsUnavailable(status);
  if (x.kind == VersionTwoState::Exchange::Kind::kOptional) {
    out.push_back(OptionalAnswered{x.xid, std::move(status), {}, {}});
    return;
  }
  if (v2_.lowering.erase(x.xid) != 0 && ctx_.connected) UpdateSendThreshold();
  out.push_back(PropertiesAnswered{x.xid, {}, lost, {}, std::move(status)});
}

void Control::OnDisconnected(Actions& out) {
  const absl::Status lost = absl::UnavailableError(
      "RPC-over-RDMA connection lost before the peer answered");
  std::map<uint32_t, VersionTwoState::Exchange> in_flight =
      std::exchange(v2_.in_flight, {});
  std::deque<VersionTwoState::Exchange> waiting =
      std::exchange(v2_.waiting, {});
  v2_.slots_used = 0;
  v2_.lowering.clear();
  v2_.optionals_delivered.clear();
  v2_.undecided.clear();
  for (const auto& [xid, x] : in_flight) FailExchange(x, lost, out);
  for (const VersionTwoState::Exchange& x : waiting) {
    FailExchange(x, lost, out);
  }
}

// §4.1 and §6.2.2: an RDMA2_OPTIONAL with rdma_optdir CALL asks; this side
// serves the types its owner handles and answers every other one
// RDMA2_ERR_INVALID_OPTION, the types §5.3's Table 2 gives the property
// operations included. One with REPLY answers an optional message of this
// side's; any other is dropped: errors never flow from requester to
// responder (§6.2.4), so an unknown type in a REPLY is not answered.
void Control::OnOptional(uint32_t xid, const wire::V2Optional& optional,
                         absl::Span<const uint8_t> payload, Actions& out) {
  if (optional.optdir == wire::MsgDirection::kReply) {
    auto found = v2_.in_flight.find(xid);
    if (found == v2_.in_flight.end() ||
        found->second.kind != VersionTwoState::Exchange::Kind::kOptional) {
      return;
    }
    std::optional<VersionTwoState::Exchange> x = EndExchange(xid, out);
    if (optional.opttype != x->opttype) {
      out.push_back(OptionalAnswered{
          xid,
          absl::DataLossError(
              absl::StrCat("the peer answered an optional message of type ",
                           x->opttype, " with one of type ", optional.opttype)),
          {},
          {}});
      return;
    }
    out.push_back(
        OptionalAnswered{xid, absl::OkStatus(), optional.optinfo,
                         std::vector<uint8_t>(payload.begin(), payload.end())});
    return;
  }
  if (v2_.optionals_delivered.contains(xid)) return;  // one at a time per XID
  if (!ctx_.config.optional_types.contains(optional.opttype) ||
      wire::IsPropertyOperationOptType(optional.opttype)) {
    wire::V2Error e;
    e.code = wire::V2ErrorCode::kInvalidOption;
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, e},
                out);
    return;
  }
  v2_.optionals_delivered.emplace(xid, optional.opttype);
  out.push_back(
      DeliverOptional{xid, optional.opttype, optional.optinfo,
                      std::vector<uint8_t>(payload.begin(), payload.end())});
}

absl::StatusOr<uint32_t> Control::StartOptional(uint32_t type,
                                                std::vector<uint8_t> info,
                                                std::vector<uint8_t> payload,
                                                Actions& out) {
  if (absl::Status s = CheckVersionTwo(); !s.ok()) return s;
  if (wire::IsPropertyOperationOptType(type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optional type ", type,
        " is one of the property operations of draft-04 §5.3 (Table 2)"));
  }
  const uint32_t xid = NextControlXid();
  const wire::V2Header header{
      xid, wire::kRpcRdmaVersion2, ctx_.roles.requester_limit,
      wire::V2Optional{wire::MsgDirection::kCall, type, std::move(info)}};
  const size_t header_size = wire::V2EncodedSize(header);
  if (header_size + payload.size() > ctx_.thresholds.send) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the optional message has ", header_size + payload.size(),
        " octets; it travels inline, and the peer's receive buffer size is ",
        ctx_.thresholds.send, " octets (draft-04 §5.2.1)"));
  }
  VersionTwoState::Exchange x;
  x.kind = VersionTwoState::Exchange::Kind::kOptional;
  x.xid = xid;
  x.opttype = type;
  std::vector<uint8_t> bytes(header_size + payload.size());
  (void)wire::EncodeV2(header, absl::MakeSpan(bytes).first(header_size));
  std::copy(payload.begin(), payload.end(), bytes.begin() + header_size);
  x.messages.push_back(std::move(bytes));
  Enqueue(std::move(x), out);
  return xid;
}

// §6.2.2: the answer goes with rdma_optdir REPLY and the XID of the
// message it answers; a handler's failure is RDMA2_ERR_SYSTEM, the error
// for a responder's problem that fits no other code (§6.2.4).
absl::Status Control::AnswerOptional(uint32_t xid,
                                     absl::StatusOr<DeliverOptional> answer,
                                     Actions& out) {
  auto it = v2_.optionals_delivered.find(xid);
  if (it == v2_.optionals_delivered.end()) {
    return absl::NotFoundError(
        absl::StrCat("no optional message ", xid, " awaits an answer"));
  }
  const uint32_t type = it->second;
  v2_.optionals_delivered.erase(it);
  wire::V2Error system;
  system.code = wire::V2ErrorCode::kSystem;
  if (!answer.ok()) {
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, system},
                out);
    return absl::OkStatus();
  }
  const wire::V2Header header{xid, wire::kRpcRdmaVersion2,
                              ctx_.roles.responder_grant,
                              wire::V2Optional{wire::MsgDirection::kReply, type,
                                               std::move(answer->info)}};
  const size_t header_size = wire::V2EncodedSize(header);
  const size_t size = header_size + answer->payload.size();
  if (size > ctx_.thresholds.send) {
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, system},
                out);
    return absl::ResourceExhaustedError(absl::StrCat(
        "the answer has ", size, " octets; the peer's receive buffer size is ",
        ctx_.thresholds.send,
        " octets (draft-04 §5.2.1): sent RDMA2_ERR_SYSTEM"));
  }
  std::vector<uint8_t> bytes = ctx_.TakeSendBuffer();
  bytes.resize(size);
  (void)wire::EncodeV2(header, absl::MakeSpan(bytes).first(header_size));
  std::copy(answer->payload.begin(), answer->payload.end(),
            bytes.begin() + header_size);
  out.push_back(Send{ctx_.NextOp(), std::move(bytes), std::nullopt});
  return absl::OkStatus();
}

bool Control::OnPeerError(uint32_t xid, absl::Status status, Actions& out) {
  std::optional<VersionTwoState::Exchange> x = EndExchange(xid, out);
  if (!x) return false;
  FailExchange(*x, std::move(status), out);
  return true;
}

absl::Status Control::BackwardCallAllowed(const CallPlanInput& call) const {
  if (!ctx_.roles.backward_requester ||
      ctx_.version != wire::kRpcRdmaVersion2) {
    return absl::OkStatus();
  }
  if (v2_.peer_brs == wire::BackwardRequestSupport::kNone) {
    return absl::FailedPreconditionError(
        "the client takes no backward calls (RDMA2_BKREQSUP_NONE, "
        "draft-04 §5.2.2)");
  }
  if (v2_.peer_brs != wire::BackwardRequestSupport::kInline) {
    return absl::OkStatus();
  }
  // RDMA2_BKREQSUP_INLINE: the call and its reply must go inline, without
  // any chunk. Whether the call fits is asked without room for its reply
  // (a reply chunk is named below), which leaves a call without results
  // no write chunk: the header PlanCall sizes is the empty one.
  CallPlanInput alone = call;
  alone.max_reply_size = 0;
  const char* needs = nullptr;
  if (!call.result_sizes.empty()) {
    needs = "write chunks for its results";
  } else if (PlanCall(alone).form != CallForm::kInline) {
    needs = "a read chunk (it does not fit inline)";
  } else if (PlanCall(call).offers_reply_chunk) {
    needs = "a reply chunk (its reply may not fit inline)";
  }
  if (needs == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the client takes backward calls inline only "
                   "(RDMA2_BKREQSUP_INLINE, draft-04 §5.2.2); this one "
                   "needs ",
                   needs));
}

}  // namespace rpcrdma::engine
