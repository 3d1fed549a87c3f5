// Transport properties of version two (draft-cel-nfsv4-rpcrdma-version-two-04
// §5): what each side states at connect (§5.3.1), requests to change the
// peer's (§5.3.2, §5.3.3) and updates of this side's own (§5.3.4), with the
// rules of the Receive Buffer Size (§5.2.1) and the experimental ids the
// owner carries (§5.4.2).
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/control.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {
namespace {

// Sets `p` in `set`: replaces the value of the same id, or adds it.
void SetProperty(wire::PropSet& set, const wire::PropVal& p) {
  for (wire::PropVal& q : set) {
    if (q.which == p.which) {
      q.data = p.data;
      return;
    }
  }
  set.push_back(p);
}

bool HasProperty(const wire::PropSet& set, uint32_t id) {
  return std::any_of(set.begin(), set.end(),
                     [id](const wire::PropVal& p) { return p.which == id; });
}

// The value of a receive buffer size property, or why it is not one.
absl::StatusOr<uint32_t> RbsizValue(const wire::PropVal& p) {
  wire::DecodeResult<wire::KnownProperties> known =
      wire::InterpretProperties({p});
  if (!known.ok()) {
    return absl::InvalidArgumentError(std::string(known.error().message));
  }
  return *known->rbsiz;
}

}  // namespace

absl::Status Control::CheckVersionTwo() const {
  if (!ctx_.connected || ctx_.negotiating) {
    return absl::UnavailableError(
        "the connection is not established, or still negotiating its "
        "version (draft-04 §7)");
  }
  if (ctx_.version != wire::kRpcRdmaVersion2) {
    return absl::FailedPreconditionError(
        "transport properties and optional messages exist only on a "
        "connection in RPC-over-RDMA version two (draft-04 §4.1, §5.3)");
  }
  return absl::OkStatus();
}

void Control::OnConnected() {
  const uint64_t epoch = v2_.epoch + 1;
  const uint32_t next_xid = v2_.next_xid;
  v2_ = VersionTwoState{};
  v2_.epoch = epoch;
  v2_.next_xid = next_xid;
  v2_.local_rbsiz = ctx_.config.local.receive_size;
  v2_.local_experimental = ctx_.config.experimental_properties;
}

// §5.2.1: RBSIZ is the size of the receives this side posts. §5.2.2: a
// client says whether it takes backward calls: in every form (GENL) when
// it serves them, not at all (NONE) when it has no backward service; that
// is fixed by its configuration, so rdma_nochg says it will not change
// (§5.3.1). RBSIZ and the experimental properties may change.
wire::V2ConnProp Control::LocalConnProp() const {
  wire::V2ConnProp c;
  c.start.push_back(wire::MakeRbsizProperty(v2_.local_rbsiz));
  if (ctx_.config.requester) {
    wire::SubsetAdd(c.nochg, c.start.size());
    c.start.push_back(wire::MakeBrsProperty(
        ctx_.roles.backward_responder ? wire::BackwardRequestSupport::kGeneral
                                      : wire::BackwardRequestSupport::kNone));
  }
  c.start.insert(c.start.end(), v2_.local_experimental.begin(),
                 v2_.local_experimental.end());
  return c;
}

// §5.3.1: what the peer did not state keeps its default and may not
// change; what it marked in rdma_nochg will not change either.
void Control::AdoptPeerConnProp(const wire::V2ConnProp& connprop) {
  v2_.peer_changeable.clear();
  for (size_t i = 0; i < connprop.start.size(); ++i) {
    if (!wire::SubsetContains(connprop.nochg, i)) {
      v2_.peer_changeable.insert(connprop.start[i].which);
    }
  }
  AdoptPeerProperties(connprop.start);
}

// §5.2.1: the peer's receive buffer size bounds every Send to it (§2:
// 4096 when it does not say); unknown properties are ignored (§5.3.1);
// experimental ones are kept for the owner (§5.4.2). Remote invalidation
// in version two is requested per message (rdma_inv_handle, §6.2.3), not
// by RFC 8797's flag.
void Control::AdoptPeerProperties(const wire::PropSet& properties) {
  wire::DecodeResult<wire::KnownProperties> known =
      wire::InterpretProperties(properties);
  if (known.ok() && known->rbsiz) v2_.peer_rbsiz = *known->rbsiz;
  if (known.ok() && known->brs) v2_.peer_brs = *known->brs;
  for (const wire::PropVal& p : properties) {
    if (wire::IsExperimentalPropId(p.which)) {
      SetProperty(v2_.peer_experimental, p);
    }
  }
  ctx_.thresholds.receive = v2_.local_rbsiz;
  ctx_.thresholds.remote_invalidation = false;
  UpdateSendThreshold();
}

// §5.2.1: while this side has asked the peer for a lower receive buffer
// size, it sends no more than that, until the answer.
void Control::UpdateSendThreshold() {
  uint32_t send = std::min(ctx_.config.local.send_size, v2_.peer_rbsiz);
  for (const auto& [xid, lower] : v2_.lowering) send = std::min(send, lower);
  ctx_.thresholds.send = send;
  ++v2_.epoch;
}

// §5.3.3: each requested change is done or rejected. This side changes
// its receive buffer size within what its receives already hold
// (Config::max_receive_size_granted; a smaller one is always granted,
// §5.2.1 lowers it only on request) and, when its owner decides them
// (Config::decides_properties), the experimental properties it stated at
// connect. Anything else is rejected, unknown ids included (§5.3.3: "not
// known or supported by the receiver").
void Control::OnPropertyRequest(uint32_t xid, const wire::V2ReqProp& request,
                                Actions& out) {
  VersionTwoState::Undecided u;
  u.want = request.want;
  const bool duplicate = v2_.undecided.contains(xid);
  for (size_t i = 0; i < request.want.size(); ++i) {
    const wire::PropVal& p = request.want[i];
    if (duplicate) {
      wire::SubsetAdd(u.answer.rejected, i);
    } else if (p.which == wire::kPropIdRbsiz) {
      absl::StatusOr<uint32_t> rbsiz = RbsizValue(p);
      if (rbsiz.ok() && *rbsiz >= wire::kMinInlineSize &&
          *rbsiz <= ctx_.ReceiveCapacity()) {
        v2_.local_rbsiz = *rbsiz;
        ctx_.thresholds.receive = *rbsiz;
        ++v2_.epoch;
        wire::SubsetAdd(u.answer.done, i);
      } else {
        wire::SubsetAdd(u.answer.rejected, i);
      }
    } else if (wire::IsExperimentalPropId(p.which) &&
               ctx_.config.decides_properties &&
               HasProperty(v2_.local_experimental, p.which)) {
      u.indices.push_back(i);
    } else {
      wire::SubsetAdd(u.answer.rejected, i);
    }
  }
  if (u.indices.empty()) {
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, std::move(u.answer)},
                out);
    return;
  }
  PropertiesRequested asked{xid, {}};
  for (size_t i : u.indices) asked.wanted.emplace_back(i, request.want[i]);
  v2_.undecided.emplace(xid, std::move(u));
  out.push_back(std::move(asked));
}

