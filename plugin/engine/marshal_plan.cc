#include "plugin/engine/marshal_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

namespace {

// RFC 8166 §4.3: rdma_xid, rdma_vers, rdma_credit and rdma_proc.
constexpr size_t kFixedWords = 16;
// A segment: handle, length and a 64-bit offset (§4.3, rdma_segment).
constexpr size_t kSegment = 16;
// Each list entry follows a "value follows" word; a read segment adds its
// position, a write chunk its segment count.
constexpr size_t kReadEntry = 4 + 4 + kSegment;
// rdma_direction and rdma_inv_handle (draft-04 §6.2.2).
constexpr size_t kVersionTwoWords = 8;

std::vector<size_t> WriteChunkSegments(absl::Span<const uint64_t> results,
                                       uint32_t max_segment_size) {
  std::vector<size_t> segments;
  segments.reserve(results.size());
  for (uint64_t r : results) {
    segments.push_back(SegmentsFor(r, max_segment_size));
  }
  return segments;
}

size_t Sum(absl::Span<const size_t> values) {
  size_t total = 0;
  for (size_t v : values) total += v;
  return total;
}

CallPlan Refuse(CallPlan plan, absl::Status why) {
  plan.form = CallForm::kRefused;
  plan.refusal = std::move(why);
  return plan;
}

}  // namespace

size_t ChunkedHeaderSize(uint32_t version, size_t read_segments,
                         absl::Span<const size_t> write_chunk_segments,
                         std::optional<size_t> reply_segments) {
  // The three lists each end in a "no value follows" word; the reply chunk
  // is an optional (its one word, then its segment count and segments).
  size_t size = kFixedWords + 4 + read_segments * kReadEntry + 4 + 4;
  for (size_t segments : write_chunk_segments) {
    size += 4 + 4 + segments * kSegment;
  }
  if (reply_segments.has_value()) size += 4 + *reply_segments * kSegment;
  return version == wire::kRpcRdmaVersion2 ? size + kVersionTwoWords : size;
}

size_t SegmentsFor(uint64_t length, uint32_t max_segment_size) {
  return std::max<uint64_t>(1,
                            (length + max_segment_size - 1) / max_segment_size);
}

CallPlan PlanCall(const CallPlanInput& in) {
  CallPlan plan;
  const std::vector<size_t> writes =
      WriteChunkSegments(in.result_sizes, in.max_segment_size);
  // A reply chunk when the largest reply, with the header echoing the
  // write list, may not fit the receive threshold (RFC 8166 §3.5.4).
  std::optional<size_t> reply;
  if (in.max_reply_size +
          ChunkedHeaderSize(in.version, 0, writes, std::nullopt) >
      in.receive_threshold) {
    plan.offers_reply_chunk = true;
    reply = SegmentsFor(in.max_reply_size, in.max_segment_size);
  }
  // Segments the header names besides read segments (§3.4).
  const size_t offer_segments = Sum(writes) + reply.value_or(0);
  if (offer_segments > in.max_header_segments) {
    return Refuse(plan,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "the call's write and reply chunks need ", offer_segments,
                      " segments in its transport header; at most ",
                      in.max_header_segments, " are allowed")));
  }
  plan.full_size = in.reduced_size;
  size_t read_segments = 0;
  for (uint64_t a : in.argument_sizes) {
    plan.full_size += XdrRoundUp(a);
    // An empty argument needs no chunk (§3.4.5).
    if (a != 0) read_segments += SegmentsFor(a, in.max_segment_size);
  }
  // 1. Inline (§3.5.1): the header plus the whole call fit.
  plan.header_size = ChunkedHeaderSize(in.version, 0, writes, reply);
  if (plan.header_size + plan.full_size <= in.send_threshold) return plan;
  // 2. The arguments as read chunks at their positions (§3.4.5), the
  //    reduced call inline.
  const size_t with_reads =
      ChunkedHeaderSize(in.version, read_segments, writes, reply);
  if (read_segments != 0 && with_reads + in.reduced_size <= in.send_threshold &&
      read_segments + offer_segments <= in.max_header_segments) {
    plan.form = CallForm::kReadChunks;
    plan.header_size = with_reads;
    return plan;
  }
  // 3. Long call (§3.5.3): RDMA_NOMSG with the whole call in a
  //    position-zero read chunk.
  const size_t long_segments = SegmentsFor(plan.full_size, in.max_segment_size);
  if (long_segments + offer_segments > in.max_header_segments) {
    return Refuse(plan, absl::ResourceExhaustedError(absl::StrCat(
                            "the call needs ", long_segments + offer_segments,
                            " segments in its transport header; at most ",
                            in.max_header_segments, " are allowed")));
  }
  plan.form = CallForm::kLongCall;
  plan.header_size =
      ChunkedHeaderSize(in.version, long_segments, writes, reply);
  if (plan.header_size > in.send_threshold) {
    return Refuse(plan, absl::ResourceExhaustedError(absl::StrCat(
                            "transport header of ", plan.header_size,
                            " octets exceeds the send threshold of ",
                            in.send_threshold)));
  }
  return plan;
}

ReplyPlan PlanReply(const ReplyPlanInput& in) {
  ReplyPlan plan;
  plan.results_in_write_list =
      std::min(in.result_sizes.size(), in.write_chunks.size());
  plan.stream_size = in.reduced_size;
  for (size_t i = 0; i < in.result_sizes.size(); ++i) {
    if (i >= in.write_chunks.size()) {
      plan.stream_size += XdrRoundUp(in.result_sizes[i]);
    } else if (in.result_sizes[i] > in.write_chunks[i].capacity) {
      // The Linux server answers ERR_CHUNK when a result exceeds its chunk.
      plan.form = ReplyForm::kErrChunk;
      plan.no_room = NoRoom::kWriteChunkTooSmall;
      plan.chunk_index = i;
      plan.length_needed = in.result_sizes[i];
      return plan;
    }
  }
  // Every offered write chunk is returned, used or not (§3.4.7).
  std::vector<size_t> writes;
  writes.reserve(in.write_chunks.size());
  for (const OfferedChunk& w : in.write_chunks) writes.push_back(w.segments);
  plan.header_size = ChunkedHeaderSize(in.version, 0, writes, std::nullopt);
  if (plan.header_size + plan.stream_size <= in.send_threshold) return plan;
  // §3.5.4: a long reply goes through the reply chunk.
  plan.form = ReplyForm::kErrChunk;
  plan.length_needed = plan.stream_size;
  if (!in.reply_chunk.has_value() ||
      plan.stream_size > in.reply_chunk->capacity) {
    plan.no_room = NoRoom::kReplyTooLarge;
    return plan;
  }
  plan.header_size =
      ChunkedHeaderSize(in.version, 0, writes, in.reply_chunk->segments);
  if (plan.header_size > in.send_threshold) {
    plan.no_room = NoRoom::kHeaderTooLarge;
    return plan;
  }
  plan.form = ReplyForm::kReplyChunk;
  plan.length_needed = 0;
  return plan;
}

}  // namespace rpcrdma::engine
