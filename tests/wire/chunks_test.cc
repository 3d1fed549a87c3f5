// Tests for the chunk-list codec shared by RPC-over-RDMA versions one and
// two (RFC 5666 §4.3, RFC 8166 §4.1.2 and §4.3).
#include "plugin/wire/chunks.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::wire {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using ::rpcrdma::test::AppendWord;
using ::rpcrdma::test::Words;

std::vector<uint8_t> Encode(const ChunkLists& lists) {
  std::vector<uint8_t> buf(ChunkListsEncodedSize(lists));
  XdrWriter w(absl::MakeSpan(buf));
  absl::Status st = EncodeChunkLists(lists, w);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(w.offset(), buf.size());
  return buf;
}

DecodeResult<ChunkLists> Decode(const std::vector<uint8_t>& bytes,
                                const ChunkLimits& limits = {},
                                size_t* consumed = nullptr) {
  XdrReader r(bytes);
  DecodeResult<ChunkLists> result = DecodeChunkLists(r, limits);
  if (consumed != nullptr) *consumed = r.offset();
  return result;
}

Segment Seg(uint32_t handle, uint32_t length, uint64_t offset) {
  return Segment{handle, length, offset};
}

WriteChunk ChunkOf(size_t segments, uint32_t base) {
  WriteChunk chunk;
  for (size_t i = 0; i < segments; ++i) {
    uint32_t n = base + static_cast<uint32_t>(i);
    chunk.push_back(Seg(n, n * 4096, (uint64_t{n} << 32) | 0x1000));
  }
  return chunk;
}

// Many list shapes: every combination of 0/1/3 read segments, write lists of
// various chunk counts and sizes (including empty chunks), and an absent,
// empty or multi-segment reply chunk.
std::vector<ChunkLists> Shapes() {
  std::vector<ChunkLists> shapes;
  const std::vector<std::vector<ReadSegment>> reads = {
      {},
      {{0, Seg(1, 100, 0x10)}},
      {{0, Seg(1, 100, 0x10)},
       {128, Seg(2, 200, 0x20)},
       {128, Seg(3, 300, 0x30)}},
  };
  const std::vector<std::vector<WriteChunk>> writes = {
      {},
      {ChunkOf(0, 10)},
      {ChunkOf(1, 20)},
      {ChunkOf(2, 30), ChunkOf(3, 40), ChunkOf(1, 50)},
  };
  const std::vector<std::optional<WriteChunk>> replies = {
      std::nullopt, WriteChunk{}, ChunkOf(1, 60), ChunkOf(4, 70)};
  for (const auto& r : reads) {
    for (const auto& w : writes) {
      for (const auto& rc : replies) {
        shapes.push_back(ChunkLists{r, w, rc});
      }
    }
  }
  return shapes;
}

// RFC 5666 §4.3: three XDR optional-data lists; each read entry is
// position + handle + length + 64-bit offset, each write chunk a counted
// array of segments, the reply chunk an optional write chunk.
TEST(ChunkLists, Rfc5666_4_3_GoldenEncodingOfAllThreeLists) {
  ChunkLists lists;
  lists.reads = {{0, Seg(0x11, 0x22, 0x0000000300000033ull)},
                 {64, Seg(0x44, 0x55, 0x66)}};
  lists.writes = {{Seg(0x77, 0x88, 0x99)},
                  {Seg(0xA1, 0xA2, 0xA3), Seg(0xB1, 0xB2, 0xB3)}};
  lists.reply = WriteChunk{Seg(0xC1, 0xC2, 0xFFFFFFFFFFFFFFFFull)};
  // clang-format off
  const std::vector<uint8_t> golden = Words({
      1,                       // read list: entry follows
      0,                       //   rdma_position
      0x11, 0x22,              //   handle, length
      0x00000003, 0x33,        //   offset
      1,                       // read list: entry follows
      64,                      //   rdma_position
      0x44, 0x55,              //   handle, length
      0, 0x66,                 //   offset
      0,                       // read list ends
      1,                       // write list: entry follows
      1,                       //   one segment
      0x77, 0x88, 0, 0x99,     //   handle, length, offset
      1,                       // write list: entry follows
      2,                       //   two segments
      0xA1, 0xA2, 0, 0xA3,     //   handle, length, offset
      0xB1, 0xB2, 0, 0xB3,     //   handle, length, offset
      0,                       // write list ends
      1,                       // reply chunk present
      1,                       //   one segment
      0xC1, 0xC2,              //   handle, length
      0xFFFFFFFF, 0xFFFFFFFF,  //   offset
  });
  // clang-format on
  EXPECT_EQ(ChunkListsEncodedSize(lists), golden.size());
  EXPECT_THAT(Encode(lists), ElementsAreArray(golden));
  size_t consumed = 0;
  DecodeResult<ChunkLists> decoded = Decode(golden, {}, &consumed);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, lists);
  EXPECT_EQ(consumed, golden.size());
}

