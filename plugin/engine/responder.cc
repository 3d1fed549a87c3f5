// The responder role of the engine (RFC 8166 §3, §4.5): validating and
// fetching incoming calls, reassembly and error replies (replies are in
// responder_reply.cc).
#include "plugin/engine/responder.h"

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

// The layout the call's lists describe, or nothing when they break RFC
// 8166 §3.4.5-§3.5.4 and the call is answered ERR_CHUNK (§4.5.2).
std::optional<CallLayout> LayoutOf(const wire::ChunkLists& lists, bool nomsg,
                                   uint64_t inline_length) {
  uint64_t base = nomsg ? 0 : inline_length;
  uint64_t chunk_total = 0;
  if (nomsg) {
    // RFC 8166 §3.5.3: RDMA_NOMSG carries the call in a position-zero
    // read chunk.
    if (lists.reads.empty() || lists.reads.front().position != 0) {
      return std::nullopt;
    }
  }
  for (size_t i = 0; i < lists.reads.size(); ++i) {
    const wire::ReadSegment& r = lists.reads[i];
    if (r.position % 4 != 0) return std::nullopt;
    if (i > 0 && r.position < lists.reads[i - 1].position) {
      return std::nullopt;
    }
    if (r.position == 0) {
      if (!nomsg) return std::nullopt;  // only RDMA_NOMSG uses position 0
      base += r.target.length;
    }
  }
  uint32_t last_position = 0;
  uint64_t last_length = 0;
  for (const wire::ReadSegment& r : lists.reads) {
    if (r.position == 0) continue;
    if (r.position > base) return std::nullopt;
    if (r.position != last_position) {
      chunk_total += XdrRoundUp(last_length);
      last_length = 0;
      last_position = r.position;
    }
    last_length += r.target.length;
  }
  chunk_total += XdrRoundUp(last_length);
  // A write or reply chunk with no segments names no memory: no result or
  // reply could ever be conveyed in it (RFC 8166 §3.4.7, §3.5.4), so the
  // call would run only to be answered ERR_CHUNK. It is refused before it
  // reaches a handler, as Linux's svcrdma now refuses it. Write and reply
  // chunks allocate nothing here otherwise.
  const auto without_segments = [](const wire::WriteChunk& chunk) {
    return chunk.empty();
  };
  if (std::any_of(lists.writes.begin(), lists.writes.end(), without_segments) ||
      (lists.reply.has_value() && without_segments(*lists.reply))) {
    return std::nullopt;
  }
  return CallLayout{base, base + chunk_total};
}

}  // namespace

void Responder::SendError(uint32_t xid, wire::V1ErrorCode code, Actions& out,
                          std::optional<wire::V2Error> v2,
                          absl::string_view why) {
  if (ctx_.version == wire::kRpcRdmaVersion2 && v2) {
    ctx_.SendV2(wire::V2Header{xid, wire::kRpcRdmaVersion2,
                               ctx_.roles.responder_grant, *v2},
                out, why);
    return;
  }
  wire::V1Error err;
  err.code = code;
  if (code == wire::V1ErrorCode::kVers) {
    // The versions this side serves (draft-04 §7.2).
    err.vers_low = ctx_.config.require_version_two ? 2 : 1;
    err.vers_high = ctx_.config.serve_version_two ? 2 : 1;
  }
  wire::V1Header h{xid, wire::kRpcRdmaVersion1, ctx_.roles.responder_grant,
                   err};
  out.push_back(ctx_.MakeSend(ctx_.NextOp(), h, {}, std::nullopt, 0, why));
}

void Responder::OnCall(const wire::V1Decoded& decoded,
                       absl::Span<const uint8_t> bytes, uint32_t inv_handle,
                       Actions& out) {
  const wire::V1Header& h = decoded.header;
  if (!TakesProcedure(h, out) || !WithinGrant(out)) return;
  const uint64_t inline_length = bytes.size() - decoded.header_length;
  const std::optional<CallLayout> layout = Validate(h, inline_length, out);
  if (!layout) return;
  Admit(h, *layout, bytes.subspan(decoded.header_length, inline_length),
        inv_handle, out);
}