absl::Status Control::DecideProperties(uint32_t xid,
                                       std::vector<PropertyDecision> decisions,
                                       Actions& out) {
  auto it = v2_.undecided.find(xid);
  if (it == v2_.undecided.end()) {
    return absl::NotFoundError(
        absl::StrCat("no property request ", xid, " awaits a decision"));
  }
  if (decisions.size() != it->second.indices.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "property request ", xid, " has ", it->second.indices.size(),
        " items to decide, not ", decisions.size()));
  }
  VersionTwoState::Undecided u = std::move(it->second);
  v2_.undecided.erase(it);
  wire::V2ResProp answer = u.answer;  // the engine's own decisions, kept
  wire::PropSet applied;
  for (size_t k = 0; k < decisions.size(); ++k) {
    const size_t i = u.indices[k];
    const wire::PropVal& wanted = u.want[i];
    if (!decisions[k]) {
      wire::SubsetAdd(answer.rejected, i);
      continue;
    }
    wire::PropVal now{wanted.which, *std::move(decisions[k])};
    if (now.data == wanted.data) {
      wire::SubsetAdd(answer.done, i);
    } else {
      answer.other.push_back(now);  // §5.3.3: partly as asked
    }
    applied.push_back(std::move(now));
  }
  const wire::V2Header header{xid, wire::kRpcRdmaVersion2,
                              ctx_.roles.responder_grant, std::move(answer)};
  if (wire::V2EncodedSize(header) > ctx_.thresholds.send) {
    // The values do not fit the peer's receive buffers: none of the
    // owner's is taken (the engine's own decisions stand).
    wire::V2ResProp rejected = std::move(u.answer);
    for (size_t i : u.indices) wire::SubsetAdd(rejected.rejected, i);
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, std::move(rejected)},
                out);
    return absl::ResourceExhaustedError(absl::StrCat(
        "the answer with these values exceeds the peer's receive buffer "
        "size, ",
        ctx_.thresholds.send,
        " octets (draft-04 §5.2.1): the owner's changes are rejected"));
  }
  for (const wire::PropVal& p : applied) {
    SetProperty(v2_.local_experimental, p);
  }
  ++v2_.epoch;
  ctx_.SendV2(header, out);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Control::RequestProperties(wire::PropSet want,
                                                    Actions& out) {
  if (absl::Status s = CheckVersionTwo(); !s.ok()) return s;
  std::optional<uint32_t> lower;
  for (const wire::PropVal& p : want) {
    if (!v2_.peer_changeable.contains(p.which)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "property ", p.which,
          " may not change: the peer's RDMA2_CONNPROP did not state it, or "
          "marked it in rdma_nochg (draft-04 §5.3.1)"));
    }
    if (p.which != wire::kPropIdRbsiz) continue;
    absl::StatusOr<uint32_t> rbsiz = RbsizValue(p);
    if (!rbsiz.ok()) return rbsiz.status();
    if (*rbsiz < wire::kMinInlineSize || *rbsiz > ctx_.config.local.send_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a receive buffer size of ", *rbsiz, " octets: this side sends ",
          wire::kMinInlineSize, " to ", ctx_.config.local.send_size,
          " octets inline (inline_threshold.send)"));
    }
    if (*rbsiz < v2_.peer_rbsiz)
      lower = std::min(lower.value_or(*rbsiz), *rbsiz);
  }
  const uint32_t xid = NextControlXid();
  const wire::V2Header header{xid, wire::kRpcRdmaVersion2,
                              ctx_.roles.requester_limit,
                              wire::V2ReqProp{want}};
  if (wire::V2EncodedSize(header) > ctx_.thresholds.send) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the request exceeds the peer's receive buffer size, ",
                     ctx_.thresholds.send, " octets (draft-04 §5.2.1)"));
  }
  if (lower) {
    v2_.lowering[xid] = *lower;
    UpdateSendThreshold();
  }
  VersionTwoState::Exchange x;
  x.kind = VersionTwoState::Exchange::Kind::kRequest;
  x.xid = xid;
  x.messages.push_back(wire::EncodeV2(header));
  x.want = std::move(want);
  Enqueue(std::move(x), out);
  return xid;
}

