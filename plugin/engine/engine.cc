#include "plugin/engine/engine.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/wire/v2.h"
#include "plugin/wire/xdr.h"

namespace rpcrdma::engine {
namespace {

// RFC 8166 §4.5 and the Linux server: a call header shorter than the
// smallest RDMA_MSG header (four fixed words and three empty lists) is
// dropped without a reply.
constexpr size_t kMinCallHeader = 28;
// The smallest message a requester can receive: RDMA_ERROR with ERR_CHUNK
// (four fixed words and the error code), the Linux client's
// RPCRDMA_HDRLEN_ERR.
constexpr size_t kMinReplyHeader = 20;
// RPC msg_type CALL (RFC 5531 §9), the word after the XID.
constexpr uint32_t kRpcCall = 0;

struct Item {
  uint32_t position;
  absl::Span<const uint8_t> data;
};

// Rebuilds an XDR stream from its reduced form by inserting each item with
// its XDR roundup (RFC 4506 §4.10) at its position. Positions are validated
// (non-decreasing, within the stream) by the caller.
std::vector<uint8_t> InsertItems(absl::Span<const uint8_t> reduced,
                                 absl::Span<const Item> items) {
  size_t total = reduced.size();
  for (const Item& item : items) total += wire::XdrRoundUp(item.data.size());
  std::vector<uint8_t> out;
  out.reserve(total);
  size_t at = 0;
  for (const Item& item : items) {
    out.insert(out.end(), reduced.begin() + static_cast<ptrdiff_t>(at),
               reduced.begin() + item.position);
    out.insert(out.end(), item.data.begin(), item.data.end());
    out.insert(out.end(), wire::XdrPad(item.data.size()), uint8_t{0});
    at = item.position;
  }
  out.insert(out.end(), reduced.begin() + static_cast<ptrdiff_t>(at),
             reduced.end());
  return out;
}

uint64_t ChunkLength(const wire::WriteChunk& chunk) {
  uint64_t total = 0;
  for (const wire::Segment& s : chunk) total += s.length;
  return total;
}

// Checks a chunk the responder returned against the one this side offered
// (same handles, lengths within what was offered) and returns the octets it
// reports as written.
absl::StatusOr<uint32_t> ReturnedLength(const wire::WriteChunk& returned,
                                        const wire::WriteChunk& offered,
                                        absl::string_view what) {
  if (returned.size() > offered.size()) {
    return absl::DataLossError(absl::StrCat(what, " returned with ",
                                            returned.size(), " segments, ",
                                            offered.size(), " were offered"));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < returned.size(); ++i) {
    if (returned[i].handle != offered[i].handle ||
        returned[i].length > offered[i].length) {
      return absl::DataLossError(absl::StrCat(
          what, " segment ", i, " does not match the offered segment"));
    }
    total += returned[i].length;
  }
  return static_cast<uint32_t>(total);
}

// Fills a returned chunk: the offered segments with the lengths actually
// used, `length` octets spread over them in order (RFC 8166 §3.4.7; an
// unused chunk comes back with every length zero, as the Linux server does).
wire::WriteChunk FillChunk(const wire::WriteChunk& offered, size_t length) {
  wire::WriteChunk used = offered;
  for (wire::Segment& s : used) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(length, s.length));
    s.length = n;
    length -= n;
  }
  return used;
}

}  // namespace

Engine::Engine(Config config, MemoryExposer* exposer)
    : config_(std::move(config)), exposer_(exposer) {
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
  // RFC 8167 §3.2: the client posts its backchannel credits beyond the
  // receives for forward replies; the server posts one more receive per
  // backward call it may have outstanding, for the backward replies.
  uint64_t receives = config_.credits;
  if (config_.requester) receives += config_.backchannel_credits;
  if (backward_requester_) receives += config_.peer_backchannel_credits;
  receives_ = static_cast<uint32_t>(
      std::min<uint64_t>(receives, std::numeric_limits<uint32_t>::max()));
}

std::array<uint8_t, wire::kPrivateDataSize> Engine::LocalPrivateData() const {
  auto encoded = wire::EncodePrivateData(config_.local);
  if (encoded.ok()) return *encoded;
  // Sizes outside 1024..262144 cannot be encoded; advertise the defaults
  // every peer assumes anyway (RFC 8797 §5.1).
  return *wire::EncodePrivateData(wire::PrivateData{});
}

