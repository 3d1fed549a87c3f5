// The requester role of the engine (RFC 8166 §3, §4): call forms,
// credits, cancellation and invalidation (what a reply does to a call is
// in requester_reply.cc).
#include "plugin/engine/requester.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine_util.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

namespace {

// The call with every DDP argument inserted, for the forms that carry it
// whole.
std::vector<uint8_t> WholeCall(const OutgoingCall& call) {
  std::vector<Item> all;
  all.reserve(call.arguments.size());
  for (const DdpArgument& a : call.arguments)
    all.push_back({a.position, a.data});
  return InsertItems(call.xdr, all);
}

}  // namespace

absl::StatusOr<CallId> Requester::StartCall(OutgoingCall call, Actions& out) {
  if (!ctx_.roles.requester_on) {
    return absl::FailedPreconditionError(
        "requester role disabled and no peer backchannel configured");
  }
  if (call.xdr.size() < 8 || call.xdr.size() % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "call stream of ", call.xdr.size(),
        " octets is not an XDR RPC call (XID and msg_type needed)"));
  }
  if (LoadBigEndian32(call.xdr.data() + 4) != kRpcCall) {
    return absl::InvalidArgumentError(
        "msg_type of the call stream is not CALL");
  }
  uint32_t previous = 0;
  for (const DdpArgument& a : call.arguments) {
    if (a.position % 4 != 0 || a.position < previous ||
        a.position > call.xdr.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DDP argument position ", a.position,
          " is unaligned, out of order or past the reduced stream"));
    }
    previous = a.position;
  }
  for (const auto& r : call.results) {
    if (r.empty()) {
      return absl::InvalidArgumentError("empty DDP result destination");
    }
  }
  uint32_t xid = LoadBigEndian32(call.xdr.data());
  if (live_xids_.count(xid) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("XID ", xid, " is already in flight"));
  }
  if (by_xid_.count(xid) != 0 || cancelled_xids_.count(xid) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("XID ", xid, " is still awaiting its reply"));
  }
  CallId id = ctx_.NextCallId();
  Call& c = calls_[id];
  live_xids_.insert(xid);
  c.id = id;
  c.xid = xid;
  c.call = std::move(call);
  queue_.push_back(id);
  Dispatch(out);
  return id;
}

void Requester::Dispatch(Actions& out) {
  // Version negotiation (draft-04 §7): nothing goes out before its answer,
  // and nothing at all after it failed.
  if (ctx_.negotiating) return;
  if (!ctx_.negotiation.ok()) {
    std::vector<CallId> ids;
    while (!queue_.empty()) ids.push_back(queue_.pop_front());
    for (CallId id : ids) {
      Finish(calls_.at(id), FailCall{id, ctx_.negotiation}, std::nullopt, out);
    }
    return;
  }
  // RFC 8166 §3.3.1: never more calls outstanding than the grant.
  while (ctx_.connected && outstanding_ < grant_ && !queue_.empty()) {
    SendCall(calls_.at(queue_.pop_front()), out);
  }
}

absl::StatusOr<std::vector<wire::Segment>> Requester::ExposeSpan(
    Call& c, absl::Span<uint8_t> memory, uint32_t access) {
  std::vector<wire::Segment> segments;
  size_t at = 0;
  do {
    size_t n =
        std::min<size_t>(memory.size() - at, ctx_.config.max_segment_size);
    absl::StatusOr<wire::Segment> s =
        ctx_.exposer->Expose(memory.subspan(at, n), access);
    if (!s.ok()) return s.status();
    c.handles.push_back(s->handle);
    segments.push_back(*s);
    at += n;
  } while (at < memory.size());
  return segments;
}

void Requester::SendCall(Call& c, Actions& out) {
  c.state = State::kSent;
  c.holds_credit = true;
  ++outstanding_;
  by_xid_[c.xid] = c.id;
  const CallPlanInput in = PlanInputFor(c.call);
  absl::Status sent = gate_.BackwardCallAllowed(in);
  if (sent.ok()) sent = MarshalCall(c, in, out);
  if (!sent.ok()) {
    ReleaseCredit(c);
    Finish(c, FailCall{c.id, std::move(sent)}, std::nullopt, out);
    Dispatch(out);
  }
}

// What PlanCall decides from: the call's sizes and this connection's
// thresholds and limits.
CallPlanInput Requester::PlanInputFor(const OutgoingCall& call) const {
  CallPlanInput in;
  in.version = ctx_.version;
  in.reduced_size = call.xdr.size();
  for (const DdpArgument& a : call.arguments) {
    in.argument_sizes.push_back(a.data.size());
  }
  for (absl::Span<uint8_t> r : call.results)
    in.result_sizes.push_back(r.size());
  in.max_reply_size = call.max_reply_size;
  in.send_threshold = ctx_.thresholds.send;
  in.receive_threshold = ctx_.thresholds.receive;
  in.max_segment_size = ctx_.config.max_segment_size;
  in.max_header_segments = ctx_.config.max_header_segments;
  return in;
}