absl::StatusOr<uint32_t> Control::UpdateProperties(wire::PropSet now,
                                                   Actions& out) {
  if (absl::Status s = CheckVersionTwo(); !s.ok()) return s;
  for (const wire::PropVal& p : now) {
    if (p.which == wire::kPropIdRbsiz) {
      absl::StatusOr<uint32_t> rbsiz = RbsizValue(p);
      if (!rbsiz.ok()) return rbsiz.status();
      if (*rbsiz < v2_.local_rbsiz) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the receive buffer size is ", v2_.local_rbsiz,
            " octets; it is lowered only at the peer's request (draft-04 "
            "§5.2.1)"));
      }
      if (*rbsiz > ctx_.ReceiveCapacity()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the posted receives hold ", ctx_.ReceiveCapacity(),
            " octets (inline_threshold.receive_grantable); the receive "
            "buffer size rises only as far as every posted receive holds "
            "(draft-04 §5.2.1)"));
      }
    } else if (!wire::IsExperimentalPropId(p.which)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "property ", p.which,
          " cannot be updated: only the receive buffer size and "
          "experimental properties (draft-04 §5.4.2) change here"));
    } else if (!HasProperty(v2_.local_experimental, p.which)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "experimental property ", p.which,
          " was not stated at connect; what RDMA2_CONNPROP does not state "
          "may not change (draft-04 §5.3.1)"));
    }
  }
  const uint32_t update_xid = NextControlXid();
  const wire::V2Header update{update_xid, wire::kRpcRdmaVersion2,
                              ctx_.roles.requester_limit, wire::V2UpdProp{now}};
  if (wire::V2EncodedSize(update) > ctx_.thresholds.send) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the update exceeds the peer's receive buffer size, ",
                     ctx_.thresholds.send, " octets (draft-04 §5.2.1)"));
  }
  VersionTwoState::Exchange x;
  x.kind = VersionTwoState::Exchange::Kind::kUpdate;
  x.xid = NextControlXid();
  x.slots = 2;
  x.messages.push_back(wire::EncodeV2(update));
  // The empty request whose answer shows the update was taken (the top of
  // version_two.h).
  x.messages.push_back(wire::EncodeV2(
      wire::V2Header{x.xid, wire::kRpcRdmaVersion2, ctx_.roles.requester_limit,
                     wire::V2ReqProp{}}));
  x.want = std::move(now);
  const uint32_t xid = x.xid;
  Enqueue(std::move(x), out);
  return xid;
}