bool Responder::TakesProcedure(const wire::V1Header& h, Actions& out) {
  switch (h.proc()) {
    case wire::V1Proc::kMsg:
    case wire::V1Proc::kNoMsg:
      return true;
    case wire::V1Proc::kDone:
    case wire::V1Proc::kError:
      // The Linux server drops RDMA_DONE and RDMA_ERROR without a reply.
      return false;
    case wire::V1Proc::kMsgp:
      // RFC 8166 §4.6 deprecates RDMA_MSGP; the Linux server answers it
      // with ERR_CHUNK.
      SendError(h.xid, wire::V1ErrorCode::kChunk, out);
      return false;
  }
  return false;
}

bool Responder::WithinGrant(Actions& out) {
  // RFC 8166 §3.3.1: a requester MUST NOT exceed the credits this side
  // granted; "the RDMA layer may signal an error, possibly terminating the
  // connection". Linux's svcrdma does not count a client's unanswered
  // calls: it keeps sc_max_requests receives posted and grants that many
  // (rq_credits), so a client over the grant is stopped only when the
  // receive queue runs dry (an RNR error ends the connection). This engine
  // replaces every receive at once, so it counts instead and ends the
  // connection the same way. The grant counted is the one this side
  // advertised, also before its first reply: the rule that a requester
  // starts with one credit protects the requester, and calls within what
  // this side posted receives for harm nothing (the Linux client sends one
  // call before the first reply anyway).
  if (calls_unanswered_ < ctx_.roles.responder_grant) return true;
  closing_ = true;
  out.push_back(CloseConnection{absl::ResourceExhaustedError(absl::StrCat(
      "the requester sent more than the ", ctx_.roles.responder_grant,
      " unanswered calls this side granted (RFC 8166 §3.3.1)"))});
  return false;
}

std::optional<CallLayout> Responder::Validate(const wire::V1Header& h,
                                              uint64_t inline_length,
                                              Actions& out) {
  // Validate every list before anything is allocated (RFC 8166 §4.5.2).
  const std::optional<CallLayout> layout =
      LayoutOf(*h.chunks(), h.proc() == wire::V1Proc::kNoMsg, inline_length);
  if (!layout) {
    SendError(h.xid, wire::V1ErrorCode::kChunk, out);
    return std::nullopt;
  }
  // RFC 5666 §11: a call the reassembly budgets can never hold is refused
  // like one over max_call_size.
  const uint64_t size = layout->size;
  if (size > ctx_.config.max_call_size ||
      (ctx_.config.max_reassembly_bytes != 0 &&
       size > ctx_.config.max_reassembly_bytes) ||
      (shared_budget_ != nullptr && size > shared_budget_->capacity())) {
    // Version two has no code for a call larger than this side accepts
    // (draft-04 §6.2.4); RDMA2_ERR_SYSTEM says the refusal is this side's.
    wire::V2Error e;
    e.code = wire::V2ErrorCode::kSystem;
    SendError(h.xid, wire::V1ErrorCode::kChunk, out, e);
    return std::nullopt;
  }
  return layout;
}

void Responder::Admit(const wire::V1Header& h, const CallLayout& layout,
                      absl::Span<const uint8_t> payload, uint32_t inv_handle,
                      Actions& out) {
  CallId id = ctx_.NextCallId();
  Call& c = calls_[id];
  c.id = id;
  c.xid = h.xid;
  c.chunks = *h.chunks();
  c.nomsg = h.proc() == wire::V1Proc::kNoMsg;
  c.size = layout.size;
  c.base_length = static_cast<uint32_t>(layout.base);
  c.inv_handle = inv_handle;
  c.holds_credit = true;
  ++calls_unanswered_;
  // Calls start in arrival order: while any call waits for memory, later
  // ones wait behind it.
  if (awaiting_memory_.empty() && ReserveReassembly(c.size)) {
    c.reserved = c.size;
    return BeginReassembly(c, payload, out);
  }
  // Nothing is allocated for a waiting call but its inline payload (at most
  // one receive buffer, and at most one waiting call per credit).
  c.state = State::kAwaitingMemory;
  c.inline_payload.assign(payload.begin(), payload.end());
  awaiting_memory_.push_back(id);
}

