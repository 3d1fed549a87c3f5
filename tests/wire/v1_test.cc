// Tests for the RPC-over-RDMA version one transport header codec
// (RFC 5666 §4, RFC 8166 §4).
//
// The golden vectors are written word by word from the XDR in RFC 5666 §4.3
// and RFC 8166 §4.1.2: rdma_xid, rdma_vers, rdma_credit, rdma_proc, then the
// body of the procedure.
#include "plugin/wire/v1.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::wire {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using ::rpcrdma::test::AppendWord;
using ::rpcrdma::test::Words;

std::vector<uint8_t> Concat(std::vector<uint8_t> a,
                            const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Segment Seg(uint32_t handle, uint32_t length, uint64_t offset) {
  return Segment{handle, length, offset};
}

V1Header Header(uint32_t xid, uint32_t credits, V1Body body) {
  V1Header h;
  h.xid = xid;
  h.vers = 1;
  h.credits = credits;
  h.body = std::move(body);
  return h;
}

struct Golden {
  std::string name;
  std::vector<uint8_t> bytes;
  V1Header header;
};

// The golden vectors keep one XDR item per line.
// clang-format off

// RFC 8166 §4.2: an RDMA_MSG header with no chunks, written octet by octet.
Golden MsgEmpty() {
  return {"MsgEmpty",
          {
              0x12, 0x34, 0x56, 0x78,  // rdma_xid
              0x00, 0x00, 0x00, 0x01,  // rdma_vers = 1
              0x00, 0x00, 0x00, 0x20,  // rdma_credit = 32
              0x00, 0x00, 0x00, 0x00,  // rdma_proc = RDMA_MSG
              0x00, 0x00, 0x00, 0x00,  // rdma_reads: no entry
              0x00, 0x00, 0x00, 0x00,  // rdma_writes: no entry
              0x00, 0x00, 0x00, 0x00,  // rdma_reply: absent
          },
          Header(0x12345678, 32, V1Msg{})};
}

// RFC 8166 §4.3.1: a read list with a position-zero segment, two segments
// sharing position 140 (one read chunk) and one at position 296.
Golden MsgReadList() {
  V1Msg msg;
  msg.chunks.reads = {
      {0, Seg(0x1001, 0x200, 0x00007F0012345000ull)},
      {140, Seg(0x1002, 0x1000, 0x00007F0012346000ull)},
      {140, Seg(0x1003, 0x800, 0x00007F0012347000ull)},
      {296, Seg(0x1004, 4, 0x10)},
  };
  return {"MsgReadList",
          Words({
              0xA0B0C0D0, 1, 128, 0,  // xid, vers, credit, RDMA_MSG
              1,                      // read entry follows
              0,                      //   rdma_position 0
              0x1001, 0x200,          //   handle, length
              0x7F00, 0x12345000,     //   offset
              1,                      // read entry follows
              140,                    //   rdma_position 140
              0x1002, 0x1000,         //   handle, length
              0x7F00, 0x12346000,     //   offset
              1,                      // read entry follows
              140,                    //   rdma_position 140 (same chunk)
              0x1003, 0x800,          //   handle, length
              0x7F00, 0x12347000,     //   offset
              1,                      // read entry follows
              296,                    //   rdma_position 296
              0x1004, 4,              //   handle, length
              0, 0x10,                //   offset
              0,                      // read list ends
              0,                      // no write list
              0,                      // no reply chunk
          }),
          Header(0xA0B0C0D0, 128, msg)};
}

// RFC 8166 §3.5.3: a long call carries the whole RPC message in a
// position-zero read chunk of an RDMA_NOMSG.
Golden NoMsgPositionZero() {
  V1NoMsg nomsg;
  nomsg.chunks.reads = {
      {0, Seg(0xAABBCCDD, 8192, 0xFFFF880000000000ull)},
      {0, Seg(0xAABBCCDE, 1000, 0xFFFF880000002000ull)},
  };
  return {"NoMsgPositionZero",
          Words({
              0x00000001, 1, 1, 1,     // xid, vers, credit, RDMA_NOMSG
              1,                       // read entry follows
              0,                       //   rdma_position 0
              0xAABBCCDD, 8192,        //   handle, length
              0xFFFF8800, 0x00000000,  //   offset
              1,                       // read entry follows
              0,                       //   rdma_position 0
              0xAABBCCDE, 1000,        //   handle, length
              0xFFFF8800, 0x00002000,  //   offset
              0,                       // read list ends
              0,                       // no write list
              0,                       // no reply chunk
          }),
          Header(1, 1, nomsg)};
}

// RFC 8166 §4.3.2: a write list of two chunks, of two and three segments.
Golden MsgWriteList() {
  V1Msg msg;
  msg.chunks.writes = {
      {Seg(0x201, 4096, 0x1000), Seg(0x202, 4096, 0x2000)},
      {Seg(0x301, 65536, 0x100000000ull), Seg(0x302, 65536, 0x100010000ull),
       Seg(0x303, 12, 0x100020000ull)},
  };
  return {"MsgWriteList",
          Words({
              5, 1, 64, 0,                 // xid, vers, credit, RDMA_MSG
              0,                           // no read list
              1,                           // write chunk follows
              2,                           //   two segments
              0x201, 4096, 0, 0x1000,      //   handle, length, offset
              0x202, 4096, 0, 0x2000,      //   handle, length, offset
              1,                           // write chunk follows
              3,                           //   three segments
              0x301, 65536, 1, 0x00000000, //   handle, length, offset
              0x302, 65536, 1, 0x00010000, //   handle, length, offset
              0x303, 12, 1, 0x00020000,    //   handle, length, offset
              0,                           // write list ends
              0,                           // no reply chunk
          }),
          Header(5, 64, msg)};
}

// RFC 8166 §4.3.3: a call offering a two-segment reply chunk.
Golden MsgReplyChunk() {
  V1Msg msg;
  msg.chunks.reply = WriteChunk{Seg(0x401, 1024, 0xDEADBEEF00000000ull),
                                Seg(0x402, 3072, 0xDEADBEEF00000400ull)};
  return {"MsgReplyChunk",
          Words({
              0xFEEDFACE, 1, 16, 0,            // xid, vers, credit, RDMA_MSG
              0,                               // no read list
              0,                               // no write list
              1,                               // reply chunk present
              2,                               //   two segments
              0x401, 1024, 0xDEADBEEF, 0x000,  //   handle, length, offset
              0x402, 3072, 0xDEADBEEF, 0x400,  //   handle, length, offset
          }),
          Header(0xFEEDFACE, 16, msg)};
}

// RFC 8166 §4.3: a write list and a reply chunk in one RDMA_NOMSG.
Golden NoMsgWriteAndReply() {
  V1NoMsg nomsg;
  nomsg.chunks.writes = {{Seg(0x501, 8192, 0xA000), Seg(0x502, 100, 0xC000)}};
  nomsg.chunks.reply = WriteChunk{Seg(0x601, 2048, 0xE000)};
  return {"NoMsgWriteAndReply",
          Words({
              0x0BADF00D, 1, 8, 1,     // xid, vers, credit, RDMA_NOMSG
              0,                       // no read list
              1,                       // write chunk follows
              2,                       //   two segments
              0x501, 8192, 0, 0xA000,  //   handle, length, offset
              0x502, 100, 0, 0xC000,   //   handle, length, offset
              0,                       // write list ends
              1,                       // reply chunk present
              1,                       //   one segment
              0x601, 2048, 0, 0xE000,  //   handle, length, offset
          }),
          Header(0x0BADF00D, 8, nomsg)};
}

// RFC 5666 §4.3 rpc_rdma_header_padded: rdma_align and rdma_thresh precede
// the chunk lists.
Golden MsgpPadded() {
  V1Msgp msgp;
  msgp.align = 4096;
  msgp.thresh = 1024;
  msgp.chunks.writes = {{Seg(0x701, 512, 0x8000)}};
  return {"MsgpPadded",
          Words({
              0x00C0FFEE, 1, 4, 2,    // xid, vers, credit, RDMA_MSGP
              4096,                   // rdma_align
              1024,                   // rdma_thresh
              0,                      // no read list
              1,                      // write chunk follows
              1,                      //   one segment
              0x701, 512, 0, 0x8000,  //   handle, length, offset
              0,                      // write list ends
              0,                      // no reply chunk
          }),
          Header(0x00C0FFEE, 4, msgp)};
}

// RFC 5666 §4.3 / RFC 8166 §4.6.2: RDMA_DONE has no body.
Golden Done() {
  return {"Done",
          Words({0x77777777, 1, 0, 3}),  // xid, vers, credit, RDMA_DONE
          Header(0x77777777, 0, V1Done{})};
}

// RFC 8166 §4.5.1: ERR_VERS carries the inclusive supported range.
Golden ErrorVers() {
  V1Error err;
  err.code = V1ErrorCode::kVers;
  err.vers_low = 1;
  err.vers_high = 2;
  return {"ErrorVers",
          Words({
              0x01020304, 1, 10, 4,  // xid, vers, credit, RDMA_ERROR
              1,                     // rdma_err = ERR_VERS
              1,                     // rdma_vers_low
              2,                     // rdma_vers_high
          }),
          Header(0x01020304, 10, err)};
}

// RFC 8166 §4.5.2: ERR_CHUNK has no further fields.
Golden ErrorChunk() {
  V1Error err;
  err.code = V1ErrorCode::kChunk;
  return {"ErrorChunk",
          Words({
              0x0A0B0C0D, 1, 3, 4,  // xid, vers, credit, RDMA_ERROR
              2,                    // rdma_err = ERR_CHUNK
          }),
          Header(0x0A0B0C0D, 3, err)};
}

// clang-format on

std::vector<Golden> AllGoldens() {
  return {MsgEmpty(),     MsgReadList(),   NoMsgPositionZero(),
          MsgWriteList(), MsgReplyChunk(), NoMsgWriteAndReply(),
          MsgpPadded(),   Done(),          ErrorVers(),
          ErrorChunk()};
}

// Decodes the golden alone and followed by an RPC payload, encodes the
// expected header, and checks sizes.
void CheckGolden(const Golden& g) {
  SCOPED_TRACE(g.name);
  DecodeResult<V1Decoded> decoded = DecodeV1(g.bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header, g.header);
  EXPECT_EQ(decoded->header_length, g.bytes.size());

  // The RPC message follows the transport header (RFC 8166 §4.2): the
  // decoder stops at the end of the header and the payload is left as is.
  const std::vector<uint8_t> payload = {0x12, 0x34, 0x56, 0x78, 0, 0,   0,
                                        0,    0,    0,    0,    2, 0xFF};
  const std::vector<uint8_t> message = Concat(g.bytes, payload);
  DecodeResult<V1Decoded> with_payload = DecodeV1(message);
  ASSERT_TRUE(with_payload.ok()) << with_payload.status();
  EXPECT_EQ(with_payload->header, g.header);
  ASSERT_EQ(with_payload->header_length, g.bytes.size());
  EXPECT_THAT(absl::MakeConstSpan(message).subspan(with_payload->header_length),
              ElementsAreArray(payload));
  EXPECT_EQ(message, Concat(g.bytes, payload));

  EXPECT_EQ(V1EncodedSize(g.header), g.bytes.size());
  EXPECT_THAT(EncodeV1(g.header), ElementsAreArray(g.bytes));
  std::vector<uint8_t> buf(g.bytes.size());
  absl::StatusOr<size_t> written = EncodeV1(g.header, absl::MakeSpan(buf));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, g.bytes.size());
  EXPECT_EQ(buf, g.bytes);
}