// §5.3.3: an index marked both done and rejected, or neither, or also
// named in rdma_other, was not changed; a value in rdma_other for a
// requested property is the peer's new value (a partial grant), one for
// any other property is ignored.
void Control::OnPropertyAnswer(uint32_t xid, const wire::V2ResProp& answer,
                               Actions& out) {
  auto found = v2_.in_flight.find(xid);
  if (found == v2_.in_flight.end() ||
      found->second.kind == VersionTwoState::Exchange::Kind::kOptional) {
    return;
  }
  std::optional<VersionTwoState::Exchange> x = EndExchange(xid, out);
  PropertiesAnswered result{xid, {}};
  if (x->kind == VersionTwoState::Exchange::Kind::kRequest) {
    wire::PropSet changed;
    for (size_t i = 0; i < x->want.size(); ++i) {
      const wire::PropVal& wanted = x->want[i];
      const bool done = wire::SubsetContains(answer.done, i);
      const bool rejected = wire::SubsetContains(answer.rejected, i);
      const wire::PropVal* other = nullptr;
      for (const wire::PropVal& o : answer.other) {
        if (o.which == wanted.which) other = &o;
      }
      const bool accepted = done && !rejected && other == nullptr;
      result.accepted.push_back(accepted);
      if (accepted) {
        changed.push_back(wanted);
      } else if (other != nullptr && !done && !rejected) {
        changed.push_back(*other);
        if (!HasProperty(result.other, other->which)) {
          result.other.push_back(*other);
        }
      }
    }
    v2_.lowering.erase(xid);
    // A value that is not one of the property's type is not taken.
    wire::DecodeResult<wire::KnownProperties> known =
        wire::InterpretProperties(changed);
    if (known.ok()) AdoptPeerProperties(changed);
    UpdateSendThreshold();
  }
  out.push_back(std::move(result));
}

}  // namespace rpcrdma::engine