bool Responder::ReserveReassembly(uint64_t bytes) {
  if (ctx_.config.max_reassembly_bytes != 0 &&
      reassembly_held_ + bytes > ctx_.config.max_reassembly_bytes) {
    return false;
  }
  if (shared_budget_ != nullptr && bytes != 0 &&
      !shared_budget_->TryReserve(bytes)) {
    return false;
  }
  reassembly_held_ += bytes;
  return true;
}

void Responder::StartCallsAwaitingMemory(Actions& out) {
  while (ctx_.connected && !closing_ && !awaiting_memory_.empty()) {
    auto it = calls_.find(awaiting_memory_.front());
    if (it == calls_.end()) {
      awaiting_memory_.pop_front();
      continue;
    }
    Call& c = it->second;
    if (!ReserveReassembly(c.size)) break;
    awaiting_memory_.pop_front();
    c.reserved = c.size;
    c.state = State::kReading;
    std::vector<uint8_t> payload = std::move(c.inline_payload);
    BeginReassembly(c, payload, out);
  }
}

void Responder::ReleaseCredit(Call& c) {
  if (c.holds_credit) {
    c.holds_credit = false;
    --calls_unanswered_;
  }
}

// Whatever ends an incoming call (reply sent, ERR_CHUNK, failed read,
// discarded message, disconnect) releases exactly what it reserved.
void Responder::EndIncoming(CallId id, Actions& out) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  Call& c = it->second;
  ReleaseCredit(c);
  const uint64_t released = c.reserved;
  if (released != 0) {
    reassembly_held_ -= released;
    if (shared_budget_ != nullptr) shared_budget_->Release(released);
  }
  if (c.state == State::kAwaitingMemory) {
    std::erase(awaiting_memory_, id);
  }
  calls_.erase(it);
  // A call of zero octets releases nothing but may have kept later calls
  // waiting behind it in arrival order.
  StartCallsAwaitingMemory(out);
}

void Responder::BeginReassembly(Call& c,
                                absl::Span<const uint8_t> inline_payload,
                                Actions& out) {
  const CallId id = c.id;
  c.state = State::kReading;
  if (PlaceReadsDirectly(c, inline_payload, c.nomsg, c.size)) {
    if (c.reads_pending == 0) return Deliver(c, out);
    return IssueReads(out);
  }
  // Mixed layout (position zero and other chunks): the chunks are staged
  // and assembled; the staging buffer is freed by assembly, so the
  // reservation bounds what is held once reads complete.
  c.staging = Buffer(c.size);
  size_t cursor = 0;
  if (!c.nomsg) {
    CopyBytes(c.staging.data(), inline_payload.data(), inline_payload.size());
    cursor = inline_payload.size();
  }
  for (const wire::ReadSegment& r : c.chunks.reads) {
    // Chunk data is laid out back to back after the base stream; the
    // roundup gaps are filled during assembly.
    if (r.target.length != 0) {
      read_queue_.push_back(
          {id, r.target, c.staging.span().subspan(cursor, r.target.length)});
      ++c.reads_pending;
    }
    cursor += r.target.length;
  }
  if (c.reads_pending == 0) return Deliver(c, out);
  IssueReads(out);
}