TEST(V1Golden, Rfc5666_4_3_MsgWithEmptyLists) {
  CheckGolden(MsgEmpty());
  EXPECT_EQ(MsgEmpty().header.proc(), V1Proc::kMsg);
  EXPECT_EQ(MsgEmpty().bytes.size(), 28u);
}

TEST(V1Golden, Rfc8166_4_3_1_MsgWithReadListSharedPositionsAndPositionZero) {
  Golden g = MsgReadList();
  CheckGolden(g);
  DecodeResult<V1Decoded> d = DecodeV1(g.bytes);
  ASSERT_TRUE(d.ok());
  ASSERT_NE(d->header.chunks(), nullptr);
  const auto& reads = d->header.chunks()->reads;
  ASSERT_EQ(reads.size(), 4u);
  EXPECT_EQ(reads[0].position, 0u);
  EXPECT_EQ(reads[1].position, reads[2].position);
  EXPECT_EQ(reads[2].target.offset, 0x00007F0012347000ull);
  EXPECT_EQ(reads[3].position, 296u);
}

TEST(V1Golden, Rfc8166_3_5_3_NoMsgWithPositionZeroReadChunk) {
  Golden g = NoMsgPositionZero();
  CheckGolden(g);
  EXPECT_EQ(g.header.proc(), V1Proc::kNoMsg);
}