TEST(ChunkLists, Rfc5666_4_3_EmptyListsAreThreeZeroWords) {
  ChunkLists lists;
  EXPECT_EQ(ChunkListsEncodedSize(lists), 12u);
  EXPECT_THAT(Encode(lists), ElementsAreArray(Words({0, 0, 0})));
  DecodeResult<ChunkLists> decoded = Decode(Words({0, 0, 0, 0xDEAD}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, lists);
}

TEST(ChunkLists, Rfc8166_4_3_3_EmptyReplyChunkDiffersFromAbsentReplyChunk) {
  ChunkLists lists;
  lists.reply = WriteChunk{};
  EXPECT_THAT(Encode(lists), ElementsAreArray(Words({0, 0, 1, 0})));
  DecodeResult<ChunkLists> decoded = Decode(Words({0, 0, 1, 0}));
  ASSERT_TRUE(decoded.ok());
  ASSERT_TRUE(decoded->reply.has_value());
  EXPECT_TRUE(decoded->reply->empty());
}

TEST(ChunkListsEncodedSize, Rfc5666_4_3_MatchesEncodingForManyShapes) {
  for (const ChunkLists& lists : Shapes()) {
    SCOPED_TRACE(testing::Message()
                 << lists.reads.size() << " reads, " << lists.writes.size()
                 << " write chunks, reply "
                 << (lists.reply ? static_cast<int>(lists.reply->size()) : -1));
    size_t size = ChunkListsEncodedSize(lists);
    // Expected size computed independently from the XDR shapes.
    size_t expected = 4 + lists.reads.size() * 24 + 4 + 4;
    for (const WriteChunk& c : lists.writes) expected += 8 + 16 * c.size();
    if (lists.reply) expected += 4 + 16 * lists.reply->size();
    EXPECT_EQ(size, expected);

    std::vector<uint8_t> buf(size + 16, 0xEE);
    XdrWriter w(absl::MakeSpan(buf.data(), size));
    ASSERT_TRUE(EncodeChunkLists(lists, w).ok());
    EXPECT_EQ(w.offset(), size);
    for (size_t i = size; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xEE);

    // One octet less does not fit.
    std::vector<uint8_t> small(size - 1);
    XdrWriter too_small(absl::MakeSpan(small));
    EXPECT_EQ(EncodeChunkLists(lists, too_small).code(),
              absl::StatusCode::kResourceExhausted);

    // And the encoding decodes back to the same lists, consuming all of it.
    std::vector<uint8_t> encoded(buf.begin(), buf.begin() + size);
    size_t consumed = 0;
    DecodeResult<ChunkLists> decoded = Decode(encoded, {}, &consumed);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, lists);
    EXPECT_EQ(consumed, size);
  }
}

TEST(ChunkLists, Rfc5666_4_3_TruncationAtEveryOffsetOfEveryShape) {
  for (const ChunkLists& lists : Shapes()) {
    std::vector<uint8_t> encoded = Encode(lists);
    for (size_t n = 0; n < encoded.size(); ++n) {
      std::vector<uint8_t> prefix(encoded.begin(), encoded.begin() + n);
      DecodeResult<ChunkLists> decoded = Decode(prefix);
      ASSERT_FALSE(decoded.ok()) << "prefix " << n;
      ASSERT_EQ(decoded.error().kind, DecodeErrorKind::kTruncated)
          << "prefix " << n << ": " << decoded.error().message;
      ASSERT_LE(decoded.error().offset, n);
    }
  }
}

TEST(ChunkLimits, Rfc8166_4_3_1_ReadSegmentLimitIsExact) {
  for (uint32_t limit : {0u, 1u, 3u, 17u}) {
    SCOPED_TRACE(limit);
    ChunkLimits limits;
    limits.max_read_segments = limit;
    ChunkLists at_limit;
    for (uint32_t i = 0; i < limit; ++i) {
      at_limit.reads.push_back({i * 8, Seg(i, 8, i)});
    }
    DecodeResult<ChunkLists> ok = Decode(Encode(at_limit), limits);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(*ok, at_limit);

    ChunkLists over = at_limit;
    over.reads.push_back({0, Seg(99, 1, 1)});
    DecodeResult<ChunkLists> bad = Decode(Encode(over), limits);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManyReadSegments);
    EXPECT_EQ(bad.error().value, limit);
    // The offending "entry follows" word.
    EXPECT_EQ(bad.error().offset, size_t{limit} * 24);
  }
}

TEST(ChunkLimits, Rfc8166_4_3_2_WriteChunkLimitIsExact) {
  for (uint32_t limit : {0u, 1u, 2u, 5u}) {
    SCOPED_TRACE(limit);
    ChunkLimits limits;
    limits.max_write_chunks = limit;
    ChunkLists at_limit;
    for (uint32_t i = 0; i < limit; ++i) {
      at_limit.writes.push_back(ChunkOf(1, i));
    }
    DecodeResult<ChunkLists> ok = Decode(Encode(at_limit), limits);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(*ok, at_limit);

    ChunkLists over = at_limit;
    over.writes.push_back(ChunkOf(1, 100));
    DecodeResult<ChunkLists> bad = Decode(Encode(over), limits);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManyWriteChunks);
    EXPECT_EQ(bad.error().value, limit);
    EXPECT_EQ(bad.error().offset, 4 + size_t{limit} * 24);
  }
}

