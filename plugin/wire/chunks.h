// Chunk lists shared by RPC-over-RDMA versions one and two. The XDR shapes
// are the same in both (RFC 5666 §4.3, draft-cel-nfsv4-rpcrdma-version-two-04
// §6.2): a read list of positioned segments, a write list of chunks (each a
// counted array of segments), and an optional reply chunk.
#ifndef RPCRDMA_PLUGIN_WIRE_CHUNKS_H_
#define RPCRDMA_PLUGIN_WIRE_CHUNKS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "plugin/wire/decode_error.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::wire {

// One registered memory region the peer may access: RDMA handle (STag,
// R_key), length in octets and offset (an address or offset the handle's
// owner understands).
struct Segment {
  uint32_t handle = 0;
  uint32_t length = 0;
  uint64_t offset = 0;

  friend bool operator==(const Segment&, const Segment&) = default;
};

// A read segment carries the XDR position of its chunk in the RPC message.
// Segments with equal positions form one read chunk; position zero means the
// whole RPC message is in the chunk (a long call, RFC 8166 §3.5.3).
struct ReadSegment {
  uint32_t position = 0;
  Segment target;

  friend bool operator==(const ReadSegment&, const ReadSegment&) = default;
};

using WriteChunk = std::vector<Segment>;

struct ChunkLists {
  std::vector<ReadSegment> reads;
  std::vector<WriteChunk> writes;
  std::optional<WriteChunk> reply;

  friend bool operator==(const ChunkLists&, const ChunkLists&) = default;
};

// Limits a decoder enforces before it allocates anything, so a hostile count
// cannot make it reserve memory. The defaults bound the work per header yet
// accept every message a real peer sends; the engine passes its configured,
// tighter limits.
struct ChunkLimits {
  uint32_t max_read_segments = 256;
  uint32_t max_write_chunks = 64;
  uint32_t max_segments_per_chunk = 256;  // write and reply chunks
};

// Encodes the three lists in the XDR form both versions use.
absl::Status EncodeChunkLists(const ChunkLists& lists, XdrWriter& writer);

// Decodes the three lists; on failure the DecodeError is classified
// (kTooManyReadSegments etc. for limits, kTruncated, kBadDiscriminant for a
// list "value follows" word that is neither 0 nor 1).
DecodeResult<ChunkLists> DecodeChunkLists(XdrReader& reader,
                                          const ChunkLimits& limits);

// Octets EncodeChunkLists will write.
size_t ChunkListsEncodedSize(const ChunkLists& lists);

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_CHUNKS_H_