void Engine::OnConnected(const ConnectionParams& params, Actions& out) {
  connected_ = true;
  // RFC 8797 §4.2 / §5.1, redone on every connection.
  peer_private_data_ = wire::FindPrivateData(params.peer_private_data);
  thresholds_ = wire::NegotiateInline(
      config_.local, wire::PrivateDataOrDefault(params.peer_private_data));
  max_reads_ = std::max<uint32_t>(params.max_outstanding_reads, 1);
  // RFC 8166 §3.3.1: one call outstanding until the first reply.
  grant_ = 1;
  outstanding_ = 0;
  out.push_back(PostReceives{receives_, config_.local.receive_size});
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
  wire::V2ConnProp props;
  props.start.push_back(wire::MakeRbsizProperty(config_.local.receive_size));
  probe.body = std::move(props);
  negotiating_ = true;
  probe_xid_ = xid;
  outstanding_ = 1;
  out.push_back(Send{NextOp(), wire::EncodeV2(probe), std::nullopt});
}

void Engine::HandleProbeAnswer(absl::Span<const uint8_t> bytes, Actions& out) {
  if (bytes.size() < 8) return;
  const uint32_t xid = wire::LoadBigEndian32(bytes.data());
  const uint32_t vers = wire::LoadBigEndian32(bytes.data() + 4);
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
    if (err != nullptr && err->code == wire::V2ErrorCode::kVers &&
        xid == probe_xid_) {
      range = {err->vers_low, err->vers_high};
    } else {
      negotiation_ = absl::UnimplementedError(
          "the peer answered in RPC-over-RDMA version two; this engine "
          "carries calls in version one only");
    }
  } else if (xid != probe_xid_) {
    return;  // nothing else is expected before the answer (§7)
  } else {
    wire::DecodeResult<wire::V1Decoded> d = wire::DecodeV1(bytes);
    const wire::V1Error* err =
        d.ok() ? std::get_if<wire::V1Error>(&d->header.body) : nullptr;
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
  if (!negotiation_.ok()) {
    std::vector<CallId> ids(queue_.begin(), queue_.end());
    queue_.clear();
    for (CallId id : ids) {
      Finish(requests_.at(id), FailCall{id, negotiation_}, std::nullopt, out);
    }
    return;
  }
  Dispatch(out);
}

void Engine::OnDisconnected(Actions& out) {
  connected_ = false;
  negotiating_ = false;
  grant_ = 1;
  outstanding_ = 0;
  by_xid_.clear();
  cancelled_xids_.clear();
  // Requester: every call not already finishing fails, after invalidation.
  queue_.clear();
  std::vector<CallId> ids;
  for (auto& [id, c] : requests_) {
    if (c.state != ReqState::kFinishing) ids.push_back(id);
  }
  for (CallId id : ids) {
    RequesterCall& c = requests_.at(id);
    c.holds_credit = false;
    Finish(c,
           FailCall{id, absl::UnavailableError(
                            "RPC-over-RDMA connection lost before the reply")},
           std::nullopt, out);
  }
  // Responder: calls not waiting for a read or send completion are dropped;
  // memory the fabric may still touch stays until its flush completion.
  read_queue_.clear();
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    bool busy = false;
    for (const auto& [op, call] : reads_in_flight_) busy |= call == it->first;
    if (!busy && it->second.state != RespState::kSending) {
      it = incoming_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- Requester ------------------------------------------------------------

absl::StatusOr<CallId> Engine::StartCall(OutgoingCall call, Actions& out) {
  if (!requester_on_) {
    return absl::FailedPreconditionError(
        "requester role disabled and no peer backchannel configured");
  }
  if (call.xdr.size() < 8 || call.xdr.size() % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "call stream of ", call.xdr.size(),
        " octets is not an XDR RPC call (XID and msg_type needed)"));
  }
  if (wire::LoadBigEndian32(call.xdr.data() + 4) != kRpcCall) {
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
  uint32_t xid = wire::LoadBigEndian32(call.xdr.data());
  if (live_xids_.count(xid) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("XID ", xid, " is already in flight"));
  }
  if (by_xid_.count(xid) != 0 || cancelled_xids_.count(xid) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("XID ", xid, " is still awaiting its reply"));
  }
  CallId id = next_call_++;
  RequesterCall& c = requests_[id];
  live_xids_.insert(xid);
  c.id = id;
  c.xid = xid;
  c.call = std::move(call);
  queue_.push_back(id);
  Dispatch(out);
  return id;
}

void Engine::Dispatch(Actions& out) {
  if (negotiating_ || !negotiation_.ok()) {
    std::vector<CallId> ids;
    if (!negotiation_.ok()) ids.assign(queue_.begin(), queue_.end());
    if (!negotiation_.ok()) queue_.clear();
    for (CallId id : ids) {
      Finish(requests_.at(id), FailCall{id, negotiation_}, std::nullopt, out);
    }
    return;
  }
  // RFC 8166 §3.3.1: never more calls outstanding than the grant.
  while (connected_ && outstanding_ < grant_ && !queue_.empty()) {
    CallId id = queue_.front();
    queue_.pop_front();
    SendCall(requests_.at(id), out);
  }
}