TEST(V1Golden, Rfc8166_4_3_2_WriteListOfSeveralMultiSegmentChunks) {
  CheckGolden(MsgWriteList());
}

TEST(V1Golden, Rfc8166_4_3_3_ReplyChunk) { CheckGolden(MsgReplyChunk()); }

TEST(V1Golden, Rfc8166_4_3_WriteListAndReplyChunkTogether) {
  CheckGolden(NoMsgWriteAndReply());
}

TEST(V1Golden, Rfc5666_4_3_MsgpHasAlignAndThreshBeforeLists) {
  Golden g = MsgpPadded();
  CheckGolden(g);
  EXPECT_EQ(g.header.proc(), V1Proc::kMsgp);
  DecodeResult<V1Decoded> d = DecodeV1(g.bytes);
  ASSERT_TRUE(d.ok());
  const V1Msgp& msgp = std::get<V1Msgp>(d->header.body);
  EXPECT_EQ(msgp.align, 4096u);
  EXPECT_EQ(msgp.thresh, 1024u);
  EXPECT_EQ(d->header.chunks(), &msgp.chunks);
}

TEST(V1Golden, Rfc8166_4_6_2_DoneHasNoBody) {
  Golden g = Done();
  CheckGolden(g);
  EXPECT_EQ(g.bytes.size(), 16u);
  EXPECT_EQ(g.header.proc(), V1Proc::kDone);
  EXPECT_EQ(g.header.chunks(), nullptr);
}

TEST(V1Golden, Rfc8166_4_5_1_ErrVersWithLowAndHigh) {
  Golden g = ErrorVers();
  CheckGolden(g);
  EXPECT_EQ(g.header.proc(), V1Proc::kError);
  EXPECT_EQ(g.header.chunks(), nullptr);
}

