// Choosing how a call or a reply travels (RFC 8166 §3.5), apart from
// exposing memory and encoding: pure functions of plain sizes and limits,
// so each decision can be checked case by case and the engine only carries
// it out. The Linux client makes the same choice first as well
// (rpcrdma_marshal_req picks its read and write chunk types, then encodes).
#ifndef RPCRDMA_PLUGIN_ENGINE_MARSHAL_PLAN_H_
#define RPCRDMA_PLUGIN_ENGINE_MARSHAL_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace rpcrdma::engine {

// The octets of a transport header carrying chunk lists (RDMA_MSG or
// RDMA_NOMSG, RFC 8166 §4.3) with `read_segments` read segments, write
// chunks of the given segment counts and, if present, a reply chunk of
// `reply_segments` segments; version two adds rdma_direction and
// rdma_inv_handle (draft-04 §6.2.2).
size_t ChunkedHeaderSize(uint32_t version, size_t read_segments,
                         absl::Span<const size_t> write_chunk_segments,
                         std::optional<size_t> reply_segments);

// The segments memory of `length` octets is exposed in when no segment is
// longer than `max_segment_size` (at least one, even for no octets).
size_t SegmentsFor(uint64_t length, uint32_t max_segment_size);

// ---- Calls -----------------------------------------------------------------

// Every member has a default, so a table row names only what it changes.
struct CallPlanInput {
  uint32_t version = 1;
  // The reduced call stream (without its DDP-eligible arguments).
  uint64_t reduced_size = 0;
  // Each DDP-eligible argument's length, in position order.
  std::vector<uint64_t> argument_sizes = {};
  // Each DDP result buffer's length: one write chunk each (§3.4.7).
  std::vector<uint64_t> result_sizes = {};
  // The largest reduced reply the caller expects (§3.5.4).
  uint64_t max_reply_size = 0;
  // The negotiated inline thresholds (RFC 8797 §4.2; 1024 without
  // private data, RFC 8166 §3.3.2).
  uint32_t send_threshold = 1024;
  uint32_t receive_threshold = 1024;
  // Config's limits (its defaults, as Linux's RPCRDMA_MAX_HDR_SEGS).
  uint32_t max_segment_size = 1u << 20;
  uint32_t max_header_segments = 8;
};

enum class CallForm {
  kInline,      // RDMA_MSG with the whole call (§3.5.1)
  kReadChunks,  // RDMA_MSG, each non-empty argument a read chunk (§3.4.5)
  kLongCall,    // RDMA_NOMSG, the call in a position-zero chunk (§3.5.3)
  kRefused,     // the transport header cannot carry the call
};

struct CallPlan {
  CallForm form = CallForm::kInline;
  // Offer a reply chunk of max_reply_size octets (§3.5.4); a write chunk
  // is offered for every result whatever the form.
  bool offers_reply_chunk = false;
  // The call with every argument inserted (XDR roundup, RFC 4506 §4.10).
  uint64_t full_size = 0;
  // The transport header of the chosen form, as encoded (for kRefused, of
  // the last form sized).
  size_t header_size = 0;
  // Why the call cannot go (kRefused only).
  absl::Status refusal;
};

CallPlan PlanCall(const CallPlanInput& in);

// ---- Replies ---------------------------------------------------------------

// A write or reply chunk the requester offered.
struct OfferedChunk {
  uint64_t capacity = 0;
  size_t segments = 0;
};

struct ReplyPlanInput {
  uint32_t version = 1;
  // The reduced reply stream (without its DDP-eligible results).
  uint64_t reduced_size = 0;
  // Each DDP-eligible result's length, in position order.
  std::vector<uint64_t> result_sizes = {};
  std::vector<OfferedChunk> write_chunks = {};
  std::optional<OfferedChunk> reply_chunk = std::nullopt;
  uint32_t send_threshold = 1024;  // RFC 8797 §4.2
};

enum class ReplyForm {
  kInline,      // RDMA_MSG with the reply stream (§3.5.1)
  kReplyChunk,  // RDMA_NOMSG, the stream in the reply chunk (§3.5.4)
  kErrChunk,    // RDMA_ERROR ERR_CHUNK: the offer cannot hold it (§4.5.2)
};

// Why a reply is answered ERR_CHUNK.
enum class NoRoom {
  kNone,
  kWriteChunkTooSmall,  // a result exceeds its write chunk
  kReplyTooLarge,       // over the threshold and the reply chunk (or none)
  kHeaderTooLarge,      // the RDMA_NOMSG header is over the threshold
};

struct ReplyPlan {
  ReplyForm form = ReplyForm::kInline;
  // Results written into the write list (§3.4.7): the first ones, one per
  // offered chunk; the rest are inserted in the reply stream.
  size_t results_in_write_list = 0;
  // The reply stream with the results that stay inline inserted.
  uint64_t stream_size = 0;
  // The transport header of the form chosen or, for ERR_CHUNK, of the
  // form found too large.
  size_t header_size = 0;
  NoRoom no_room = NoRoom::kNone;
  // kWriteChunkTooSmall: the result and its length.
  size_t chunk_index = 0;
  uint64_t length_needed = 0;
};

ReplyPlan PlanReply(const ReplyPlanInput& in);

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_MARSHAL_PLAN_H_