absl::StatusOr<std::vector<wire::Segment>> Engine::ExposeSpan(
    RequesterCall& c, absl::Span<uint8_t> memory, uint32_t access) {
  std::vector<wire::Segment> segments;
  size_t at = 0;
  do {
    size_t n = std::min<size_t>(memory.size() - at, config_.max_segment_size);
    absl::StatusOr<wire::Segment> s =
        exposer_->Expose(memory.subspan(at, n), access);
    if (!s.ok()) return s.status();
    c.handles.push_back(s->handle);
    segments.push_back(*s);
    at += n;
  } while (at < memory.size());
  return segments;
}

void Engine::SendCall(RequesterCall& c, Actions& out) {
  c.state = ReqState::kSent;
  c.holds_credit = true;
  ++outstanding_;
  by_xid_[c.xid] = c.id;
  auto fail = [&](absl::Status status) {
    ReleaseCredit(c);
    Finish(c, FailCall{c.id, std::move(status)}, std::nullopt, out);
    Dispatch(out);
  };
  auto segments_for = [&](size_t length) {
    return std::max<size_t>(
        1, (length + config_.max_segment_size - 1) / config_.max_segment_size);
  };

  // Write chunks for DDP-eligible results (RFC 8166 §3.4.7).
  for (absl::Span<uint8_t> result : c.call.results) {
    auto segments = ExposeSpan(c, result, kRemoteWrite);
    if (!segments.ok()) return fail(segments.status());
    c.write_chunks.push_back(*std::move(segments));
  }
  // Reply chunk when the largest reply, with the header echoing the write
  // list, may not fit the receive threshold (RFC 8166 §3.5.4).
  wire::V1Header reply_header{c.xid, wire::kRpcRdmaVersion1, 0,
                              wire::V1Msg{{{}, c.write_chunks, std::nullopt}}};
  if (c.call.max_reply_size + wire::V1EncodedSize(reply_header) >
      thresholds_.receive) {
    c.reply_buffer.resize(c.call.max_reply_size);
    auto segments = ExposeSpan(c, absl::MakeSpan(c.reply_buffer), kRemoteWrite);
    if (!segments.ok()) return fail(segments.status());
    c.reply_chunk = *std::move(segments);
  }

  wire::V1Header header{c.xid, wire::kRpcRdmaVersion1, requester_limit_,
                        wire::V1Msg{{{}, c.write_chunks, c.reply_chunk}}};
  // The call with every DDP item inserted; built only for the forms that
  // carry it whole (a chunked call's items are never copied).
  auto full_call = [&] {
    std::vector<Item> all;
    for (const DdpArgument& a : c.call.arguments) {
      all.push_back({a.position, a.data});
    }
    return InsertItems(c.call.xdr, all);
  };
  size_t full_size = c.call.xdr.size();
  for (const DdpArgument& a : c.call.arguments) {
    full_size += wire::XdrRoundUp(a.data.size());
  }
  const size_t send_limit = thresholds_.send;
  // Segments the header names besides read segments (RFC 8166 §3.4).
  size_t reply_segments = c.reply_chunk ? c.reply_chunk->size() : 0;
  for (const auto& w : c.write_chunks) reply_segments += w.size();
  std::vector<uint8_t> payload;
  if (reply_segments > config_.max_header_segments) {
    return fail(absl::ResourceExhaustedError(
        absl::StrCat("the call's write and reply chunks need ", reply_segments,
                     " segments in its transport header; at most ",
                     config_.max_header_segments, " are allowed")));
  }

  // 1. Inline (RFC 8166 §3.5.1): header plus the whole call fit.
  if (wire::V1EncodedSize(header) + full_size <= send_limit) {
    payload = full_call();
  } else {
    // 2. DDP-eligible arguments as read chunks at their positions (RFC 8166
    //    §3.4.5, no roundup in the chunk, §3.4.6). Size the header first so
    //    nothing is exposed for a form that will not be used.
    wire::ChunkLists sizing = std::get<wire::V1Msg>(header.body).chunks;
    for (const DdpArgument& a : c.call.arguments) {
      if (a.data.empty()) continue;
      sizing.reads.resize(sizing.reads.size() + segments_for(a.data.size()));
    }
    wire::V1Header sized = header;
    sized.body = wire::V1Msg{sizing};
    if (!sizing.reads.empty() &&
        wire::V1EncodedSize(sized) + c.call.xdr.size() <= send_limit &&
        sizing.reads.size() + reply_segments <= config_.max_header_segments) {
      auto& chunks = std::get<wire::V1Msg>(header.body).chunks;
      for (const DdpArgument& a : c.call.arguments) {
        if (a.data.empty()) continue;
        auto segments = ExposeSpan(c, a.data, kRemoteRead);
        if (!segments.ok()) return fail(segments.status());
        for (const wire::Segment& s : *segments) {
          chunks.reads.push_back({a.position, s});
        }
      }
      payload = c.call.xdr;
    } else {
      // 3. Long call (RFC 8166 §3.5.3): RDMA_NOMSG with the whole call in a
      //    position-zero read chunk.
      wire::ChunkLists lists{{}, c.write_chunks, c.reply_chunk};
      lists.reads.resize(segments_for(full_size));
      if (lists.reads.size() + reply_segments > config_.max_header_segments) {
        return fail(absl::ResourceExhaustedError(
            absl::StrCat("the call needs ", lists.reads.size() + reply_segments,
                         " segments in its transport header; at most ",
                         config_.max_header_segments, " are allowed")));
      }
      wire::V1Header nomsg{c.xid, wire::kRpcRdmaVersion1, requester_limit_,
                           wire::V1NoMsg{lists}};
      if (wire::V1EncodedSize(nomsg) > send_limit) {
        return fail(absl::ResourceExhaustedError(absl::StrCat(
            "transport header of ", wire::V1EncodedSize(nomsg),
            " octets exceeds the send threshold of ", send_limit)));
      }
      c.long_call = full_call();
      auto segments = ExposeSpan(c, absl::MakeSpan(c.long_call), kRemoteRead);
      if (!segments.ok()) return fail(segments.status());
      lists.reads.clear();
      for (const wire::Segment& s : *segments) lists.reads.push_back({0, s});
      header.body = wire::V1NoMsg{std::move(lists)};
    }
  }
  std::vector<uint8_t> bytes = wire::EncodeV1(header);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  out.push_back(Send{NextOp(), std::move(bytes), std::nullopt});
}