// The call's final layout is known before any read: the base stream with
// every chunk at its position plus XDR roundup (RFC 8166 §3.4.6). Unless
// the position-zero chunk and other chunks come together (their layout
// depends on each other), the inline pieces are copied and the RDMA Reads
// land directly where the chunks belong, so the reassembled call is never
// copied again.
bool Responder::PlaceReadsDirectly(Call& c,
                                   absl::Span<const uint8_t> inline_payload,
                                   bool nomsg, size_t total) {
  const auto& reads = c.chunks.reads;
  const bool position_zero =
      std::any_of(reads.begin(), reads.end(),
                  [](const wire::ReadSegment& r) { return r.position == 0; });
  if (position_zero && !nomsg) return false;
  if (position_zero &&
      std::any_of(reads.begin(), reads.end(),
                  [](const wire::ReadSegment& r) { return r.position != 0; })) {
    return false;
  }
  // Not zero-filled (see rpcrdma/buffer.h): every octet is written below,
  // by a copy, a read, or the explicit zero roundup of a chunk.
  c.message = Buffer(total);
  auto read_into = [&](const wire::ReadSegment& r, size_t at) {
    if (r.target.length == 0) return;
    read_queue_.push_back(
        {c.id, r.target, c.message.span().subspan(at, r.target.length)});
    ++c.reads_pending;
  };
  size_t dest = 0;
  size_t src = 0;  // octets of the inline payload placed so far
  for (size_t i = 0; i < reads.size();) {
    const uint32_t position = reads[i].position;
    if (!nomsg) {
      CopyBytes(c.message.data() + dest, inline_payload.data() + src,
                position - src);
      dest += position - src;
      src = position;
    }
    size_t length = 0;
    for (; i < reads.size() && reads[i].position == position; ++i) {
      read_into(reads[i], dest + length);
      length += reads[i].target.length;
    }
    // The position-zero chunk is the whole message (RFC 8166 §3.5.3): it
    // gets no roundup, and the call's size counts none.
    if (position == 0) {
      dest += length;
      continue;
    }
    // The roundup, written explicitly (the buffer is not zero-filled); an
    // empty pad may sit in an empty buffer, whose pointer is null.
    if (const size_t pad = XdrPad(length); pad != 0) {
      std::memset(c.message.data() + dest + length, 0, pad);
    }
    dest += XdrRoundUp(length);
  }
  if (!nomsg) {
    CopyBytes(c.message.data() + dest, inline_payload.data() + src,
              inline_payload.size() - src);
  }
  c.assembled = true;
  return true;
}

void Responder::IssueReads(Actions& out) {
  // At most max_reads_ RDMA Reads outstanding (the negotiated ORD).
  while (reads_in_flight_.size() < max_reads_ && !read_queue_.empty()) {
    PendingRead r = read_queue_.pop_front();
    if (calls_.count(r.call) == 0) continue;
    OpId op = ctx_.NextOp();
    reads_in_flight_[op] = r.call;
    out.push_back(RdmaRead{op, r.source, r.destination});
  }
}

void Responder::OnReadComplete(OpId op, bool success, Actions& out) {
  auto it = reads_in_flight_.find(op);
  if (it == reads_in_flight_.end()) return;
  CallId id = it->second;
  reads_in_flight_.erase(it);
  auto call = calls_.find(id);
  if (call != calls_.end()) {
    Call& c = call->second;
    --c.reads_pending;
    if (!success || !ctx_.connected) {
      // The connection is failing; the call is never delivered and is
      // dropped once no read of it is still in flight.
      c.failed = true;
      read_queue_.EraseIf([id](const PendingRead& r) { return r.call == id; });
      bool busy = false;
      for (const auto& [o, cid] : reads_in_flight_) busy |= cid == id;
      if (!busy) EndIncoming(id, out);
    } else if (c.reads_pending == 0 && !c.failed) {
      Deliver(c, out);
    }
  }
  if (ctx_.connected) IssueReads(out);
}