TEST(V1Golden, Rfc8166_4_5_2_ErrChunkHasNoArguments) {
  Golden g = ErrorChunk();
  CheckGolden(g);
  EXPECT_EQ(g.bytes.size(), 20u);
}

TEST(V1HeaderAccessors, Rfc8166_4_2_4_ProcFollowsTheBody) {
  EXPECT_EQ(Header(0, 0, V1Msg{}).proc(), V1Proc::kMsg);
  EXPECT_EQ(Header(0, 0, V1NoMsg{}).proc(), V1Proc::kNoMsg);
  EXPECT_EQ(Header(0, 0, V1Msgp{}).proc(), V1Proc::kMsgp);
  EXPECT_EQ(Header(0, 0, V1Done{}).proc(), V1Proc::kDone);
  EXPECT_EQ(Header(0, 0, V1Error{}).proc(), V1Proc::kError);
  EXPECT_EQ(static_cast<uint32_t>(V1Proc::kError), 4u);
}

TEST(V1HeaderAccessors, ChunksPointsIntoTheBody) {
  V1Header msg = Header(0, 0, V1Msg{});
  EXPECT_EQ(msg.chunks(), &std::get<V1Msg>(msg.body).chunks);
  V1Header nomsg = Header(0, 0, V1NoMsg{});
  EXPECT_EQ(nomsg.chunks(), &std::get<V1NoMsg>(nomsg.body).chunks);
  V1Header msgp = Header(0, 0, V1Msgp{});
  EXPECT_EQ(msgp.chunks(), &std::get<V1Msgp>(msgp.body).chunks);
  EXPECT_EQ(Header(0, 0, V1Done{}).chunks(), nullptr);
  EXPECT_EQ(Header(0, 0, V1Error{}).chunks(), nullptr);
}

TEST(V1Names, Rfc8166_4_2_4_ProcedureNames) {
  EXPECT_EQ(V1ProcName(V1Proc::kMsg), "RDMA_MSG");
  EXPECT_EQ(V1ProcName(V1Proc::kNoMsg), "RDMA_NOMSG");
  EXPECT_EQ(V1ProcName(V1Proc::kMsgp), "RDMA_MSGP");
  EXPECT_EQ(V1ProcName(V1Proc::kDone), "RDMA_DONE");
  EXPECT_EQ(V1ProcName(V1Proc::kError), "RDMA_ERROR");
  EXPECT_EQ(V1ProcName(static_cast<V1Proc>(5)), "unknown");
}

TEST(V1Names, Rfc8166_4_5_ErrorCodeNames) {
  EXPECT_EQ(V1ErrorCodeName(V1ErrorCode::kVers), "ERR_VERS");
  EXPECT_EQ(V1ErrorCodeName(V1ErrorCode::kChunk), "ERR_CHUNK");
  EXPECT_EQ(V1ErrorCodeName(static_cast<V1ErrorCode>(3)), "unknown");
}

TEST(V1RoundTrip, Rfc8166_4_1_2_EveryGoldenHeader) {
  for (const Golden& g : AllGoldens()) {
    SCOPED_TRACE(g.name);
    std::vector<uint8_t> encoded = EncodeV1(g.header);
    DecodeResult<V1Decoded> decoded = DecodeV1(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->header, g.header);
    EXPECT_EQ(decoded->header_length, encoded.size());
    EXPECT_EQ(EncodeV1(decoded->header), encoded);
  }
}

// Headers of every procedure with pseudo-random fields and list shapes.
TEST(V1RoundTrip, Rfc8166_4_1_2_ManyGeneratedHeaders) {
  std::mt19937 rng(8166);
  auto u32 = [&rng]() { return static_cast<uint32_t>(rng()); };
  auto u64 = [&u32]() { return (uint64_t{u32()} << 32) | u32(); };
  auto small = [&rng](uint32_t n) {
    return static_cast<size_t>(rng() % (n + 1));
  };
  auto segment = [&]() { return Seg(u32(), u32(), u64()); };
  auto chunk = [&]() {
    WriteChunk c(small(4));
    for (Segment& s : c) s = segment();
    return c;
  };
  auto lists = [&]() {
    ChunkLists l;
    l.reads.resize(small(5));
    for (ReadSegment& r : l.reads) r = {u32() % 4 * 1024, segment()};
    l.writes.resize(small(3));
    for (WriteChunk& w : l.writes) w = chunk();
    if (rng() % 2) l.reply = chunk();
    return l;
  };
  for (int i = 0; i < 2000; ++i) {
    V1Header h;
    h.xid = u32();
    h.credits = u32();
    switch (rng() % 6) {
      case 0:
        h.body = V1Msg{lists()};
        break;
      case 1:
        h.body = V1NoMsg{lists()};
        break;
      case 2:
        h.body = V1Msgp{u32(), u32(), lists()};
        break;
      case 3:
        h.body = V1Done{};
        break;
      case 4:
        h.body = V1Error{V1ErrorCode::kVers, u32(), u32()};
        break;
      default:
        h.body = V1Error{V1ErrorCode::kChunk, 0, 0};
        break;
    }
    std::vector<uint8_t> encoded = EncodeV1(h);
    ASSERT_EQ(encoded.size(), V1EncodedSize(h)) << i;
    DecodeResult<V1Decoded> decoded = DecodeV1(encoded);
    ASSERT_TRUE(decoded.ok()) << i << ": " << decoded.status();
    ASSERT_EQ(decoded->header, h) << i;
    ASSERT_EQ(decoded->header_length, encoded.size()) << i;
  }
}