void Engine::ReleaseCredit(RequesterCall& c) {
  if (c.holds_credit) {
    c.holds_credit = false;
    --outstanding_;
  }
}

void Engine::Finish(RequesterCall& c, Action outcome,
                    std::optional<uint32_t> remotely_invalidated,
                    Actions& out) {
  // The XID may be reused from here on (a call that allows a retry is
  // started again with it).
  if (c.state != ReqState::kFinishing) live_xids_.erase(c.xid);
  c.state = ReqState::kFinishing;
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

void Engine::MaybeComplete(RequesterCall& c, Actions& out) {
  if (c.pending_invalidations != 0) return;
  out.push_back(*std::move(c.outcome));
  requests_.erase(c.id);
}

void Engine::OnInvalidated(uint32_t handle, Actions& out) {
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return;
  CallId id = it->second;
  by_handle_.erase(it);
  auto call = requests_.find(id);
  if (call == requests_.end()) return;
  --call->second.pending_invalidations;
  MaybeComplete(call->second, out);
}

void Engine::Cancel(CallId id, absl::Status status, Actions& out) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  RequesterCall& c = it->second;
  switch (c.state) {
    case ReqState::kQueued:
      queue_.erase(std::find(queue_.begin(), queue_.end(), id));
      break;
    case ReqState::kSent:
      // The responder may still answer and consume a receive; the credit
      // stays taken until that reply arrives (RFC 8166 §3.3.1).
      cancelled_xids_.insert(c.xid);
      c.holds_credit = false;
      break;
    case ReqState::kFinishing:
      return;
  }
  Finish(c, FailCall{id, std::move(status)}, std::nullopt, out);
}