void Responder::Deliver(Call& c, Actions& out) {
  if (!c.assembled) Assemble(c);
  // RFC 8166 §4.1: rdma_xid MUST be the RPC message's XID. A message that
  // is no RPC call (shorter than the smallest call header, msg_type not
  // CALL, or another XID) never reaches the handler: Linux's svc_process
  // drops a short message or one of the wrong direction without a reply,
  // and so does this engine (svcrdma does not compare the two XIDs; this
  // engine cannot deliver a call whose XID is ambiguous).
  const absl::Span<const uint8_t> m = c.message;
  if (m.size() < kMinRpcCallHeader ||
      LoadBigEndian32(m.data() + 4) != kRpcCall ||
      LoadBigEndian32(m.data()) != c.xid) {
    ++calls_discarded_;
    return EndIncoming(c.id, out);
  }
  DeliverCall deliver{c.id, c.xid, std::move(c.message), {}, 0};
  for (const auto& w : c.chunks.writes) {
    deliver.write_chunk_capacities.push_back(ChunkLength(w));
  }
  if (c.chunks.reply) {
    deliver.reply_chunk_capacity = ChunkLength(*c.chunks.reply);
  }
  c.state = State::kDelivered;
  out.push_back(std::move(deliver));
}

void Responder::Assemble(Call& c) {
  // The staging buffer holds the base stream (inline payload or position-
  // zero chunk) followed by each non-zero-position chunk's octets. Insert
  // the chunks at their positions with XDR roundup (RFC 8166 §3.4.6: the
  // requester leaves the roundup out of the chunk).
  absl::Span<const uint8_t> staging = c.staging;
  std::vector<Item> items;
  size_t cursor = c.base_length;
  const auto& reads = c.chunks.reads;
  for (size_t i = 0; i < reads.size();) {
    uint32_t position = reads[i].position;
    size_t length = 0;
    size_t j = i;
    for (; j < reads.size() && reads[j].position == position; ++j) {
      length += reads[j].target.length;
    }
    if (position != 0) {
      items.push_back({position, staging.subspan(cursor, length)});
      cursor += length;
    }
    i = j;
  }
  absl::Span<const uint8_t> base = staging.subspan(0, c.base_length);
  c.message = Buffer(InsertedSize(base, items));
  InsertItemsInto(base, items, c.message.span());
  c.staging = Buffer();
}

void Responder::OnConnected(uint32_t max_reads) {
  closing_ = false;
  max_reads_ = max_reads;
}

void Responder::OnDisconnected(Actions& out) {
  // Calls not waiting for a read or send completion are dropped (releasing
  // their memory); memory the fabric may still touch stays reserved until
  // its flush completion ends the call. No credit survives the connection.
  read_queue_.clear();
  awaiting_memory_.clear();
  std::vector<CallId> ended;
  for (auto& [id, c] : calls_) {
    ReleaseCredit(c);
    bool busy = false;
    for (const auto& [op, call] : reads_in_flight_) busy |= call == id;
    if (!busy && c.state != State::kSending) ended.push_back(id);
  }
  std::sort(ended.begin(), ended.end());
  for (CallId id : ended) EndIncoming(id, out);
}

void Responder::OnUndecodableCall(absl::Span<const uint8_t> bytes,
                                  const wire::DecodeError& error,
                                  Actions& out) {
  // An error is never answered with an error (RFC 8166 §4.5: RDMA_ERROR
  // goes from responder to requester only); a malformed one is dropped,
  // as Linux's svcrdma drops every RDMA_ERROR.
  if (LoadBigEndian32(bytes.data() + 12) ==
      static_cast<uint32_t>(wire::V1Proc::kError)) {
    return;
  }
  // RFC 8166 §4.5.1 / §4.5.2.
  wire::V1Header reply =
      wire::V1ErrorReplyFor(bytes, error, ctx_.roles.responder_grant);
  out.push_back(ctx_.MakeSend(ctx_.NextOp(), reply, {}));
}

}  // namespace rpcrdma::engine