TEST(V1Encode, Rfc8166_4_5_2_ErrChunkIgnoresVersionRange) {
  V1Error err;
  err.code = V1ErrorCode::kChunk;
  err.vers_low = 5;
  err.vers_high = 6;
  V1Header h = Header(9, 1, err);
  EXPECT_EQ(V1EncodedSize(h), 20u);
  EXPECT_THAT(EncodeV1(h), ElementsAreArray(Words({9, 1, 1, 4, 2})));
}

TEST(V1Encode, UnknownErrorCodeIsRejected) {
  V1Error err;
  err.code = static_cast<V1ErrorCode>(3);
  V1Header h = Header(9, 1, err);
  std::vector<uint8_t> buf(64, 0xEE);
  absl::StatusOr<size_t> written = EncodeV1(h, absl::MakeSpan(buf));
  EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EncodeV1(h).empty());
  EXPECT_EQ(buf, std::vector<uint8_t>(64, 0xEE));
}

TEST(V1Encode, WritesTheVersionItIsGiven) {
  V1Header h = Header(1, 2, V1Done{});
  h.vers = 7;
  EXPECT_THAT(EncodeV1(h), ElementsAreArray(Words({1, 7, 2, 3})));
}

TEST(V1Encode, LargerBufferReturnsOctetsWritten) {
  Golden g = MsgWriteList();
  std::vector<uint8_t> buf(g.bytes.size() + 100, 0xEE);
  absl::StatusOr<size_t> written = EncodeV1(g.header, absl::MakeSpan(buf));
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, g.bytes.size());
  EXPECT_TRUE(std::equal(g.bytes.begin(), g.bytes.end(), buf.begin()));
  for (size_t i = g.bytes.size(); i < buf.size(); ++i) EXPECT_EQ(buf[i], 0xEE);
}

TEST(V1Encode, TooSmallBufferAtEverySizeIsResourceExhausted) {
  for (const Golden& g : AllGoldens()) {
    SCOPED_TRACE(g.name);
    const size_t need = g.bytes.size();
    for (size_t n = 0; n < need; ++n) {
      std::vector<uint8_t> backing(need + 8, 0xEE);
      absl::StatusOr<size_t> written =
          EncodeV1(g.header, absl::MakeSpan(backing.data(), n));
      ASSERT_EQ(written.status().code(), absl::StatusCode::kResourceExhausted)
          << "size " << n;
      // Nothing past the buffer is touched ...
      for (size_t i = n; i < backing.size(); ++i) {
        ASSERT_EQ(backing[i], 0xEE) << "size " << n << " octet " << i;
      }
      // ... and every item that fit before the failing one is correct (an
      // item is at most eight octets).
      for (size_t i = 0; i + 8 < n; ++i) {
        ASSERT_EQ(backing[i], g.bytes[i]) << "size " << n << " octet " << i;
      }
    }
  }
}

TEST(V1Truncation, Rfc8166_4_5_2_EveryPrefixOfEveryGoldenIsTruncated) {
  for (const Golden& g : AllGoldens()) {
    SCOPED_TRACE(g.name);
    for (size_t n = 0; n < g.bytes.size(); ++n) {
      // A copy of exactly n octets, so reading past it is caught by
      // sanitizers as well as by the result.
      std::vector<uint8_t> prefix(g.bytes.begin(), g.bytes.begin() + n);
      DecodeResult<V1Decoded> d = DecodeV1(prefix);
      ASSERT_FALSE(d.ok()) << "prefix " << n;
      ASSERT_EQ(d.error().kind, DecodeErrorKind::kTruncated)
          << "prefix " << n << ": " << d.error().message;
      ASSERT_LE(d.error().offset, n) << "prefix " << n;
      ASSERT_THAT(std::string(d.status().message()), HasSubstr("truncated"))
          << n;
    }
  }
}