absl::Status Requester::MarshalCall(Call& c, const CallPlanInput& in,
                                    Actions& out) {
  const CallPlan plan = PlanCall(in);
  // The room for the reply is exposed even for a call that is refused:
  // its handles are revoked like those of any failed call.
  if (absl::Status offered = ExposeReplyRoom(c, plan.offers_reply_chunk);
      !offered.ok()) {
    return offered;
  }
  if (plan.form == CallForm::kRefused) return plan.refusal;
  wire::ChunkLists lists{{}, c.write_chunks, c.reply_chunk};
  // Without arguments the reduced stream is the call, sent as it is; a
  // chunked call's arguments are never copied.
  absl::Span<const uint8_t> payload = c.call.xdr;
  std::vector<uint8_t> whole;
  switch (plan.form) {
    case CallForm::kInline:
      if (!c.call.arguments.empty()) {
        whole = WholeCall(c.call);
        payload = whole;
      }
      break;
    case CallForm::kReadChunks:
      // No roundup in the chunk (RFC 8166 §3.4.6); an empty argument has
      // no chunk, as the plan counted.
      for (const DdpArgument& a : c.call.arguments) {
        if (a.data.empty()) continue;
        auto segments = ExposeSpan(c, a.data, kRemoteRead);
        if (!segments.ok()) return segments.status();
        for (const wire::Segment& s : *segments) {
          lists.reads.push_back({a.position, s});
        }
      }
      break;
    case CallForm::kLongCall: {
      c.long_call = WholeCall(c.call);
      auto segments = ExposeSpan(c, absl::MakeSpan(c.long_call), kRemoteRead);
      if (!segments.ok()) return segments.status();
      for (const wire::Segment& s : *segments) lists.reads.push_back({0, s});
      payload = {};
      break;
    }
    case CallForm::kRefused:
      break;
  }
  wire::V1Header header{c.xid, wire::kRpcRdmaVersion1,
                        ctx_.roles.requester_limit, wire::V1Msg{}};
  if (plan.form == CallForm::kLongCall) {
    header.body = wire::V1NoMsg{std::move(lists)};
  } else {
    header.body = wire::V1Msg{std::move(lists)};
  }
  // Version two (§3, §6.2.3): the responder may invalidate one handle of
  // the call, every one of which was registered for this call alone.
  const uint32_t inv_handle = ctx_.version == wire::kRpcRdmaVersion2 &&
                                      ctx_.config.local.remote_invalidation &&
                                      !c.handles.empty()
                                  ? c.handles.front()
                                  : 0;
  out.push_back(
      ctx_.MakeSend(ctx_.NextOp(), header, payload, std::nullopt, inv_handle));
  return absl::OkStatus();
}

absl::Status Requester::ExposeReplyRoom(Call& c, bool reply_chunk) {
  // Write chunks for DDP-eligible results (RFC 8166 §3.4.7).
  for (absl::Span<uint8_t> result : c.call.results) {
    auto segments = ExposeSpan(c, result, kRemoteWrite);
    if (!segments.ok()) return segments.status();
    c.write_chunks.push_back(*std::move(segments));
  }
  if (!reply_chunk) return absl::OkStatus();
  // Not zero-filled: the peer writes what the reply holds, and only that
  // much is handed over.
  c.reply_buffer = Buffer(c.call.max_reply_size);
  auto segments = ExposeSpan(c, c.reply_buffer.span(), kRemoteWrite);
  if (!segments.ok()) return segments.status();
  c.reply_chunk = *std::move(segments);
  return absl::OkStatus();
}

void Requester::ReleaseCredit(Call& c) {
  if (c.holds_credit) {
    c.holds_credit = false;
    --outstanding_;
  }
}

void Requester::Finish(Call& c, Action outcome,
                       std::optional<uint32_t> remotely_invalidated,
                       Actions& out) {
  // The XID may be reused from here on (a call that allows a retry is
  // started again with it).
  if (c.state != State::kFinishing) live_xids_.erase(c.xid);
  c.state = State::kFinishing;
  c.outcome = std::move(outcome);
  auto it = by_xid_.find(c.xid);
  if (it != by_xid_.end() && it->second == c.id) by_xid_.erase(it);
  for (uint32_t handle : c.handles) {
    if (remotely_invalidated == handle) continue;  // RFC 8797 §4.1
    out.push_back(Invalidate{handle});
    by_handle_[handle] = c.id;
    ++c.pending_invalidations;
  }
  c.handles.clear();
  MaybeComplete(c, out);
}