void Engine::HandleReply(const wire::V1Decoded& decoded,
                         absl::Span<const uint8_t> bytes, RequesterCall& c,
                         std::optional<uint32_t> invalidated, Actions& out) {
  const wire::V1Header& h = decoded.header;
  // RFC 8166 §3.3.1: the grant in every reply; a zero grant would stall
  // the connection, so at least one (as the Linux client does), and never
  // more than this side posts receives for (for backward calls: never more
  // than the configured peer backchannel limit, RFC 8167 §3.1).
  grant_ = std::clamp<uint32_t>(h.credits, 1, requester_limit_);
  ReleaseCredit(c);

  auto reply_status = [&]() -> absl::StatusOr<CompleteCall> {
    if (const auto* err = std::get_if<wire::V1Error>(&h.body)) {
      if (err->code == wire::V1ErrorCode::kVers) {
        // RFC 8166 §4.5.1.
        return absl::FailedPreconditionError(absl::StrCat(
            "RDMA_ERROR ERR_VERS: the peer supports RPC-over-RDMA versions ",
            err->vers_low, " to ", err->vers_high));
      }
      // RFC 8166 §4.5.2.
      return absl::InvalidArgumentError(
          "RDMA_ERROR ERR_CHUNK: the peer could not process the call's "
          "chunk lists or convey the reply in them");
    }
    if (h.proc() != wire::V1Proc::kMsg && h.proc() != wire::V1Proc::kNoMsg) {
      return absl::DataLossError(absl::StrCat(
          "reply with unexpected procedure ", wire::V1ProcName(h.proc())));
    }
    const wire::ChunkLists& lists = *h.chunks();
    if (!lists.reads.empty()) {
      return absl::DataLossError("reply carries a read list");
    }
    if (lists.writes.size() > c.write_chunks.size()) {
      return absl::DataLossError(
          absl::StrCat("reply returns ", lists.writes.size(), " write chunks, ",
                       c.write_chunks.size(), " offered"));
    }
    CompleteCall done{c.id, c.xid, {}, {}};
    for (size_t i = 0; i < lists.writes.size(); ++i) {
      auto n = ReturnedLength(lists.writes[i], c.write_chunks[i],
                              absl::StrCat("write chunk ", i));
      if (!n.ok()) return n.status();
      done.result_lengths.push_back(*n);
    }
    uint32_t reply_length = 0;
    if (lists.reply.has_value()) {
      if (!c.reply_chunk.has_value()) {
        return absl::DataLossError("reply returns a reply chunk never offered");
      }
      auto n = ReturnedLength(*lists.reply, *c.reply_chunk, "reply chunk");
      if (!n.ok()) return n.status();
      reply_length = *n;
    }
    if (h.proc() == wire::V1Proc::kMsg) {
      if (reply_length != 0) {
        return absl::DataLossError("RDMA_MSG reply also used the reply chunk");
      }
      auto payload = bytes.subspan(decoded.header_length);
      done.reply.assign(payload.begin(), payload.end());
    } else {
      // RFC 8166 §3.5.4: the whole reduced reply is in the reply chunk.
      if (!lists.reply.has_value() || reply_length == 0) {
        return absl::DataLossError(
            "RDMA_NOMSG reply without a used reply chunk");
      }
      done.reply.assign(c.reply_buffer.begin(),
                        c.reply_buffer.begin() + reply_length);
    }
    return done;
  }();
  if (reply_status.ok()) {
    Finish(c, *std::move(reply_status), invalidated, out);
  } else {
    Finish(c, FailCall{c.id, reply_status.status()}, invalidated, out);
  }
  Dispatch(out);
}

// ---- Receive dispatch ------------------------------------------------------

void Engine::OnReceive(absl::Span<const uint8_t> bytes,
                       std::optional<uint32_t> invalidated, Actions& out) {
  if (!connected_) return;
  // The consumed receive is replaced at once (receives per credit).
  out.push_back(PostReceives{1, config_.local.receive_size});
  if (negotiating_) {
    HandleProbeAnswer(bytes, out);
    return;
  }
  if (bytes.size() < kMinReplyHeader) return;
  const uint32_t xid = wire::LoadBigEndian32(bytes.data());
  wire::DecodeResult<wire::V1Decoded> decoded =
      wire::DecodeV1(bytes, config_.limits);

  // Direction (RFC 8167 §4): forward and backward calls use independent
  // XID spaces, so the XID alone cannot tell a reply. An RDMA_MSG whose RPC
  // msg_type is CALL is a call, and so is an RDMA_NOMSG with a read list
  // (a long call, RFC 8166 §3.5.3; a reply never carries a read list), even
  // when the XID equals one of this side's own calls.
  bool is_call = false;
  if (decoded.ok() && decoded->header.proc() == wire::V1Proc::kMsg &&
      bytes.size() >= decoded->header_length + 8) {
    is_call = wire::LoadBigEndian32(bytes.data() + decoded->header_length +
                                    4) == kRpcCall;
  }
  if (decoded.ok() && decoded->header.proc() == wire::V1Proc::kNoMsg &&
      !decoded->header.chunks()->reads.empty()) {
    is_call = true;
  }
  if (requester_on_ && !is_call) {
    auto it = by_xid_.find(xid);
    if (it != by_xid_.end()) {
      RequesterCall& c = requests_.at(it->second);
      if (!decoded.ok()) {
        ReleaseCredit(c);
        Finish(c,
               FailCall{c.id, absl::DataLossError(absl::StrCat(
                                  "undecodable reply: ",
                                  decoded.error().ToStatus().message()))},
               invalidated, out);
        Dispatch(out);
        return;
      }
      HandleReply(*decoded, bytes, c, invalidated, out);
      return;
    }
    if (cancelled_xids_.erase(xid) != 0) {
      // The late reply of a cancelled call: frees its credit, then dropped.
      --outstanding_;
      if (decoded.ok()) {
        grant_ =
            std::clamp<uint32_t>(decoded->header.credits, 1, requester_limit_);
      }
      Dispatch(out);
      return;
    }
  }
  // A client without backchannel credits drops calls, as the Linux client
  // does when it has no backchannel service (RFC 8167 §5 leaves it to the
  // ULP to use the backchannel only once both sides support it).
  if (!responder_on_ || bytes.size() < kMinCallHeader) return;
  if (!decoded.ok()) {
    // RFC 8166 §4.5.1 / §4.5.2.
    wire::V1Header reply =
        wire::V1ErrorReplyFor(bytes, decoded.error(), responder_grant_);
    out.push_back(Send{NextOp(), wire::EncodeV1(reply), std::nullopt});
    return;
  }
  HandleCall(*decoded, bytes, out);
}