TEST(V1Truncation, Rfc8166_4_2_TruncationNamesTheField) {
  struct Case {
    std::vector<uint8_t> bytes;
    size_t length;
    size_t offset;
    const char* field;
  };
  const std::vector<Case> cases = {
      {MsgEmpty().bytes, 0, 0, "rdma_xid"},
      {MsgEmpty().bytes, 6, 4, "rdma_vers"},
      {MsgEmpty().bytes, 10, 8, "rdma_credit"},
      {MsgEmpty().bytes, 15, 12, "rdma_proc"},
      {MsgEmpty().bytes, 17, 16, "read list discriminant"},
      {MsgEmpty().bytes, 23, 20, "write list discriminant"},
      {MsgEmpty().bytes, 27, 24, "reply chunk discriminant"},
      {MsgReadList().bytes, 22, 20, "rdma_position"},
      {MsgReadList().bytes, 30, 24, "rdma_length"},
      {MsgReadList().bytes, 36, 24, "rdma_offset"},
      {MsgWriteList().bytes, 26, 24, "segment count"},
      {MsgWriteList().bytes, 40, 24, "write chunk 0 claims 2 segments"},
      {MsgReplyChunk().bytes, 40, 28, "reply chunk claims 2 segments"},
      {MsgpPadded().bytes, 18, 16, "rdma_align"},
      {MsgpPadded().bytes, 22, 20, "rdma_thresh"},
      {ErrorVers().bytes, 18, 16, "rdma_err"},
      {ErrorVers().bytes, 20, 20, "rdma_vers_low"},
      {ErrorVers().bytes, 27, 24, "rdma_vers_high"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    std::vector<uint8_t> prefix(c.bytes.begin(), c.bytes.begin() + c.length);
    DecodeResult<V1Decoded> d = DecodeV1(prefix);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kTruncated);
    EXPECT_EQ(d.error().offset, c.offset);
    EXPECT_THAT(d.error().message, HasSubstr(c.field));
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("truncated"));
  }
}

TEST(V1Version, Rfc8166_4_5_1_WrongVersionIsBadVersionWithTheValue) {
  for (uint32_t vers : {0u, 2u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(vers);
    std::vector<uint8_t> bytes = Words({0xCAFE, vers, 32, 0, 0, 0, 0});
    DecodeResult<V1Decoded> d = DecodeV1(bytes);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kBadVersion);
    EXPECT_EQ(d.error().value, vers);
    EXPECT_EQ(d.error().offset, 4u);
    EXPECT_THAT(d.error().message, HasSubstr("rdma_vers"));
  }
}

TEST(V1Version, Rfc8166_4_5_1_BadVersionIsReportedBeforeTheRestIsRead) {
  // A version two header (draft -04 §6.1) whose body version one could not
  // parse: rdma_proc 5 and a truncated body.
  std::vector<uint8_t> bytes = Words({0x11, 2, 8, 5, 0xFFFFFFFF});
  for (size_t n = 0; n <= bytes.size(); ++n) {
    SCOPED_TRACE(n);
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    DecodeResult<V1Decoded> d = DecodeV1(prefix);
    ASSERT_FALSE(d.ok());
    if (n < 8) {
      EXPECT_EQ(d.error().kind, DecodeErrorKind::kTruncated);
    } else {
      EXPECT_EQ(d.error().kind, DecodeErrorKind::kBadVersion);
      EXPECT_EQ(d.error().value, 2u);
    }
  }
}

TEST(V1BadProc, Rfc8166_4_2_4_UnknownProcedureIsBadProc) {
  for (uint32_t proc : {5u, 6u, 0x100u, 0x80000000u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(proc);
    for (const std::vector<uint8_t>& bytes :
         {Words({1, 1, 1, proc}), Words({1, 1, 1, proc, 0, 0, 0})}) {
      DecodeResult<V1Decoded> d = DecodeV1(bytes);
      ASSERT_FALSE(d.ok());
      EXPECT_EQ(d.error().kind, DecodeErrorKind::kBadProc);
      EXPECT_EQ(d.error().offset, 12u);
      EXPECT_THAT(d.error().message, HasSubstr("rdma_proc"));
    }
  }
}

TEST(V1Discriminant, Rfc5666_4_3_BadListAndUnionDiscriminants) {
  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    size_t offset;
  };
  const std::vector<Case> cases = {
      {"read list follow word 2", Words({1, 1, 1, 0, 2, 0, 0}), 16},
      {"write list follow word 2", Words({1, 1, 1, 0, 0, 2, 0}), 20},
      {"reply present word 7", Words({1, 1, 1, 1, 0, 0, 7}), 24},
      {"second read entry follow word 3",
       Words({1, 1, 1, 0, 1, 0, 1, 2, 0, 3, 3, 0, 0}), 40},
      {"MSGP read list follow word 2", Words({1, 1, 1, 2, 64, 128, 2, 0, 0}),
       24},
      {"rdma_err 0", Words({1, 1, 1, 4, 0}), 16},
      {"rdma_err 3", Words({1, 1, 1, 4, 3, 1, 1}), 16},
      {"rdma_err 0xFFFFFFFF", Words({1, 1, 1, 4, 0xFFFFFFFF}), 16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeResult<V1Decoded> d = DecodeV1(c.bytes);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kBadDiscriminant);
    EXPECT_EQ(d.error().offset, c.offset);
  }
}

