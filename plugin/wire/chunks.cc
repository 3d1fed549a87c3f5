#include "plugin/wire/chunks.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace rpcrdma::wire {
namespace {

constexpr size_t kSegmentSize = 16;      // handle, length, 64-bit offset
constexpr size_t kReadSegmentSize = 20;  // position + segment

DecodeError FromXdr(const absl::Status& status, size_t offset) {
  return DecodeError{absl::IsOutOfRange(status)
                         ? DecodeErrorKind::kTruncated
                         : DecodeErrorKind::kBadDiscriminant,
                     offset, std::string(status.message()), 0};
}

absl::Status EncodeSegment(const Segment& s, XdrWriter& w) {
  if (absl::Status st = w.WriteUint32("rdma_handle", s.handle); !st.ok()) {
    return st;
  }
  if (absl::Status st = w.WriteUint32("rdma_length", s.length); !st.ok()) {
    return st;
  }
  return w.WriteUint64("rdma_offset", s.offset);
}

absl::Status EncodeWriteChunk(const WriteChunk& chunk, XdrWriter& w) {
  if (absl::Status st =
          w.WriteUint32("segment count", static_cast<uint32_t>(chunk.size()));
      !st.ok()) {
    return st;
  }
  for (const Segment& s : chunk) {
    if (absl::Status st = EncodeSegment(s, w); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// Reads one "value follows" discriminant of an XDR optional-data list.
std::optional<DecodeError> ReadFollows(XdrReader& r, absl::string_view field,
                                       bool* follows) {
  size_t at = r.offset();
  if (absl::Status st = r.ReadBool(field, follows); !st.ok()) {
    return FromXdr(st, at);
  }
  return std::nullopt;
}

std::optional<DecodeError> DecodeSegment(XdrReader& r, Segment* s) {
  size_t at = r.offset();
  absl::Status st = r.ReadUint32("rdma_handle", &s->handle);
  if (st.ok()) st = r.ReadUint32("rdma_length", &s->length);
  if (st.ok()) st = r.ReadUint64("rdma_offset", &s->offset);
  if (!st.ok()) return FromXdr(st, at);
  return std::nullopt;
}

std::optional<DecodeError> DecodeWriteChunk(XdrReader& r,
                                            absl::string_view what,
                                            const ChunkLimits& limits,
                                            WriteChunk* chunk) {
  size_t at = r.offset();
  uint32_t count = 0;
  if (absl::Status st = r.ReadUint32("segment count", &count); !st.ok()) {
    return FromXdr(st, at);
  }
  if (count > limits.max_segments_per_chunk) {
    return DecodeError{
        DecodeErrorKind::kTooManySegments, at,
        absl::StrCat(what, " has ", count, " segments; the limit is ",
                     limits.max_segments_per_chunk),
        limits.max_segments_per_chunk};
  }
  // Checked before reserving, so a hostile count costs nothing.
  if (r.remaining() < size_t{count} * kSegmentSize) {
    return DecodeError{
        DecodeErrorKind::kTruncated, at,
        absl::StrCat(what, " claims ", count, " segments (",
                     size_t{count} * kSegmentSize, " octets) but only ",
                     r.remaining(), " octets remain"),
        0};
  }
  chunk->resize(count);
  for (Segment& s : *chunk) {
    if (auto err = DecodeSegment(r, &s)) return err;
  }
  return std::nullopt;
}

}  // namespace

absl::Status EncodeChunkLists(const ChunkLists& lists, XdrWriter& w) {
  for (const ReadSegment& rs : lists.reads) {
    if (absl::Status st = w.WriteBool("read list entry follows", true);
        !st.ok()) {
      return st;
    }
    if (absl::Status st = w.WriteUint32("rdma_position", rs.position);
        !st.ok()) {
      return st;
    }
    if (absl::Status st = EncodeSegment(rs.target, w); !st.ok()) return st;
  }
  if (absl::Status st = w.WriteBool("read list end", false); !st.ok()) {
    return st;
  }
  for (const WriteChunk& chunk : lists.writes) {
    if (absl::Status st = w.WriteBool("write list entry follows", true);
        !st.ok()) {
      return st;
    }
    if (absl::Status st = EncodeWriteChunk(chunk, w); !st.ok()) return st;
  }
  if (absl::Status st = w.WriteBool("write list end", false); !st.ok()) {
    return st;
  }
  if (absl::Status st =
          w.WriteBool("reply chunk present", lists.reply.has_value());
      !st.ok()) {
    return st;
  }
  if (lists.reply) return EncodeWriteChunk(*lists.reply, w);
  return absl::OkStatus();
}

size_t ChunkListsEncodedSize(const ChunkLists& lists) {
  size_t size = 4 + lists.reads.size() * (4 + kReadSegmentSize);
  size += 4;
  for (const WriteChunk& chunk : lists.writes) {
    size += 4 + 4 + chunk.size() * kSegmentSize;
  }
  size += 4;
  if (lists.reply) size += 4 + lists.reply->size() * kSegmentSize;
  return size;
}

DecodeResult<ChunkLists> DecodeChunkLists(XdrReader& r,
                                          const ChunkLimits& limits) {
  ChunkLists lists;
  bool follows = false;
  if (auto err = ReadFollows(r, "read list discriminant", &follows)) {
    return *err;
  }
  while (follows) {
    if (lists.reads.size() >= limits.max_read_segments) {
      return DecodeError{DecodeErrorKind::kTooManyReadSegments, r.offset() - 4,
                         absl::StrCat("read list has more than ",
                                      limits.max_read_segments, " segments"),
                         limits.max_read_segments};
    }
    ReadSegment rs;
    size_t at = r.offset();
    if (absl::Status st = r.ReadUint32("rdma_position", &rs.position);
        !st.ok()) {
      return FromXdr(st, at);
    }
    if (auto err = DecodeSegment(r, &rs.target)) return *err;
    lists.reads.push_back(rs);
    if (auto err = ReadFollows(r, "read list discriminant", &follows)) {
      return *err;
    }
  }
  if (auto err = ReadFollows(r, "write list discriminant", &follows)) {
    return *err;
  }
  while (follows) {
    if (lists.writes.size() >= limits.max_write_chunks) {
      return DecodeError{DecodeErrorKind::kTooManyWriteChunks, r.offset() - 4,
                         absl::StrCat("write list has more than ",
                                      limits.max_write_chunks, " chunks"),
                         limits.max_write_chunks};
    }
    WriteChunk chunk;
    std::string what = absl::StrCat("write chunk ", lists.writes.size());
    if (auto err = DecodeWriteChunk(r, what, limits, &chunk)) return *err;
    lists.writes.push_back(std::move(chunk));
    if (auto err = ReadFollows(r, "write list discriminant", &follows)) {
      return *err;
    }
  }
  if (auto err = ReadFollows(r, "reply chunk discriminant", &follows)) {
    return *err;
  }
  if (follows) {
    WriteChunk chunk;
    if (auto err = DecodeWriteChunk(r, "reply chunk", limits, &chunk)) {
      return *err;
    }
    lists.reply = std::move(chunk);
  }
  return lists;
}

}  // namespace rpcrdma::wire