// ---- Responder
// ---------------------------------------------------------------

void Engine::SendError(uint32_t xid, wire::V1ErrorCode code, Actions& out) {
  wire::V1Error err;
  err.code = code;
  if (code == wire::V1ErrorCode::kVers) err.vers_low = err.vers_high = 1;
  wire::V1Header h{xid, wire::kRpcRdmaVersion1, responder_grant_, err};
  out.push_back(Send{NextOp(), wire::EncodeV1(h), std::nullopt});
}

void Engine::HandleCall(const wire::V1Decoded& decoded,
                        absl::Span<const uint8_t> bytes, Actions& out) {
  const wire::V1Header& h = decoded.header;
  switch (h.proc()) {
    case wire::V1Proc::kMsg:
    case wire::V1Proc::kNoMsg:
      break;
    case wire::V1Proc::kDone:
    case wire::V1Proc::kError:
      // The Linux server drops RDMA_DONE and RDMA_ERROR without a reply.
      return;
    case wire::V1Proc::kMsgp:
      // RFC 8166 §4.6 deprecates RDMA_MSGP; the Linux server answers it
      // with ERR_CHUNK.
      return SendError(h.xid, wire::V1ErrorCode::kChunk, out);
  }
  const wire::ChunkLists& lists = *h.chunks();
  const bool nomsg = h.proc() == wire::V1Proc::kNoMsg;
  const uint64_t inline_length = bytes.size() - decoded.header_length;

  // Validate every list before anything is allocated (RFC 8166 §4.5.2).
  auto chunk_error = [&] { SendError(h.xid, wire::V1ErrorCode::kChunk, out); };
  uint64_t base = nomsg ? 0 : inline_length;
  uint64_t chunk_total = 0;
  if (nomsg) {
    // RFC 8166 §3.5.3: RDMA_NOMSG carries the call in a position-zero
    // read chunk.
    if (lists.reads.empty() || lists.reads.front().position != 0) {
      return chunk_error();
    }
  }
  for (size_t i = 0; i < lists.reads.size(); ++i) {
    const wire::ReadSegment& r = lists.reads[i];
    if (r.position % 4 != 0) return chunk_error();
    if (i > 0 && r.position < lists.reads[i - 1].position) {
      return chunk_error();
    }
    if (r.position == 0) {
      if (!nomsg) return chunk_error();  // only RDMA_NOMSG uses position 0
      base += r.target.length;
    }
  }
  uint32_t last_position = 0;
  uint64_t last_length = 0;
  for (const wire::ReadSegment& r : lists.reads) {
    if (r.position == 0) continue;
    if (r.position > base) return chunk_error();
    if (r.position != last_position) {
      chunk_total += wire::XdrRoundUp(last_length);
      last_length = 0;
      last_position = r.position;
    }
    last_length += r.target.length;
  }
  chunk_total += wire::XdrRoundUp(last_length);
  // Write and reply chunks allocate nothing here; a chunk with no segments
  // is accepted (as the Linux server does) and simply has no capacity.
  if (base + chunk_total > config_.max_call_size) return chunk_error();

  CallId id = next_call_++;
  ResponderCall& c = incoming_[id];
  c.id = id;
  c.xid = h.xid;
  c.chunks = lists;
  c.base_length = static_cast<uint32_t>(base);
  if (PlaceReadsDirectly(c, bytes.subspan(decoded.header_length, inline_length),
                         nomsg, base + chunk_total)) {
    if (c.reads_pending == 0) return Deliver(c, out);
    return IssueReads(out);
  }
  c.staging.resize(base + chunk_total);
  size_t cursor = 0;
  if (!nomsg) {
    std::memcpy(c.staging.data(), bytes.data() + decoded.header_length,
                inline_length);
    cursor = inline_length;
  }
  for (const wire::ReadSegment& r : lists.reads) {
    // Chunk data is laid out back to back after the base stream; the
    // roundup gaps are filled during assembly.
    if (r.target.length != 0) {
      read_queue_.push_back(
          {id, r.target,
           absl::MakeSpan(c.staging).subspan(cursor, r.target.length)});
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
bool Engine::PlaceReadsDirectly(ResponderCall& c,
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
  c.message.resize(total);  // zero-filled: the roundup octets stay zero
  auto read_into = [&](const wire::ReadSegment& r, size_t at) {
    if (r.target.length == 0) return;
    read_queue_.push_back(
        {c.id, r.target,
         absl::MakeSpan(c.message).subspan(at, r.target.length)});
    ++c.reads_pending;
  };
  size_t dest = 0;
  size_t src = 0;  // octets of the inline payload placed so far
  for (size_t i = 0; i < reads.size();) {
    const uint32_t position = reads[i].position;
    if (!nomsg) {
      std::memcpy(c.message.data() + dest, inline_payload.data() + src,
                  position - src);
      dest += position - src;
      src = position;
    }
    size_t length = 0;
    for (; i < reads.size() && reads[i].position == position; ++i) {
      read_into(reads[i], dest + length);
      length += reads[i].target.length;
    }
    dest += wire::XdrRoundUp(length);
  }
  if (!nomsg) {
    std::memcpy(c.message.data() + dest, inline_payload.data() + src,
                inline_payload.size() - src);
  }
  c.assembled = true;
  return true;
}

void Engine::IssueReads(Actions& out) {
  // At most max_reads_ RDMA Reads outstanding (the negotiated ORD).
  while (reads_in_flight_.size() < max_reads_ && !read_queue_.empty()) {
    PendingRead r = read_queue_.front();
    read_queue_.pop_front();
    if (incoming_.count(r.call) == 0) continue;
    OpId op = NextOp();
    reads_in_flight_[op] = r.call;
    out.push_back(RdmaRead{op, r.source, r.destination});
  }
}

void Engine::OnReadComplete(OpId op, bool success, Actions& out) {
  auto it = reads_in_flight_.find(op);
  if (it == reads_in_flight_.end()) return;
  CallId id = it->second;
  reads_in_flight_.erase(it);
  auto call = incoming_.find(id);
  if (call != incoming_.end()) {
    ResponderCall& c = call->second;
    --c.reads_pending;
    if (!success || !connected_) {
      // The connection is failing; the call is never delivered and is
      // dropped once no read of it is still in flight.
      c.failed = true;
      std::erase_if(read_queue_,
                    [id](const PendingRead& r) { return r.call == id; });
      bool busy = false;
      for (const auto& [o, cid] : reads_in_flight_) busy |= cid == id;
      if (!busy) incoming_.erase(call);
    } else if (c.reads_pending == 0 && !c.failed) {
      Deliver(c, out);
    }
  }
  if (connected_) IssueReads(out);
}

void Engine::Deliver(ResponderCall& c, Actions& out) {
  if (!c.assembled) Assemble(c);
  DeliverCall deliver{c.id, c.xid, std::move(c.message), {}, 0};
  for (const auto& w : c.chunks.writes) {
    deliver.write_chunk_capacities.push_back(
        static_cast<uint32_t>(ChunkLength(w)));
  }
  if (c.chunks.reply) {
    deliver.reply_chunk_capacity =
        static_cast<uint32_t>(ChunkLength(*c.chunks.reply));
  }
  c.state = RespState::kDelivered;
  out.push_back(std::move(deliver));
}

void Engine::Assemble(ResponderCall& c) {
  // The staging buffer holds the base stream (inline payload or position-
  // zero chunk) followed by each non-zero-position chunk's octets. Insert
  // the chunks at their positions with XDR roundup (RFC 8166 §3.4.6: the
  // requester leaves the roundup out of the chunk).
  absl::Span<const uint8_t> staging(c.staging);
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
  c.message = InsertItems(staging.subspan(0, c.base_length), items);
  c.staging.clear();
  c.staging.shrink_to_fit();
}

std::optional<uint32_t> Engine::InvalidateHandleFor(
    const ResponderCall& c) const {
  // RFC 8797 §4.1: only when both peers set R, and (as the Linux server
  // does) only when every segment of the call names one and the same
  // handle, so the choice is unambiguous.
  if (!thresholds_.remote_invalidation) return std::nullopt;
  std::set<uint32_t> handles;
  for (const auto& r : c.chunks.reads) handles.insert(r.target.handle);
  for (const auto& w : c.chunks.writes) {
    for (const auto& s : w) handles.insert(s.handle);
  }
  if (c.chunks.reply) {
    for (const auto& s : *c.chunks.reply) handles.insert(s.handle);
  }
  if (handles.size() != 1) return std::nullopt;
  return *handles.begin();
}

absl::Status Engine::Reply(CallId id, OutgoingReply reply, Actions& out) {
  auto it = incoming_.find(id);
  if (it == incoming_.end() || it->second.state != RespState::kDelivered) {
    return absl::InvalidArgumentError(
        absl::StrCat("call ", id, " is not awaiting a reply"));
  }
  ResponderCall& c = it->second;
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
  if (!connected_) {
    incoming_.erase(it);
    return absl::UnavailableError("connection lost before the reply");
  }
  const auto& writes = c.chunks.writes;
  auto error_reply = [&] {
    SendError(c.xid, wire::V1ErrorCode::kChunk, out);
    incoming_.erase(c.id);
    return absl::OkStatus();
  };
  // Results with a write chunk go there; the rest stay inline.
  std::vector<Item> inline_items;
  std::vector<wire::WriteChunk> returned;
  for (size_t i = 0; i < reply.results.size(); ++i) {
    if (i < writes.size()) {
      // The Linux server answers ERR_CHUNK when a result exceeds its chunk.
      if (reply.results[i].data.size() > ChunkLength(writes[i])) {
        return error_reply();
      }
    } else {
      inline_items.push_back(
          {reply.results[i].position, reply.results[i].data});
    }
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    size_t n = i < reply.results.size() ? reply.results[i].data.size() : 0;
    returned.push_back(FillChunk(writes[i], n));
  }
  c.reply_stream = InsertItems(reply.xdr, inline_items);

  wire::V1Header h{c.xid, wire::kRpcRdmaVersion1, responder_grant_,
                   wire::V1Msg{{{}, returned, std::nullopt}}};
  bool use_reply_chunk = false;
  if (wire::V1EncodedSize(h) + c.reply_stream.size() > thresholds_.send) {
    // RFC 8166 §3.5.4: a long reply goes through the reply chunk.
    if (!c.chunks.reply.has_value() ||
        c.reply_stream.size() > ChunkLength(*c.chunks.reply)) {
      return error_reply();
    }
    h.body = wire::V1NoMsg{
        {{}, returned, FillChunk(*c.chunks.reply, c.reply_stream.size())}};
    if (wire::V1EncodedSize(h) > thresholds_.send) return error_reply();
    use_reply_chunk = true;
  }

  // DDP results into the write chunks (no roundup, RFC 8166 §3.4.6), then
  // the reply chunk, then the Send, which RC ordering places after them.
  auto write_out = [&](absl::Span<const uint8_t> data,
                       const wire::WriteChunk& chunk) {
    size_t at = 0;
    for (const wire::Segment& s : chunk) {
      if (at == data.size()) break;
      size_t n = std::min<size_t>(s.length, data.size() - at);
      out.push_back(RdmaWrite{NextOp(),
                              data.subspan(at, n),
                              {s.handle, static_cast<uint32_t>(n), s.offset}});
      at += n;
    }
  };
  for (size_t i = 0; i < writes.size() && i < reply.results.size(); ++i) {
    write_out(reply.results[i].data, writes[i]);
  }
  std::vector<uint8_t> bytes = wire::EncodeV1(h);
  if (use_reply_chunk) {
    write_out(c.reply_stream, *c.chunks.reply);
  } else {
    bytes.insert(bytes.end(), c.reply_stream.begin(), c.reply_stream.end());
  }
  c.send_op = NextOp();
  c.state = RespState::kSending;
  reply_sends_[c.send_op] = c.id;
  out.push_back(Send{c.send_op, std::move(bytes), InvalidateHandleFor(c)});
  return absl::OkStatus();
}

void Engine::OnSendComplete(OpId op, bool /*success*/, Actions& out) {
  auto it = reply_sends_.find(op);
  if (it == reply_sends_.end()) return;
  CallId id = it->second;
  reply_sends_.erase(it);
  incoming_.erase(id);
  out.push_back(ReplySent{id});
}

}  // namespace rpcrdma::engine