TEST(ChunkLimits, Rfc8166_4_3_2_SegmentsPerWriteChunkLimitIsExact) {
  for (uint32_t limit : {0u, 1u, 4u, 9u}) {
    SCOPED_TRACE(limit);
    ChunkLimits limits;
    limits.max_segments_per_chunk = limit;
    ChunkLists at_limit;
    at_limit.writes = {ChunkOf(limit, 1)};
    DecodeResult<ChunkLists> ok = Decode(Encode(at_limit), limits);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(*ok, at_limit);

    ChunkLists over;
    over.writes = {ChunkOf(limit, 1), ChunkOf(limit + 1, 1)};
    DecodeResult<ChunkLists> bad = Decode(Encode(over), limits);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManySegments);
    EXPECT_EQ(bad.error().value, limit);
    // read list end, follows, first chunk (count + segments), follows: the
    // second chunk's count word.
    EXPECT_EQ(bad.error().offset, 4u + 4u + 4u + 16u * limit + 4u);
    EXPECT_THAT(bad.error().message, HasSubstr("write chunk 1"));
  }
}

TEST(ChunkLimits, Rfc8166_4_3_3_SegmentsPerReplyChunkLimitIsExact) {
  for (uint32_t limit : {0u, 1u, 4u}) {
    SCOPED_TRACE(limit);
    ChunkLimits limits;
    limits.max_segments_per_chunk = limit;
    ChunkLists at_limit;
    at_limit.reply = ChunkOf(limit, 1);
    DecodeResult<ChunkLists> ok = Decode(Encode(at_limit), limits);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(*ok, at_limit);

    ChunkLists over;
    over.reply = ChunkOf(limit + 1, 1);
    DecodeResult<ChunkLists> bad = Decode(Encode(over), limits);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManySegments);
    EXPECT_EQ(bad.error().value, limit);
    EXPECT_EQ(bad.error().offset, 12u);
    EXPECT_THAT(bad.error().message, HasSubstr("reply chunk"));
  }
}

TEST(ChunkLimits, DefaultsMatchTheHeader) {
  ChunkLimits limits;
  EXPECT_EQ(limits.max_read_segments, 256u);
  EXPECT_EQ(limits.max_write_chunks, 64u);
  EXPECT_EQ(limits.max_segments_per_chunk, 256u);
}

TEST(ChunkLimits, AbsurdSegmentCountIsRejectedByLimit) {
  DecodeResult<ChunkLists> bad = Decode(Words({0, 1, 0xFFFFFFFF}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManySegments);
  EXPECT_EQ(bad.error().value, 256u);
  EXPECT_EQ(bad.error().offset, 8u);
}

TEST(ChunkLimits, AbsurdSegmentCountWithoutLimitIsTruncationNotAllocation) {
  ChunkLimits limits;
  limits.max_segments_per_chunk = std::numeric_limits<uint32_t>::max();
  for (const auto& bytes :
       {Words({0, 1, 0xFFFFFFFF, 1, 2, 3, 4}), Words({0, 0, 1, 0xFFFFFFFF})}) {
    DecodeResult<ChunkLists> bad = Decode(bytes, limits);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTruncated);
    EXPECT_THAT(bad.error().message, HasSubstr("4294967295 segments"));
  }
}

TEST(ChunkLimits, HugeReadListStopsAtTheLimit) {
  // 1000 read segments against the default limit of 256.
  std::vector<uint8_t> bytes;
  for (uint32_t i = 0; i < 1000; ++i) {
    for (uint32_t w : {1u, 0u, i, 4u, 0u, i}) AppendWord(bytes, w);
  }
  AppendWord(bytes, 0);
  DecodeResult<ChunkLists> bad = Decode(bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, DecodeErrorKind::kTooManyReadSegments);
  EXPECT_EQ(bad.error().value, 256u);
  EXPECT_EQ(bad.error().offset, 256u * 24u);
}

TEST(ChunkLists, Rfc4506_4_4_BadListDiscriminants) {
  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    size_t offset;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"read list first word 2", Words({2, 0, 0}), 0, "read list"},
      {"read list next word 2", Words({1, 0, 1, 2, 0, 3, 2, 0, 0}), 24,
       "read list"},
      {"write list first word 2", Words({0, 2, 0}), 4, "write list"},
      {"write list next word 0xFFFFFFFF",
       Words({0, 1, 1, 1, 2, 0, 3, 0xFFFFFFFF, 0}), 28, "write list"},
      {"reply chunk word 7", Words({0, 0, 7}), 8, "reply chunk"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeResult<ChunkLists> bad = Decode(c.bytes);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, DecodeErrorKind::kBadDiscriminant);
    EXPECT_EQ(bad.error().offset, c.offset);
    EXPECT_THAT(bad.error().message, HasSubstr(c.field));
  }
}

}  // namespace
}  // namespace rpcrdma::wire
