// The responder's replies (RFC 8166 §3.4.7, §3.5): each carried out as
// PlanReply decides (inline, through the reply chunk, or ERR_CHUNK when the
// call offered too little room), with the Send With Invalidate RFC 8797
// §4.1 allows.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine_util.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/engine/responder.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {
namespace {

// What a call offered for its reply, in the words of the ERR_CHUNK log
// line (RFC 8166 §3.4.7, §3.5.4).
std::string OfferedRoom(const wire::ChunkLists& chunks, uint32_t threshold) {
  std::string writes;
  for (const wire::WriteChunk& w : chunks.writes) {
    absl::StrAppend(&writes, writes.empty() ? "" : ", ", ChunkLength(w));
  }
  return absl::StrCat(
      "inline up to ", threshold, " octets (the inline threshold), ",
      chunks.reply ? absl::StrCat("a reply chunk of ",
                                  ChunkLength(*chunks.reply), " octets")
                   : std::string("no reply chunk"),
      ", ", chunks.writes.size(), " write chunks",
      writes.empty() ? "" : absl::StrCat(" of ", writes, " octets"));
}

// Why a reply is answered ERR_CHUNK (RFC 8166 §4.5.2): its size, what the
// call offered and what the requester changes, so that the server's log
// tells the operator which client setting to raise.
std::string NoRoomForReply(absl::string_view what,
                           const wire::ChunkLists& chunks, uint32_t threshold,
                           uint64_t needed) {
  return absl::StrCat(
      what, "; the call offered ", OfferedRoom(chunks, threshold),
      "; the client should offer room for ", needed,
      " octets: raise its CallRequest::max_reply_size (rpcgen and Thrift "
      "clients: their DDP policy's reply size) or its result buffers");
}

// The version-two error for a reply planned ERR_CHUNK (draft-04 §6.2.4).
wire::V2Error NoRoomError(const ReplyPlan& plan) {
  wire::V2Error e;
  e.code = plan.no_room == NoRoom::kWriteChunkTooSmall
               ? wire::V2ErrorCode::kWriteResource
               : wire::V2ErrorCode::kReplyResource;
  if (plan.no_room == NoRoom::kWriteChunkTooSmall) {
    e.chunk_index = static_cast<uint32_t>(plan.chunk_index);
  }
  e.length_needed = Clamp32(plan.length_needed);
  return e;
}

// NoRoomForReply's words for a reply planned ERR_CHUNK.
std::string WhyNoRoom(const ReplyPlan& plan, const wire::ChunkLists& chunks,
                      uint32_t threshold) {
  std::string what;
  switch (plan.no_room) {
    case NoRoom::kWriteChunkTooSmall:
      what = absl::StrCat("result ", plan.chunk_index, " of the reply is ",
                          plan.length_needed, " octets, more than write chunk ",
                          plan.chunk_index, " holds");
      break;
    case NoRoom::kReplyTooLarge:
      what = absl::StrCat(
          "the reply is ", plan.stream_size, " octets (",
          plan.header_size + plan.stream_size,
          " inline with its transport header), too large for the inline "
          "threshold and for the reply chunk");
      break;
    case NoRoom::kHeaderTooLarge:
    case NoRoom::kNone:
      what = absl::StrCat("the transport header returning the chunks is ",
                          plan.header_size,
                          " octets, more than the inline threshold");
      break;
  }
  return NoRoomForReply(what, chunks, threshold, plan.length_needed);
}

// What PlanReply decides from: the reply's sizes, the chunks the call
// offered and this connection's send threshold.
ReplyPlanInput ReplyPlanInputFor(const wire::ChunkLists& offered,
                                 const OutgoingReply& reply, uint32_t version,
                                 uint32_t send_threshold) {
  ReplyPlanInput in;
  in.version = version;
  in.reduced_size = reply.xdr.size();
  for (const DdpResult& r : reply.results) {
    in.result_sizes.push_back(r.data.size());
  }
  for (const wire::WriteChunk& w : offered.writes) {
    in.write_chunks.push_back({ChunkLength(w), w.size()});
  }
  if (offered.reply) {
    in.reply_chunk =
        OfferedChunk{ChunkLength(*offered.reply), offered.reply->size()};
  }
  in.send_threshold = send_threshold;
  return in;
}

}  // namespace

std::optional<uint32_t> Responder::InvalidateHandleFor(const Call& c) const {
  std::set<uint32_t> handles;
  for (const auto& r : c.chunks.reads) handles.insert(r.target.handle);
  for (const auto& w : c.chunks.writes) {
    for (const auto& s : w) handles.insert(s.handle);
  }
  if (c.chunks.reply) {
    for (const auto& s : *c.chunks.reply) handles.insert(s.handle);
  }
  // Version two (draft-04 §3, §6.2.3): the handle the requester named, if
  // this side is willing and the call's chunks hold it (as Linux's svcrdma
  // invalidates only a handle it was sent).
  if (ctx_.version == wire::kRpcRdmaVersion2) {
    if (!ctx_.config.local.remote_invalidation || c.inv_handle == 0 ||
        handles.count(c.inv_handle) == 0) {
      return std::nullopt;
    }
    return c.inv_handle;
  }
  // RFC 8797 §4.1: only when both peers set R, and (as the Linux server
  // does) only when every segment of the call names one and the same
  // handle, so the choice is unambiguous.
  if (!ctx_.thresholds.remote_invalidation || handles.size() != 1) {
    return std::nullopt;
  }
  return *handles.begin();
}