void Requester::MaybeComplete(Call& c, Actions& out) {
  if (c.pending_invalidations != 0) return;
  out.push_back(*std::move(c.outcome));
  calls_.erase(c.id);
}

void Requester::OnInvalidated(uint32_t handle, Actions& out) {
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return;
  CallId id = it->second;
  by_handle_.erase(it);
  auto call = calls_.find(id);
  if (call == calls_.end()) return;
  --call->second.pending_invalidations;
  MaybeComplete(call->second, out);
}

void Requester::Cancel(CallId id, absl::Status status, Actions& out) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  Call& c = it->second;
  switch (c.state) {
    case State::kQueued:
      queue_.EraseIf([id](CallId queued) { return queued == id; });
      break;
    case State::kSent:
      // The responder may still answer and consume a receive; the credit
      // stays taken until that reply arrives (RFC 8166 §3.3.1).
      cancelled_xids_.insert(c.xid);
      c.holds_credit = false;
      break;
    case State::kFinishing:
      return;
  }
  Finish(c, FailCall{id, std::move(status)}, std::nullopt, out);
}

void Requester::OnReply(const wire::V1Decoded& decoded,
                        absl::Span<const uint8_t> bytes,
                        std::optional<uint32_t> invalidated, Actions& out) {
  Call& c = calls_.at(by_xid_.at(decoded.header.xid));
  const wire::V1Header& h = decoded.header;
  // RFC 8166 §3.3.1: the grant in every reply; a zero grant would stall
  // the connection, so at least one (as the Linux client does), and never
  // more than this side posts receives for (for backward calls: never more
  // than the configured peer backchannel limit, RFC 8167 §3.1).
  TakeGrant(h.credits);
  ReleaseCredit(c);

  absl::StatusOr<CompleteCall> reply_status = ReplyOutcome(decoded, bytes, c);
  if (reply_status.ok()) {
    Finish(c, *std::move(reply_status), invalidated, out);
  } else {
    Finish(c, FailCall{c.id, reply_status.status()}, invalidated, out);
  }
  Dispatch(out);
}

void Requester::TakeGrant(uint32_t credits) {
  grant_ = std::clamp<uint32_t>(credits, 1, ctx_.roles.requester_limit);
}

void Requester::OnConnected() {
  // RFC 8166 §3.3.1: one call outstanding until the first reply.
  grant_ = 1;
  outstanding_ = 0;
}

void Requester::EndProbe(std::optional<uint32_t> credits) {
  if (credits.has_value()) TakeGrant(*credits);
  outstanding_ = 0;
}

void Requester::OnDisconnected(Actions& out) {
  grant_ = 1;
  outstanding_ = 0;
  by_xid_.clear();
  cancelled_xids_.clear();
  // Every call not already finishing fails, after invalidation, in the
  // order the calls were made.
  queue_.clear();
  std::vector<CallId> ids;
  for (auto& [id, c] : calls_) {
    if (c.state != State::kFinishing) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  for (CallId id : ids) {
    Call& c = calls_.at(id);
    c.holds_credit = false;
    const bool never_sent = c.state == State::kQueued;
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
}

void Requester::FailUndecodableReply(uint32_t xid, const absl::Status& why,
                                     std::optional<uint32_t> invalidated,
                                     Actions& out) {
  Call& c = calls_.at(by_xid_.at(xid));
  ReleaseCredit(c);
  Finish(c,
         FailCall{c.id, absl::DataLossError(absl::StrCat("undecodable reply: ",
                                                         why.message()))},
         invalidated, out);
  Dispatch(out);
}

void Requester::FailOnPeerError(uint32_t xid, uint32_t credits,
                                absl::Status status, bool reply_did_not_fit,
                                Actions& out) {
  Call& c = calls_.at(by_xid_.at(xid));
  TakeGrant(credits);
  ReleaseCredit(c);
  Finish(c,
         FailCall{c.id, reply_did_not_fit ? WithReplyRoom(status, c)
                                          : std::move(status)},
         std::nullopt, out);
  Dispatch(out);
}

bool Requester::DropLateReply(uint32_t xid, std::optional<uint32_t> credits,
                              Actions& out) {
  if (cancelled_xids_.erase(xid) == 0) return false;
  --outstanding_;
  if (credits.has_value()) TakeGrant(*credits);
  Dispatch(out);
  return true;
}

}  // namespace rpcrdma::engine