TEST(V1Limits, AbsurdSegmentCountIsTooManySegments) {
  // Write chunk and reply chunk each claiming 0xFFFFFFFF segments.
  const std::vector<uint8_t> write = Words({1, 1, 1, 0, 0, 1, 0xFFFFFFFF});
  const std::vector<uint8_t> reply = Words({1, 1, 1, 1, 0, 0, 1, 0xFFFFFFFF});
  for (const auto& [bytes, offset] :
       {std::pair{write, size_t{24}}, std::pair{reply, size_t{28}}}) {
    DecodeResult<V1Decoded> d = DecodeV1(bytes);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kTooManySegments);
    EXPECT_EQ(d.error().value, 256u);
    EXPECT_EQ(d.error().offset, offset);

    ChunkLimits tight;
    tight.max_segments_per_chunk = 12;
    d = DecodeV1(bytes, tight);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kTooManySegments);
    EXPECT_EQ(d.error().value, 12u);

    // Without a limit, the count is checked against what arrived before
    // anything is reserved.
    ChunkLimits none;
    none.max_segments_per_chunk = std::numeric_limits<uint32_t>::max();
    d = DecodeV1(bytes, none);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().kind, DecodeErrorKind::kTruncated);
  }
}

TEST(V1Limits, HugeReadListIsTooManyReadSegments) {
  std::vector<uint8_t> bytes = Words({1, 1, 1, 1});  // RDMA_NOMSG
  for (uint32_t i = 0; i < 5000; ++i) {
    for (uint32_t w : {1u, 0u, i, 64u, 0u, i * 64}) AppendWord(bytes, w);
  }
  AppendWord(bytes, 0);
  AppendWord(bytes, 0);
  AppendWord(bytes, 0);
  DecodeResult<V1Decoded> d = DecodeV1(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, DecodeErrorKind::kTooManyReadSegments);
  EXPECT_EQ(d.error().value, 256u);
  EXPECT_EQ(d.error().offset, 16u + 256u * 24u);

  ChunkLimits roomy;
  roomy.max_read_segments = 5000;
  DecodeResult<V1Decoded> ok = DecodeV1(bytes, roomy);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->header.chunks()->reads.size(), 5000u);
  EXPECT_EQ(ok->header_length, bytes.size());
}

// Builds a header of `proc` whose lists have `reads` read segments,
// `writes` one-segment write chunks, and one write chunk of `segments`.
V1Header LimitHeader(V1Proc proc, uint32_t reads, uint32_t writes,
                     std::optional<uint32_t> segments) {
  ChunkLists l;
  for (uint32_t i = 0; i < reads; ++i) {
    l.reads.push_back({i, Seg(i, 1, i)});
  }
  for (uint32_t i = 0; i < writes; ++i) {
    l.writes.push_back({Seg(i, 2, i)});
  }
  if (segments) {
    l.reply = WriteChunk(*segments, Seg(3, 4, 5));
  }
  switch (proc) {
    case V1Proc::kNoMsg:
      return Header(1, 1, V1NoMsg{l});
    case V1Proc::kMsgp:
      return Header(1, 1, V1Msgp{8, 16, l});
    default:
      return Header(1, 1, V1Msg{l});
  }
}

TEST(V1Limits, ChunkLimitsAreExactForEveryProcWithLists) {
  ChunkLimits limits;
  limits.max_read_segments = 3;
  limits.max_write_chunks = 2;
  limits.max_segments_per_chunk = 4;
  for (V1Proc proc : {V1Proc::kMsg, V1Proc::kNoMsg, V1Proc::kMsgp}) {
    SCOPED_TRACE(V1ProcName(proc));
    V1Header at = LimitHeader(proc, 3, 2, 4);
    DecodeResult<V1Decoded> ok = DecodeV1(EncodeV1(at), limits);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->header, at);

    struct Over {
      V1Header header;
      DecodeErrorKind kind;
      uint32_t value;
    };
    const std::vector<Over> overs = {
        {LimitHeader(proc, 4, 2, 4), DecodeErrorKind::kTooManyReadSegments, 3},
        {LimitHeader(proc, 3, 3, 4), DecodeErrorKind::kTooManyWriteChunks, 2},
        {LimitHeader(proc, 3, 2, 5), DecodeErrorKind::kTooManySegments, 4},
    };
    for (const Over& o : overs) {
      DecodeResult<V1Decoded> d = DecodeV1(EncodeV1(o.header), limits);
      ASSERT_FALSE(d.ok());
      EXPECT_EQ(d.error().kind, o.kind);
      EXPECT_EQ(d.error().value, o.value);
    }
  }
}