absl::Status Responder::Reply(CallId id, OutgoingReply reply, Actions& out) {
  auto it = calls_.find(id);
  if (it == calls_.end() || it->second.state != State::kDelivered) {
    return absl::InvalidArgumentError(
        absl::StrCat("call ", id.value(), " is not awaiting a reply"));
  }
  Call& c = it->second;
  uint32_t previous = 0;
  for (const DdpResult& r : reply.results) {
    if (r.position % 4 != 0 || r.position < previous ||
        r.position > reply.xdr.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DDP result position ", r.position,
          " is unaligned, out of order or past the reduced stream"));
    }
    previous = r.position;
  }
  if (!ctx_.connected) {
    EndIncoming(id, out);
    return absl::UnavailableError("connection lost before the reply");
  }
  const ReplyPlan plan = PlanReply(
      ReplyPlanInputFor(c.chunks, reply, ctx_.version, ctx_.thresholds.send));
  if (plan.form == ReplyForm::kErrChunk) {
    // The reply cannot be conveyed: ERR_CHUNK instead (as Linux).
    ReleaseCredit(c);
    SendError(c.xid, wire::V1ErrorCode::kChunk, out, NoRoomError(plan),
              WhyNoRoom(plan, c.chunks, ctx_.thresholds.send));
    // The reply's memory is free at once, like the call's state.
    out.push_back(ReplySent{id});
    EndIncoming(id, out);
    return absl::OkStatus();
  }
  SendReply(c, plan, reply, out);
  return absl::OkStatus();
}

void Responder::SendReply(Call& c, const ReplyPlan& plan, OutgoingReply& reply,
                          Actions& out) {
  const auto& writes = c.chunks.writes;
  // Results with a write chunk go there; the rest stay inline.
  std::vector<Item> inline_items;
  for (size_t i = plan.results_in_write_list; i < reply.results.size(); ++i) {
    inline_items.push_back({reply.results[i].position, reply.results[i].data});
  }
  std::vector<wire::WriteChunk> returned;
  for (size_t i = 0; i < writes.size(); ++i) {
    size_t n = i < reply.results.size() ? reply.results[i].data.size() : 0;
    returned.push_back(FillChunk(writes[i], n));
  }
  // Without inline items the reply stream is the caller's, as it is.
  c.reply_stream = inline_items.empty() ? std::move(reply.xdr)
                                        : InsertItems(reply.xdr, inline_items);
  const bool use_reply_chunk = plan.form == ReplyForm::kReplyChunk;
  wire::V1Header h{c.xid, wire::kRpcRdmaVersion1, ctx_.roles.responder_grant,
                   wire::V1Msg{{{}, std::move(returned), std::nullopt}}};
  if (use_reply_chunk) {
    // RFC 8166 §3.5.4: a long reply goes through the reply chunk.
    wire::ChunkLists& lists = std::get<wire::V1Msg>(h.body).chunks;
    lists.reply = FillChunk(*c.chunks.reply, c.reply_stream.size());
    h.body = wire::V1NoMsg{std::move(lists)};
  }

  // DDP results into the write chunks (no roundup, RFC 8166 §3.4.6), then
  // the reply chunk, then the Send, which RC ordering places after them.
  auto write_out = [&](absl::Span<const uint8_t> data,
                       const wire::WriteChunk& chunk) {
    size_t at = 0;
    for (const wire::Segment& s : chunk) {
      if (at == data.size()) break;
      size_t n = std::min<size_t>(s.length, data.size() - at);
      out.push_back(RdmaWrite{ctx_.NextOp(),
                              data.subspan(at, n),
                              {s.handle, static_cast<uint32_t>(n), s.offset}});
      at += n;
    }
  };
  for (size_t i = 0; i < plan.results_in_write_list; ++i) {
    write_out(reply.results[i].data, writes[i]);
  }
  if (use_reply_chunk) write_out(c.reply_stream, *c.chunks.reply);
  c.send_op = ctx_.NextOp();
  c.state = State::kSending;
  // The credit is free once the reply is on its way: the requester may
  // reuse it as soon as it sees the reply, which can race the send
  // completion. The call's memory is released when the Send completes.
  ReleaseCredit(c);
  reply_sends_[c.send_op] = c.id;
  out.push_back(ctx_.MakeSend(c.send_op, h,
                              use_reply_chunk
                                  ? absl::Span<const uint8_t>()
                                  : absl::Span<const uint8_t>(c.reply_stream),
                              InvalidateHandleFor(c)));
}

void Responder::OnSendComplete(OpId op, Actions& out) {
  auto it = reply_sends_.find(op);
  if (it == reply_sends_.end()) return;
  CallId id = it->second;
  reply_sends_.erase(it);
  out.push_back(ReplySent{id});
  EndIncoming(id, out);
}

}  // namespace rpcrdma::engine