TEST(V1ErrorReply, Rfc8166_4_5_1_BadVersionAnswersErrVers) {
  const std::vector<uint8_t> request = Words({0xABCD0123, 2, 32, 0});
  DecodeResult<V1Decoded> d = DecodeV1(request);
  ASSERT_FALSE(d.ok());
  V1Header reply = V1ErrorReplyFor(request, d.error(), 17);
  EXPECT_EQ(reply.xid, 0xABCD0123u);
  EXPECT_EQ(reply.vers, 1u);
  EXPECT_EQ(reply.credits, 17u);
  ASSERT_EQ(reply.proc(), V1Proc::kError);
  const V1Error& err = std::get<V1Error>(reply.body);
  EXPECT_EQ(err.code, V1ErrorCode::kVers);
  EXPECT_EQ(err.vers_low, 1u);
  EXPECT_EQ(err.vers_high, 1u);
  EXPECT_THAT(EncodeV1(reply),
              ElementsAre(0xAB, 0xCD, 0x01, 0x23,  // rdma_xid from request
                          0, 0, 0, 1,              // rdma_vers 1
                          0, 0, 0, 17,             // rdma_credit
                          0, 0, 0, 4,              // RDMA_ERROR
                          0, 0, 0, 1,              // ERR_VERS
                          0, 0, 0, 1,              // rdma_vers_low
                          0, 0, 0, 1));            // rdma_vers_high
}

TEST(V1ErrorReply, Rfc8166_4_5_1_ErrVersCarriesTheGivenRange) {
  DecodeError error{DecodeErrorKind::kBadVersion, 4, "v", 3};
  V1Header reply = V1ErrorReplyFor(Words({7, 3}), error, 2, 1, 2);
  EXPECT_THAT(EncodeV1(reply), ElementsAreArray(Words({7, 1, 2, 4, 1, 1, 2})));
}

TEST(V1ErrorReply, Rfc8166_4_5_2_EveryOtherKindAnswersErrChunk) {
  const std::vector<uint8_t> request = Words({0x00FF00FF, 1, 9, 7});
  for (DecodeErrorKind kind :
       {DecodeErrorKind::kTruncated, DecodeErrorKind::kBadProc,
        DecodeErrorKind::kBadDiscriminant,
        DecodeErrorKind::kTooManyReadSegments,
        DecodeErrorKind::kTooManyWriteChunks, DecodeErrorKind::kTooManySegments,
        DecodeErrorKind::kBadLength, DecodeErrorKind::kBadPropertyValue}) {
    SCOPED_TRACE(DecodeErrorKindName(kind));
    DecodeError error{kind, 12, "x", 5};
    V1Header reply = V1ErrorReplyFor(request, error, 4, 1, 2);
    EXPECT_EQ(reply.xid, 0x00FF00FFu);
    EXPECT_EQ(reply.vers, 1u);
    EXPECT_EQ(reply.credits, 4u);
    ASSERT_EQ(reply.proc(), V1Proc::kError);
    EXPECT_EQ(std::get<V1Error>(reply.body).code, V1ErrorCode::kChunk);
    EXPECT_THAT(EncodeV1(reply),
                ElementsAreArray(Words({0x00FF00FF, 1, 4, 4, 2})));
  }
}

TEST(V1ErrorReply, Rfc8166_4_5_2_DecodeFailureEndToEnd) {
  // RDMA_MSG whose reply-chunk discriminant is 7.
  const std::vector<uint8_t> request = Words({0x31415926, 1, 64, 0, 0, 0, 7});
  DecodeResult<V1Decoded> d = DecodeV1(request);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, DecodeErrorKind::kBadDiscriminant);
  EXPECT_THAT(EncodeV1(V1ErrorReplyFor(request, d.error(), 32)),
              ElementsAreArray(Words({0x31415926, 1, 32, 4, 2})));
}

TEST(V1ErrorReply, XidIsZeroWhenFewerThanFourOctetsArrived) {
  DecodeError error{DecodeErrorKind::kTruncated, 0, "t", 0};
  const std::vector<uint8_t> three = {0xAA, 0xBB, 0xCC};
  EXPECT_EQ(V1ErrorReplyFor(three, error, 1).xid, 0u);
  EXPECT_EQ(V1ErrorReplyFor({}, error, 1).xid, 0u);
  const std::vector<uint8_t> four = {0xAA, 0xBB, 0xCC, 0xDD};
  EXPECT_EQ(V1ErrorReplyFor(four, error, 1).xid, 0xAABBCCDDu);
  DecodeResult<V1Decoded> d = DecodeV1(three);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(EncodeV1(V1ErrorReplyFor(three, d.error(), 5)),
              ElementsAreArray(Words({0, 1, 5, 4, 2})));
}

TEST(V1ErrorReply, ReplyDecodesAsAnErrorHeader) {
  const std::vector<uint8_t> request = Words({0x99, 0, 1, 0});
  DecodeResult<V1Decoded> d = DecodeV1(request);
  ASSERT_FALSE(d.ok());
  V1Header reply = V1ErrorReplyFor(request, d.error(), 3);
  std::vector<uint8_t> encoded = EncodeV1(reply);
  DecodeResult<V1Decoded> back = DecodeV1(encoded);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->header, reply);
  EXPECT_EQ(back->header_length, 28u);
}

}  // namespace
}  // namespace rpcrdma::wire
