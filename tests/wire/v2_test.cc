// Tests of the RPC-over-RDMA version two header codec against
// draft-cel-nfsv4-rpcrdma-version-two-04. Golden octets are written by hand
// from the §6.2 XDR: every item is a big-endian 32-bit word (RFC 4506 §4.1),
// hypers are two words, most significant first (§4.5), opaque data is padded
// with zeros to a multiple of four octets (§4.10).
#include "plugin/wire/v2.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rpcrdma::wire {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Bytes = std::vector<uint8_t>;

// Big-endian XDR words.
Bytes Words(std::initializer_list<uint32_t> words) {
  Bytes out;
  for (uint32_t w : words) {
    out.push_back(static_cast<uint8_t>(w >> 24));
    out.push_back(static_cast<uint8_t>(w >> 16));
    out.push_back(static_cast<uint8_t>(w >> 8));
    out.push_back(static_cast<uint8_t>(w));
  }
  return out;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// rdma_xid, rdma_vers = 2, rdma_credit, rdma_proc.
Bytes Hdr(uint32_t xid, uint32_t credit, uint32_t proc) {
  return Words({xid, 2, credit, proc});
}

DecodeError DecodeFails(const Bytes& message, const V2Limits& limits = {}) {
  DecodeResult<V2Decoded> d = DecodeV2(message, limits);
  EXPECT_FALSE(d.ok());
  if (d.ok()) return DecodeError{DecodeErrorKind::kTruncated, 9999, "", 0};
  return d.error();
}

V2Decoded DecodeOk(const Bytes& message, const V2Limits& limits = {}) {
  DecodeResult<V2Decoded> d = DecodeV2(message, limits);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return V2Decoded{};
  return *d;
}

// The golden vectors below, shared by the truncation and round-trip tests.

// §6.2 RDMA2_MSG, direction REPLY, remote invalidation handle, two read
// segments, two write chunks and a reply chunk.
Bytes GoldenMsgAllLists() {
  return Cat({
      Hdr(0x0A0B0C0D, 128, 0),
      Words({1, 0xAABBCCDD}),  // rdma_direction REPLY, rdma_inv_handle
      // rdma_reads
      Words({1, 0, 0x11111111, 0x1000, 0x00000001, 0x00002000}),
      Words({1, 0x40, 0x22222222, 0x200, 0xFFFFFFFF, 0x00000000}),
      Words({0}),
      // rdma_writes
      Words({1, 2, 0x33333333, 0x100, 0x00000001, 0x00000000, 0x44444444, 0x80,
             0x00000000, 0x00000010}),
      Words({1, 1, 0x55555555, 0x10, 0, 0}),
      Words({0}),
      // rdma_reply
      Words({1, 1, 0x66666666, 0x400, 0x77777777, 0x88888888}),
  });
}

V2Header GoldenMsgAllListsHeader() {
  V2Header h;
  h.xid = 0x0A0B0C0D;
  h.credits = 128;
  V2Msg m;
  m.chunks.direction = MsgDirection::kReply;
  m.chunks.inv_handle = 0xAABBCCDD;
  m.chunks.lists.reads = {
      ReadSegment{0, Segment{0x11111111, 0x1000, 0x0000000100002000}},
      ReadSegment{0x40, Segment{0x22222222, 0x200, 0xFFFFFFFF00000000}},
  };
  m.chunks.lists.writes = {
      WriteChunk{Segment{0x33333333, 0x100, 0x0000000100000000},
                 Segment{0x44444444, 0x80, 0x10}},
      WriteChunk{Segment{0x55555555, 0x10, 0}},
  };
  m.chunks.lists.reply =
      WriteChunk{Segment{0x66666666, 0x400, 0x7777777788888888}};
  h.body = m;
  return h;
}

// §5.3.1 RDMA2_CONNPROP: RBSIZ = 8192, BRS = GENL, an unknown property
// 0x12345678 with three octets "abc", and rdma_nochg selecting elements 0
// and 2. Offsets: rdma_start count 16, propvals 20 / 32 / 44, rdma_nochg 56.
Bytes GoldenConnProp() {
  return {
      0x00, 0x00, 0x00, 0x2A,  // rdma_xid
      0x00, 0x00, 0x00, 0x02,  // rdma_vers
      0x00, 0x00, 0x00, 0x10,  // rdma_credit
      0x00, 0x00, 0x00, 0x06,  // rdma_proc = RDMA2_CONNPROP
      0x00, 0x00, 0x00, 0x03,  // rdma_start: 3 propvals
      0x00, 0x00, 0x00, 0x01,  // rdma_which = RDMA2_PROPID_RBSIZ
      0x00, 0x00, 0x00, 0x04,  // rdma_data length
      0x00, 0x00, 0x20, 0x00,  // 8192
      0x00, 0x00, 0x00, 0x02,  // rdma_which = RDMA2_PROPID_BRS
      0x00, 0x00, 0x00, 0x04,  // rdma_data length
      0x00, 0x00, 0x00, 0x02,  // RDMA2_BKREQSUP_GENL
      0x12, 0x34, 0x56, 0x78,  // rdma_which = unknown
      0x00, 0x00, 0x00, 0x03,  // rdma_data length
      0x61, 0x62, 0x63, 0x00,  // "abc" + one octet of padding
      0x00, 0x00, 0x00, 0x01,  // rdma_nochg: one word
      0x00, 0x00, 0x00, 0x05,  // bits 0 and 2
  };
}

// §5.3.3 RDMA2_RESPROP: done = {0}, rejected = {1}, other = RBSIZ 16384.
Bytes GoldenResProp() {
  return Cat({Hdr(0x77, 3, 8), Words({1, 0x00000001}), Words({1, 0x00000002}),
              Words({1, 1, 4, 0x4000})});
}

// §6.2 RDMA2_OPTIONAL with five octets of rdma_optinfo.
Bytes GoldenOptional5() {
  return Cat({Hdr(1, 0, 5), Words({1, 0x102, 5}),
              Bytes{0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x00, 0x00, 0x00}});
}

// §6.2.4 RDMA2_ERROR / RDMA2_ERR_VERS.
Bytes GoldenErrVers() { return Cat({Hdr(0xCAFEF00D, 1, 4), Words({1, 1, 2})}); }

// ---- §6.2 RDMA2_MSG / RDMA2_NOMSG -----------------------------------------

TEST(V2Decode, Draft04_6_2_MsgCallWithoutChunks) {
  const Bytes golden = {
      0x01, 0x02, 0x03, 0x04,  // rdma_xid
      0x00, 0x00, 0x00, 0x02,  // rdma_vers
      0x00, 0x00, 0x00, 0x20,  // rdma_credit = 32
      0x00, 0x00, 0x00, 0x00,  // rdma_proc = RDMA2_MSG
      0x00, 0x00, 0x00, 0x00,  // rdma_direction = CALL
      0x00, 0x00, 0x00, 0x00,  // rdma_inv_handle
      0x00, 0x00, 0x00, 0x00,  // no read list
      0x00, 0x00, 0x00, 0x00,  // no write list
      0x00, 0x00, 0x00, 0x00,  // no reply chunk
  };
  // §6.2.1: the RPC payload follows the transport header.
  Bytes with_payload = golden;
  with_payload.insert(with_payload.end(), {'R', 'P', 'C', '!'});
  V2Decoded d = DecodeOk(with_payload);
  EXPECT_EQ(d.header_length, 36u);
  EXPECT_EQ(d.header.xid, 0x01020304u);
  EXPECT_EQ(d.header.vers, 2u);
  EXPECT_EQ(d.header.credits, 32u);
  EXPECT_EQ(d.header.proc(), V2Proc::kMsg);
  ASSERT_NE(d.header.chunks(), nullptr);
  EXPECT_EQ(d.header.chunks()->direction, MsgDirection::kCall);
  EXPECT_EQ(d.header.chunks()->inv_handle, 0u);
  EXPECT_EQ(d.header.chunks()->lists, ChunkLists{});

  V2Header expected;
  expected.xid = 0x01020304;
  expected.credits = 32;
  expected.body = V2Msg{};
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(EncodeV2(expected), golden);
  EXPECT_EQ(V2EncodedSize(expected), 36u);
}

TEST(V2Decode, Draft04_6_2_2_MsgReplyWithInvHandleAndAllLists) {
  const Bytes golden = GoldenMsgAllLists();
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header_length, golden.size());
  EXPECT_EQ(d.header, GoldenMsgAllListsHeader());
  EXPECT_EQ(d.header.chunks()->direction, MsgDirection::kReply);
  EXPECT_EQ(d.header.chunks()->inv_handle, 0xAABBCCDDu);
  ASSERT_EQ(d.header.chunks()->lists.reads.size(), 2u);
  EXPECT_EQ(d.header.chunks()->lists.reads[1].target.offset,
            0xFFFFFFFF00000000u);
  EXPECT_EQ(EncodeV2(GoldenMsgAllListsHeader()), golden);
  EXPECT_EQ(V2EncodedSize(GoldenMsgAllListsHeader()), golden.size());
}

TEST(V2Decode, Draft04_6_2_NoMsgWithReplyChunk) {
  const Bytes golden =
      Cat({Hdr(0x99, 4, 1), Words({0, 0x5A5A5A5A}), Words({0}), Words({0}),
           Words({1, 2, 0x01, 0x1000, 0, 0x1000, 0x02, 0x800, 0, 0x4000})});
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header.proc(), V2Proc::kNoMsg);
  V2Header expected;
  expected.xid = 0x99;
  expected.credits = 4;
  V2NoMsg n;
  n.chunks.inv_handle = 0x5A5A5A5A;
  n.chunks.lists.reply =
      WriteChunk{Segment{1, 0x1000, 0x1000}, Segment{2, 0x800, 0x4000}};
  expected.body = n;
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(d.header_length, golden.size());
  EXPECT_EQ(EncodeV2(expected), golden);
}

TEST(V2Decode, Draft04_6_2_2_BadDirectionIsBadDiscriminant) {
  for (uint32_t dir : {2u, 3u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(dir);
    DecodeError e = DecodeFails(Cat({Hdr(1, 1, 0), Words({dir, 0, 0, 0, 0})}));
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
    EXPECT_EQ(e.offset, 16u);
  }
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 1), Words({2, 0, 0, 0, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
}

TEST(V2Decode, Draft04_6_2_ChunkListDiscriminantNotBoolean) {
  // rdma_reads "value follows" word of 2.
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 0), Words({0, 0, 2, 0, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
  EXPECT_EQ(e.offset, 24u);
  // Reply chunk "value follows" word of 7.
  e = DecodeFails(Cat({Hdr(1, 1, 0), Words({0, 0, 0, 0, 7})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
  EXPECT_EQ(e.offset, 32u);
}

// ---- §6.2 / §6.2.4 RDMA2_ERROR ---------------------------------------------

TEST(V2Decode, Draft04_6_2_4_ErrVersGoldenOctets) {
  const Bytes golden = {
      0xCA, 0xFE, 0xF0, 0x0D,  // rdma_xid
      0x00, 0x00, 0x00, 0x02,  // rdma_vers
      0x00, 0x00, 0x00, 0x01,  // rdma_credit
      0x00, 0x00, 0x00, 0x04,  // rdma_proc = RDMA2_ERROR
      0x00, 0x00, 0x00, 0x01,  // rdma_err = RDMA2_ERR_VERS
      0x00, 0x00, 0x00, 0x01,  // rdma_vers_low
      0x00, 0x00, 0x00, 0x02,  // rdma_vers_high
  };
  EXPECT_EQ(golden, GoldenErrVers());
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header_length, 28u);
  EXPECT_EQ(d.header.proc(), V2Proc::kError);
  EXPECT_EQ(d.header.chunks(), nullptr);
  const V2Error* e = std::get_if<V2Error>(&d.header.body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, V2ErrorCode::kVers);
  EXPECT_EQ(e->vers_low, 1u);
  EXPECT_EQ(e->vers_high, 2u);
}

TEST(V2Decode, Draft04_6_2_4_EveryErrorArm) {
  struct Case {
    const char* name;
    Bytes arm;  // rdma_err and its arm
    V2Error expected;
  };
  auto err = [](V2ErrorCode code) {
    V2Error e;
    e.code = code;
    return e;
  };
  V2Error vers = err(V2ErrorCode::kVers);
  vers.vers_low = 1;
  vers.vers_high = 2;
  V2Error read_chunks = err(V2ErrorCode::kReadChunks);
  read_chunks.max_chunks = 8;
  V2Error write_chunks = err(V2ErrorCode::kWriteChunks);
  write_chunks.max_chunks = 3;
  V2Error segments = err(V2ErrorCode::kSegments);
  segments.max_segments = 16;
  V2Error write_resource = err(V2ErrorCode::kWriteResource);
  write_resource.chunk_index = 2;
  write_resource.length_needed = 0x10000;
  V2Error reply_resource = err(V2ErrorCode::kReplyResource);
  reply_resource.length_needed = 0x2000;
  const Case cases[] = {
      {"VERS", Words({1, 1, 2}), vers},
      {"BAD_XDR", Words({2}), err(V2ErrorCode::kBadXdr)},
      {"INVALID_PROC", Words({3}), err(V2ErrorCode::kInvalidProc)},
      {"READ_CHUNKS", Words({4, 8}), read_chunks},
      {"WRITE_CHUNKS", Words({5, 3}), write_chunks},
      {"SEGMENTS", Words({6, 16}), segments},
      {"WRITE_RESOURCE", Words({7, 2, 0x10000}), write_resource},
      {"REPLY_RESOURCE", Words({8, 0x2000}), reply_resource},
      {"INVALID_OPTION", Words({9}), err(V2ErrorCode::kInvalidOption)},
      {"SYSTEM", Words({10}), err(V2ErrorCode::kSystem)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Bytes golden = Cat({Hdr(0xCAFEF00D, 1, 4), c.arm});
    V2Decoded d = DecodeOk(golden);
    EXPECT_EQ(d.header_length, golden.size());
    V2Header expected;
    expected.xid = 0xCAFEF00D;
    expected.credits = 1;
    expected.body = c.expected;
    EXPECT_EQ(d.header, expected);
    EXPECT_EQ(EncodeV2(expected), golden);
    EXPECT_EQ(V2EncodedSize(expected), golden.size());
    // Every prefix that cuts into the arm is truncated.
    for (size_t n = 16; n < golden.size(); ++n) {
      DecodeError e = DecodeFails(Bytes(golden.begin(), golden.begin() + n));
      EXPECT_EQ(e.kind, DecodeErrorKind::kTruncated) << n;
    }
  }
}

TEST(V2Decode, Draft04_6_2_4_UnknownErrorCodeIsBadDiscriminant) {
  for (uint32_t code : {0u, 11u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(code);
    DecodeError e = DecodeFails(Cat({Hdr(5, 1, 4), Words({code, 0, 0})}));
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
    EXPECT_EQ(e.offset, 16u);
  }
}

// ---- §6.2 RDMA2_OPTIONAL ----------------------------------------------------

TEST(V2Decode, Draft04_6_2_OptionalOptinfoPadding) {
  struct Case {
    Bytes info;
    Bytes encoded;  // length word, data and padding
  };
  const Case cases[] = {
      {{}, {0, 0, 0, 0}},
      {{0xAA}, {0, 0, 0, 1, 0xAA, 0, 0, 0}},
      {{0xAA, 0xBB, 0xCC}, {0, 0, 0, 3, 0xAA, 0xBB, 0xCC, 0}},
      {{0xAA, 0xBB, 0xCC, 0xDD}, {0, 0, 0, 4, 0xAA, 0xBB, 0xCC, 0xDD}},
      {{0xAA, 0xBB, 0xCC, 0xDD, 0xEE},
       {0, 0, 0, 5, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.info.size());
    // rdma_optdir REPLY, rdma_opttype 0x102.
    const Bytes golden = Cat({Hdr(1, 0, 5), Words({1, 0x102}), c.encoded});
    V2Header expected;
    expected.xid = 1;
    expected.credits = 0;
    V2Optional o;
    o.optdir = MsgDirection::kReply;
    o.opttype = 0x102;
    o.optinfo = c.info;
    expected.body = o;
    V2Decoded d = DecodeOk(golden);
    EXPECT_EQ(d.header, expected);
    EXPECT_EQ(d.header.proc(), V2Proc::kOptional);
    EXPECT_EQ(d.header_length, golden.size());
    EXPECT_EQ(EncodeV2(expected), golden);
    EXPECT_EQ(V2EncodedSize(expected), golden.size());
  }
  EXPECT_EQ(GoldenOptional5(),
            Cat({Hdr(1, 0, 5), Words({1, 0x102}), cases[4].encoded}));
}

TEST(V2Decode, Draft04_6_2_OptionalPaddingContentNotChecked) {
  // RFC 4506 §4.10 says padding is zero; like the Linux decoder this codec
  // does not check it. The encoder writes zeros.
  Bytes message = GoldenOptional5();
  message[message.size() - 1] = 0x7F;
  V2Decoded d = DecodeOk(message);
  EXPECT_EQ(EncodeV2(d.header), GoldenOptional5());
}

TEST(V2Decode, Draft04_6_2_OptionalBadDirection) {
  DecodeError e = DecodeFails(Cat({Hdr(1, 0, 5), Words({2, 0x102, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadDiscriminant);
  EXPECT_EQ(e.offset, 16u);
}

TEST(V2Decode, Draft04_6_2_OptinfoLengths) {
  // Above the configured limit: kBadLength, before looking at the data.
  DecodeError e = DecodeFails(Cat({Hdr(1, 0, 5), Words({0, 1, 0xFFFFFFFF})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 24u);
  V2Limits limits;
  limits.max_optinfo_length = 4;
  e = DecodeFails(GoldenOptional5(), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 24u);
  limits.max_optinfo_length = 5;
  DecodeOk(GoldenOptional5(), limits);
  // Within the limit but past the end of the message: kTruncated.
  e = DecodeFails(Cat({Hdr(1, 0, 5), Words({0, 1, 100, 0, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kTruncated);
  EXPECT_EQ(e.offset, 24u);
}

// ---- §5.3 property operations -----------------------------------------------

TEST(V2Decode, Draft04_5_3_1_ConnPropGoldenOctets) {
  const Bytes golden = GoldenConnProp();
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header_length, 64u);
  EXPECT_EQ(d.header.proc(), V2Proc::kConnProp);
  EXPECT_EQ(d.header.xid, 0x2Au);
  EXPECT_EQ(d.header.credits, 16u);
  const V2ConnProp* c = std::get_if<V2ConnProp>(&d.header.body);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->start.size(), 3u);
  EXPECT_EQ(c->start[0], MakeRbsizProperty(8192));
  EXPECT_EQ(c->start[1], MakeBrsProperty(BackwardRequestSupport::kGeneral));
  // §5.1.1: the unknown property is kept, raw.
  EXPECT_EQ(c->start[2].which, 0x12345678u);
  EXPECT_THAT(c->start[2].data, ElementsAre('a', 'b', 'c'));
  EXPECT_THAT(c->nochg, ElementsAre(5u));
  EXPECT_TRUE(SubsetContains(c->nochg, 0));
  EXPECT_FALSE(SubsetContains(c->nochg, 1));
  EXPECT_TRUE(SubsetContains(c->nochg, 2));
  EXPECT_FALSE(SubsetContains(c->nochg, 3));

  V2Header expected;
  expected.xid = 0x2A;
  expected.credits = 16;
  V2ConnProp body;
  body.start = {MakeRbsizProperty(8192),
                MakeBrsProperty(BackwardRequestSupport::kGeneral),
                PropVal{0x12345678, {'a', 'b', 'c'}}};
  SubsetAdd(body.nochg, 0);
  SubsetAdd(body.nochg, 2);
  expected.body = body;
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(EncodeV2(expected), golden);
  EXPECT_EQ(V2EncodedSize(expected), golden.size());
}

TEST(V2Properties, Draft04_5_1_1_UnknownPropertySkipped) {
  V2Decoded d = DecodeOk(GoldenConnProp());
  const V2ConnProp& c = std::get<V2ConnProp>(d.header.body);
  DecodeResult<KnownProperties> k = InterpretProperties(c.start);
  ASSERT_TRUE(k.ok()) << k.status();
  KnownProperties expected;
  expected.rbsiz = 8192;
  expected.brs = BackwardRequestSupport::kGeneral;
  EXPECT_EQ(*k, expected);
  // An unknown id alone gives nothing, and no error, whatever its length.
  PropSet unknown_only = {PropVal{0xFFFFFF00, {1, 2, 3, 4, 5, 6, 7}},
                          PropVal{3, {}}};
  k = InterpretProperties(unknown_only);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, KnownProperties{});
}

TEST(V2Properties, Draft04_5_2_EmptySetHasNoValues) {
  DecodeResult<KnownProperties> k = InterpretProperties({});
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->rbsiz.has_value());
  EXPECT_FALSE(k->brs.has_value());
}

TEST(V2Decode, Draft04_5_3_2_ReqPropZeroLengthMeansDefault) {
  // rdma_want: RBSIZ and BRS, both with empty rdma_data.
  const Bytes golden = Cat({Hdr(0x55, 2, 7), Words({2, 1, 0, 2, 0})});
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header.proc(), V2Proc::kReqProp);
  V2Header expected;
  expected.xid = 0x55;
  expected.credits = 2;
  expected.body = V2ReqProp{{PropVal{1, {}}, PropVal{2, {}}}};
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(EncodeV2(expected), golden);
  // §5.1.1 zero length = default; §5.2 Table 1 defaults.
  DecodeResult<KnownProperties> k =
      InterpretProperties(std::get<V2ReqProp>(d.header.body).want);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->rbsiz, 4096u);
  EXPECT_EQ(k->brs, BackwardRequestSupport::kInline);
}

TEST(V2Decode, Draft04_5_3_3_ResPropGoldenOctets) {
  const Bytes golden = GoldenResProp();
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header.proc(), V2Proc::kResProp);
  EXPECT_EQ(d.header_length, golden.size());
  V2Header expected;
  expected.xid = 0x77;
  expected.credits = 3;
  V2ResProp r;
  SubsetAdd(r.done, 0);
  SubsetAdd(r.rejected, 1);
  r.other = {MakeRbsizProperty(16384)};
  expected.body = r;
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(EncodeV2(expected), golden);
  EXPECT_EQ(V2EncodedSize(expected), golden.size());
  const V2ResProp& got = std::get<V2ResProp>(d.header.body);
  EXPECT_TRUE(SubsetContains(got.done, 0));
  EXPECT_FALSE(SubsetContains(got.done, 1));
  EXPECT_TRUE(SubsetContains(got.rejected, 1));
  EXPECT_EQ(InterpretProperties(got.other)->rbsiz, 16384u);
}

TEST(V2Decode, Draft04_5_3_4_UpdPropGoldenOctets) {
  // rdma_now: BRS = RDMA2_BKREQSUP_NONE.
  const Bytes golden = Cat({Hdr(0x88, 9, 9), Words({1, 2, 4, 0})});
  V2Decoded d = DecodeOk(golden);
  EXPECT_EQ(d.header.proc(), V2Proc::kUpdProp);
  V2Header expected;
  expected.xid = 0x88;
  expected.credits = 9;
  expected.body = V2UpdProp{{MakeBrsProperty(BackwardRequestSupport::kNone)}};
  EXPECT_EQ(d.header, expected);
  EXPECT_EQ(EncodeV2(expected), golden);
  EXPECT_EQ(InterpretProperties(std::get<V2UpdProp>(d.header.body).now)->brs,
            BackwardRequestSupport::kNone);
}

TEST(V2Decode, Draft04_5_3_EmptySetsAndSubsets) {
  const Bytes connprop = Cat({Hdr(1, 1, 6), Words({0, 0})});
  V2Decoded d = DecodeOk(connprop);
  EXPECT_EQ(d.header.body, V2Body{V2ConnProp{}});
  EXPECT_EQ(d.header_length, 24u);
  const Bytes resprop = Cat({Hdr(1, 1, 8), Words({0, 0, 0})});
  d = DecodeOk(resprop);
  EXPECT_EQ(d.header.body, V2Body{V2ResProp{}});
  EXPECT_EQ(d.header_length, 28u);
  EXPECT_EQ(EncodeV2(d.header), resprop);
}

// ---- §5.1.1 / §5.2 property value checks ------------------------------------

TEST(V2Properties, Draft04_5_2_MakePropertyOctets) {
  EXPECT_EQ(MakeRbsizProperty(0x01020304),
            (PropVal{1, {0x01, 0x02, 0x03, 0x04}}));
  EXPECT_EQ(MakeBrsProperty(BackwardRequestSupport::kGeneral),
            (PropVal{2, {0, 0, 0, 2}}));
}

TEST(V2Properties, Draft04_5_1_1_ZeroLengthValueIsDefault) {
  DecodeResult<KnownProperties> k =
      InterpretProperties({PropVal{kPropIdRbsiz, {}}});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->rbsiz, kDefaultRbsiz);
  EXPECT_FALSE(k->brs.has_value());
  k = InterpretProperties({PropVal{kPropIdBrs, {}}});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->brs, kDefaultBrs);
  EXPECT_FALSE(k->rbsiz.has_value());
  // RBSIZ takes any uint32 value, zero and the maximum included.
  EXPECT_EQ(InterpretProperties({MakeRbsizProperty(0)})->rbsiz, 0u);
  EXPECT_EQ(InterpretProperties({MakeRbsizProperty(0xFFFFFFFF)})->rbsiz,
            0xFFFFFFFFu);
}

TEST(V2Properties, Draft04_5_1_1_LastOccurrenceWins) {
  DecodeResult<KnownProperties> k =
      InterpretProperties({MakeRbsizProperty(1000), MakeRbsizProperty(2000)});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->rbsiz, 2000u);
}

TEST(V2Properties, Draft04_5_1_1_BadKnownValues) {
  const PropSet bad[] = {
      {PropVal{kPropIdRbsiz, {0, 0, 0x10}}},                 // 3 octets
      {PropVal{kPropIdRbsiz, {0, 0, 0x10, 0, 0, 0, 0, 0}}},  // 8 octets
      {PropVal{kPropIdRbsiz, {0}}},                          // 1 octet
      {PropVal{kPropIdBrs, {0, 0, 0, 3}}},                   // BRS = 3
      {PropVal{kPropIdBrs, {0xFF, 0xFF, 0xFF, 0xFF}}},       // BRS = 2^32-1
      {PropVal{kPropIdBrs, {0, 1}}},                         // 2 octets
  };
  for (const PropSet& set : bad) {
    DecodeResult<KnownProperties> k = InterpretProperties(set);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().kind, DecodeErrorKind::kBadPropertyValue);
    EXPECT_EQ(k.error().value, set[0].which);
  }
  // The offending element is named by index.
  DecodeResult<KnownProperties> k =
      InterpretProperties({MakeRbsizProperty(1), PropVal{9, {}},
                           PropVal{kPropIdBrs, {0, 0, 0, 3}}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().offset, 2u);
}

TEST(V2Decode, Draft04_5_1_1_BadPropertyValueInEveryPropSet) {
  // (rdma_data of RBSIZ with 3 octets) in rdma_start, rdma_want, rdma_other
  // and rdma_now; the error points at the propval.
  const Bytes rbsiz3 = Cat({Words({1, 1, 3}), Bytes{0, 0x10, 0, 0}});
  struct Case {
    const char* name;
    Bytes message;
    size_t offset;
  };
  const Case cases[] = {
      {"CONNPROP", Cat({Hdr(1, 1, 6), rbsiz3, Words({0})}), 20},
      {"REQPROP", Cat({Hdr(1, 1, 7), rbsiz3}), 20},
      {"RESPROP", Cat({Hdr(1, 1, 8), Words({0, 0}), rbsiz3}), 28},
      {"UPDPROP", Cat({Hdr(1, 1, 9), rbsiz3}), 20},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeError e = DecodeFails(c.message);
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadPropertyValue);
    EXPECT_EQ(e.offset, c.offset);
    EXPECT_EQ(e.value, kPropIdRbsiz);
  }
}

TEST(V2Decode, Draft04_5_1_1_BadPropertyLengthsAndValues) {
  // RBSIZ with 8 octets.
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 7), Words({1, 1, 8, 0, 0x1000})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadPropertyValue);
  EXPECT_EQ(e.offset, 20u);
  // A valid RBSIZ, then BRS = 3 (second propval, offset 32).
  e = DecodeFails(Cat({Hdr(1, 1, 7), Words({2, 1, 4, 0x1000, 2, 4, 3})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadPropertyValue);
  EXPECT_EQ(e.offset, 32u);
  EXPECT_EQ(e.value, kPropIdBrs);
  // BRS with a 5-octet value.
  e = DecodeFails(Cat({Hdr(1, 1, 9), Words({1, 2, 5, 0, 0x01000000})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadPropertyValue);
  // The same lengths under an unknown id are fine (§5.1.1).
  V2Decoded d = DecodeOk(Cat({Hdr(1, 1, 7), Words({1, 0x100, 8, 0, 0x1000})}));
  EXPECT_EQ(std::get<V2ReqProp>(d.header.body).want[0].data.size(), 8u);
}

TEST(V2Decode, Draft04_5_1_1_PropertyDataPastEndOfMessage) {
  // rdma_data claims 100 octets; 8 remain.
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 7), Words({1, 0x99, 100, 0, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kTruncated);
  EXPECT_EQ(e.offset, 24u);
  // Above max_property_length: kBadLength whatever follows.
  e = DecodeFails(Cat({Hdr(1, 1, 7), Words({1, 0x99, 0xFFFFFFFF, 0, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 24u);
  e = DecodeFails(Cat({Hdr(1, 1, 7), Words({1, 0x99, 1025}), Bytes(1028, 0)}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  V2Decoded d =
      DecodeOk(Cat({Hdr(1, 1, 7), Words({1, 0x99, 1024}), Bytes(1024, 0)}));
  EXPECT_EQ(std::get<V2ReqProp>(d.header.body).want[0].data.size(), 1024u);
}

// ---- Limits and absurd counts
// ------------------------------------------------

TEST(V2Decode, Draft04_5_1_1_AbsurdPropSetCounts) {
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 6), Words({0xFFFFFFFF})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 16u);
  e = DecodeFails(Cat({Hdr(1, 1, 9), Words({65}), Bytes(65 * 8, 0)}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  // Within the limit but more than the message holds: rejected before any
  // element is read.
  e = DecodeFails(Cat({Hdr(1, 1, 9), Words({64, 1, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kTruncated);
  EXPECT_EQ(e.offset, 16u);
  // 64 empty unknown properties are fine.
  V2Decoded d = DecodeOk(Cat({Hdr(1, 1, 9), Words({64}), Bytes(64 * 8, 0)}));
  EXPECT_EQ(std::get<V2UpdProp>(d.header.body).now.size(), 64u);
  // A configured limit.
  V2Limits limits;
  limits.max_properties = 1;
  e = DecodeFails(Cat({Hdr(1, 1, 7), Words({2, 9, 0, 9, 0})}), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  limits.max_property_length = 3;
  e = DecodeFails(Cat({Hdr(1, 1, 7), Words({1, 9, 4, 0})}), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 24u);
}

TEST(V2Decode, Draft04_5_1_1_AbsurdSubsetCounts) {
  // rdma_nochg of CONNPROP.
  DecodeError e = DecodeFails(Cat({Hdr(1, 1, 6), Words({0, 0xFFFFFFFF})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 20u);
  e = DecodeFails(Cat({Hdr(1, 1, 6), Words({0, 2, 1})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kTruncated);
  EXPECT_EQ(e.offset, 20u);
  // rdma_rejected of RESPROP.
  e = DecodeFails(Cat({Hdr(1, 1, 8), Words({0, 0x80000000, 0})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 20u);
  V2Limits limits;
  limits.max_subset_words = 1;
  e = DecodeFails(Cat({Hdr(1, 1, 8), Words({2, 1, 1, 0, 0})}), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadLength);
  EXPECT_EQ(e.offset, 16u);
  DecodeOk(Cat({Hdr(1, 1, 8), Words({1, 1, 0, 0})}), limits);
}

TEST(V2Decode, Draft04_6_2_AbsurdChunkCounts) {
  // Write chunk claiming 2^32-1 segments.
  DecodeError e =
      DecodeFails(Cat({Hdr(1, 1, 0), Words({0, 0, 0, 1, 0xFFFFFFFF})}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kTooManySegments);
  EXPECT_EQ(e.offset, 32u);
  EXPECT_EQ(e.value, ChunkLimits{}.max_segments_per_chunk);
  // A read list longer than the configured limit.
  V2Limits limits;
  limits.chunks.max_read_segments = 1;
  e = DecodeFails(GoldenMsgAllLists(), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kTooManyReadSegments);
  EXPECT_EQ(e.value, 1u);
  EXPECT_EQ(e.offset, 48u);
  limits = V2Limits{};
  limits.chunks.max_write_chunks = 1;
  e = DecodeFails(GoldenMsgAllLists(), limits);
  EXPECT_EQ(e.kind, DecodeErrorKind::kTooManyWriteChunks);
  EXPECT_EQ(e.value, 1u);
}

// ---- Version and procedure
// ----------------------------------------------------

TEST(V2Decode, Draft04_6_2_4_WrongVersionReportedOnceRead) {
  for (uint32_t vers : {0u, 1u, 3u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(vers);
    // Only xid and vers: the version is reported, not the truncation.
    DecodeError e = DecodeFails(Words({7, vers}));
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadVersion);
    EXPECT_EQ(e.value, vers);
    EXPECT_EQ(e.offset, 4u);
    // A complete message is rejected the same way.
    Bytes full = GoldenMsgAllLists();
    full[7] = static_cast<uint8_t>(vers);
    full[4] = static_cast<uint8_t>(vers >> 24);
    full[5] = static_cast<uint8_t>(vers >> 16);
    full[6] = static_cast<uint8_t>(vers >> 8);
    e = DecodeFails(full);
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadVersion);
    EXPECT_EQ(e.value, vers);
  }
  // A version one RDMA_MSG header (RFC 8166 §4.2).
  DecodeError e = DecodeFails(Words({0x1234, 1, 32, 0, 0, 0, 0}));
  EXPECT_EQ(e.kind, DecodeErrorKind::kBadVersion);
  EXPECT_EQ(e.value, 1u);
}

TEST(V2Decode, Draft04_6_2_4_UnknownProcIsBadProc) {
  for (uint32_t proc : {2u, 3u, 10u, 11u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(proc);
    DecodeError e = DecodeFails(Hdr(1, 1, proc));
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadProc);
    EXPECT_EQ(e.offset, 12u);
    e = DecodeFails(Cat({Hdr(1, 1, proc), Words({0, 0, 0, 0, 0})}));
    EXPECT_EQ(e.kind, DecodeErrorKind::kBadProc);
  }
}

TEST(V2Decode, Draft04_6_2_TruncationAtEveryOffset) {
  const Bytes goldens[] = {
      GoldenMsgAllLists(),
      GoldenConnProp(),
      GoldenResProp(),
      GoldenOptional5(),
      GoldenErrVers(),
      Cat({Hdr(0x55, 2, 7), Words({2, 1, 0, 2, 0})}),
      Cat({Hdr(0x88, 9, 9), Words({1, 2, 4, 0})}),
  };
  for (const Bytes& golden : goldens) {
    ASSERT_TRUE(DecodeV2(golden).ok());
    for (size_t n = 0; n < golden.size(); ++n) {
      DecodeResult<V2Decoded> d =
          DecodeV2(absl::MakeConstSpan(golden.data(), n));
      ASSERT_FALSE(d.ok()) << n;
      EXPECT_EQ(d.error().kind, DecodeErrorKind::kTruncated)
          << "prefix of " << n << " of " << golden.size() << ": "
          << d.error().message;
      EXPECT_LE(d.error().offset, n);
    }
  }
}

// ---- §6.2.4 error replies
// -------------------------------------------------------

TEST(V2ErrorReply, Draft04_6_2_4_ErrVersCopiesXidAndVers) {
  // A message with rdma_vers 3.
  const Bytes bad = {0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 3,
                     0,    0,    0,    8,    0, 0, 0, 0};
  DecodeResult<V2Decoded> d = DecodeV2(bad);
  ASSERT_FALSE(d.ok());
  V2Header reply = V2ErrorReplyFor(bad, d.error(), 5);
  EXPECT_EQ(reply.xid, 0xDEADBEEFu);
  EXPECT_EQ(reply.vers, 3u);
  EXPECT_EQ(reply.credits, 5u);
  EXPECT_EQ(reply.proc(), V2Proc::kError);
  const Bytes expected = {
      0xDE, 0xAD, 0xBE, 0xEF,  // rdma_xid, copied
      0x00, 0x00, 0x00, 0x03,  // rdma_vers, copied
      0x00, 0x00, 0x00, 0x05,  // rdma_credit
      0x00, 0x00, 0x00, 0x04,  // RDMA2_ERROR
      0x00, 0x00, 0x00, 0x01,  // RDMA2_ERR_VERS
      0x00, 0x00, 0x00, 0x01,  // rdma_vers_low
      0x00, 0x00, 0x00, 0x02,  // rdma_vers_high
  };
  EXPECT_EQ(EncodeV2(reply), expected);
  // Caller-chosen range.
  reply = V2ErrorReplyFor(bad, d.error(), 5, 2, 2);
  EXPECT_EQ(std::get<V2Error>(reply.body).vers_low, 2u);
  EXPECT_EQ(std::get<V2Error>(reply.body).vers_high, 2u);
}

TEST(V2ErrorReply, Draft04_6_2_4_EachKind) {
  const Bytes incoming = Cat({Hdr(0x01020304, 99, 0), Words({0})});
  struct Case {
    DecodeErrorKind kind;
    uint32_t value;
    Bytes arm;
  };
  const Case cases[] = {
      {DecodeErrorKind::kBadProc, 0, Words({3})},
      {DecodeErrorKind::kTooManyReadSegments, 8, Words({4, 8})},
      {DecodeErrorKind::kTooManyWriteChunks, 3, Words({5, 3})},
      {DecodeErrorKind::kTooManySegments, 16, Words({6, 16})},
      {DecodeErrorKind::kTruncated, 0, Words({2})},
      {DecodeErrorKind::kBadDiscriminant, 0, Words({2})},
      {DecodeErrorKind::kBadLength, 0, Words({2})},
      {DecodeErrorKind::kBadPropertyValue, 1, Words({2})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(DecodeErrorKindName(c.kind));
    DecodeError error{c.kind, 20, "x", c.value};
    V2Header reply = V2ErrorReplyFor(incoming, error, 17);
    const Bytes expected = Cat({Hdr(0x01020304, 17, 4), c.arm});
    EXPECT_EQ(EncodeV2(reply), expected);
    // Version two replies decode back to themselves.
    V2Decoded d = DecodeOk(expected);
    EXPECT_EQ(d.header, reply);
  }
}

TEST(V2ErrorReply, Draft04_6_2_4_FromRealDecodeFailures) {
  // Unknown proc 3 → RDMA2_ERR_INVALID_PROC.
  Bytes bad = Hdr(0xABCD, 1, 3);
  V2Header reply = V2ErrorReplyFor(bad, DecodeV2(bad).error(), 32);
  EXPECT_EQ(EncodeV2(reply), Cat({Hdr(0xABCD, 32, 4), Words({3})}));
  // Too many segments in a write chunk → RDMA2_ERR_SEGMENTS with the limit.
  bad = Cat({Hdr(0xABCD, 1, 0), Words({0, 0, 0, 1, 0xFFFFFFFF})});
  reply = V2ErrorReplyFor(bad, DecodeV2(bad).error(), 32);
  EXPECT_EQ(EncodeV2(reply), Cat({Hdr(0xABCD, 32, 4), Words({6, 256})}));
  // Bad property value → RDMA2_ERR_BAD_XDR.
  bad = Cat({Hdr(0xABCD, 1, 9), Words({1, 2, 4, 3})});
  reply = V2ErrorReplyFor(bad, DecodeV2(bad).error(), 32);
  EXPECT_EQ(EncodeV2(reply), Cat({Hdr(0xABCD, 32, 4), Words({2})}));
}

TEST(V2ErrorReply, Draft04_6_2_4_ShortIncomingHeader) {
  DecodeError truncated{DecodeErrorKind::kTruncated, 0, "", 0};
  // Not even a whole xid: nothing to copy.
  V2Header reply = V2ErrorReplyFor(Bytes{1, 2, 3}, truncated, 1);
  EXPECT_EQ(reply.xid, 0u);
  EXPECT_EQ(reply.vers, 2u);
  // xid but no whole vers: xid copied, vers 2.
  reply = V2ErrorReplyFor(Bytes{1, 2, 3, 4, 0, 0}, truncated, 1);
  EXPECT_EQ(reply.xid, 0x01020304u);
  EXPECT_EQ(reply.vers, 2u);
  EXPECT_EQ(EncodeV2(reply), Cat({Hdr(0x01020304, 1, 4), Words({2})}));
  // Exactly a whole xid.
  reply = V2ErrorReplyFor(Bytes{5, 6, 7, 8}, truncated, 1);
  EXPECT_EQ(reply.xid, 0x05060708u);
  EXPECT_EQ(reply.vers, 2u);
  // Exactly xid and vers: both copied.
  reply = V2ErrorReplyFor(Words({0x0708, 1}), truncated, 1);
  EXPECT_EQ(reply.xid, 0x0708u);
  EXPECT_EQ(reply.vers, 1u);
}

TEST(V2ErrorReply, Draft04_7_2_VersionOneMessageGetsVersionOneLayout) {
  // §6.2.4 copies rdma_vers, so a version one peer gets an RDMA_ERROR /
  // ERR_VERS it can parse (RFC 8166 §4.2: proc 4, err 1, low, high).
  const Bytes v1 = Words({0x1234, 1, 32, 0, 0, 0, 0});
  V2Header reply = V2ErrorReplyFor(v1, DecodeV2(v1).error(), 1);
  EXPECT_EQ(EncodeV2(reply), Words({0x1234, 1, 1, 4, 1, 1, 2}));
}

// ---- §5.1.1 subset bit layout
// -----------------------------------------------------

TEST(V2Subset, Draft04_5_1_1_BitPositions) {
  struct Case {
    size_t index;
    PropSubset expected;
  };
  // Bit N mod 32 of word N div 32, bit 0 being the least significant.
  const Case cases[] = {
      {0, {0x00000001}},
      {31, {0x80000000}},
      {32, {0x00000000, 0x00000001}},
      {63, {0x00000000, 0x80000000}},
      {100, {0, 0, 0, 0x00000010}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.index);
    PropSubset s;
    SubsetAdd(s, c.index);
    EXPECT_EQ(s, c.expected);
    EXPECT_TRUE(SubsetContains(s, c.index));
    if (c.index > 0) {
      EXPECT_FALSE(SubsetContains(s, c.index - 1));
    }
    EXPECT_FALSE(SubsetContains(s, c.index + 1));
    // Words beyond the last are zero.
    EXPECT_FALSE(SubsetContains(s, c.index + 32 * 4));
  }
}

TEST(V2Subset, Draft04_5_1_1_AccumulatesAndTreatsMissingWordsAsZero) {
  PropSubset s;
  EXPECT_FALSE(SubsetContains(s, 0));
  EXPECT_FALSE(SubsetContains(s, 1000));
  for (size_t i : std::initializer_list<size_t>{0, 31, 32, 63, 100}) {
    SubsetAdd(s, i);
  }
  EXPECT_EQ(s, (PropSubset{0x80000001, 0x80000001, 0, 0x10}));
  SubsetAdd(s, 0);  // idempotent
  EXPECT_EQ(s[0], 0x80000001u);
  size_t members = 0;
  for (size_t i = 0; i < 200; ++i) members += SubsetContains(s, i) ? 1 : 0;
  EXPECT_EQ(members, 5u);
  // On the wire (rdma_nochg of CONNPROP).
  V2Header h;
  h.body = V2ConnProp{{}, s};
  EXPECT_EQ(EncodeV2(h), Cat({Hdr(0, 0, 6),
                              Words({0, 4, 0x80000001, 0x80000001, 0, 0x10})}));
}

// ---- Names, proc(), encoder
// --------------------------------------------------------

TEST(V2Names, Draft04_6_2_ProcErrorAndDirectionNames) {
  EXPECT_EQ(V2ProcName(V2Proc::kMsg), "RDMA2_MSG");
  EXPECT_EQ(V2ProcName(V2Proc::kNoMsg), "RDMA2_NOMSG");
  EXPECT_EQ(V2ProcName(V2Proc::kError), "RDMA2_ERROR");
  EXPECT_EQ(V2ProcName(V2Proc::kOptional), "RDMA2_OPTIONAL");
  EXPECT_EQ(V2ProcName(V2Proc::kConnProp), "RDMA2_CONNPROP");
  EXPECT_EQ(V2ProcName(V2Proc::kReqProp), "RDMA2_REQPROP");
  EXPECT_EQ(V2ProcName(V2Proc::kResProp), "RDMA2_RESPROP");
  EXPECT_EQ(V2ProcName(V2Proc::kUpdProp), "RDMA2_UPDPROP");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kVers), "RDMA2_ERR_VERS");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kBadXdr), "RDMA2_ERR_BAD_XDR");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kInvalidProc),
            "RDMA2_ERR_INVALID_PROC");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kReadChunks), "RDMA2_ERR_READ_CHUNKS");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kWriteChunks),
            "RDMA2_ERR_WRITE_CHUNKS");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kSegments), "RDMA2_ERR_SEGMENTS");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kWriteResource),
            "RDMA2_ERR_WRITE_RESOURCE");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kReplyResource),
            "RDMA2_ERR_REPLY_RESOURCE");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kInvalidOption),
            "RDMA2_ERR_INVALID_OPTION");
  EXPECT_EQ(V2ErrorCodeName(V2ErrorCode::kSystem), "RDMA2_ERR_SYSTEM");
  EXPECT_EQ(MsgDirectionName(MsgDirection::kCall), "CALL");
  EXPECT_EQ(MsgDirectionName(MsgDirection::kReply), "REPLY");
}

TEST(V2HeaderProc, Draft04_6_2_ProcFollowsBodyNotVariantIndex) {
  const std::pair<V2Body, uint32_t> cases[] = {
      {V2Msg{}, 0},      {V2NoMsg{}, 1},   {V2Error{}, 4},   {V2Optional{}, 5},
      {V2ConnProp{}, 6}, {V2ReqProp{}, 7}, {V2ResProp{}, 8}, {V2UpdProp{}, 9},
  };
  for (const auto& [body, number] : cases) {
    SCOPED_TRACE(number);
    V2Header h;
    h.body = body;
    EXPECT_EQ(static_cast<uint32_t>(h.proc()), number);
    EXPECT_EQ(h.chunks() != nullptr, number <= 1);
    // rdma_proc on the wire is octets 12..15.
    Bytes enc = EncodeV2(h);
    ASSERT_GE(enc.size(), 16u);
    EXPECT_EQ(Bytes(enc.begin() + 12, enc.begin() + 16), Words({number}));
  }
}

TEST(V2Encode, Draft04_6_2_RoundTripsAndSizes) {
  std::vector<V2Header> headers = {GoldenMsgAllListsHeader()};
  V2Header h;
  h.xid = 0xFFFFFFFF;
  h.credits = 0xFFFF;
  V2NoMsg n;
  n.chunks.direction = MsgDirection::kReply;
  n.chunks.lists.writes = {WriteChunk{}, WriteChunk{Segment{1, 2, 3}}};
  h.body = n;
  headers.push_back(h);
  V2Optional o;
  o.opttype = 0xFFFFFFFF;
  o.optinfo = Bytes(7, 0xA5);
  h.body = o;
  headers.push_back(h);
  V2ConnProp c;
  c.start = {MakeRbsizProperty(1 << 20), PropVal{0xFFFFFF00, Bytes(6, 1)},
             PropVal{kPropIdBrs, {}}};
  SubsetAdd(c.nochg, 40);
  h.body = c;
  headers.push_back(h);
  V2ResProp r;
  SubsetAdd(r.done, 1);
  SubsetAdd(r.rejected, 70);
  r.other = {PropVal{77, {9}}};
  h.body = r;
  headers.push_back(h);
  for (const V2Header& header : headers) {
    SCOPED_TRACE(V2ProcName(header.proc()));
    Bytes enc = EncodeV2(header);
    EXPECT_EQ(enc.size(), V2EncodedSize(header));
    EXPECT_EQ(enc.size() % 4, 0u);
    V2Decoded d = DecodeOk(enc);
    EXPECT_EQ(d.header, header);
    EXPECT_EQ(d.header_length, enc.size());
  }
}

TEST(V2Encode, Draft04_6_2_BufferTooSmall) {
  const V2Header h = GoldenMsgAllListsHeader();
  const size_t size = V2EncodedSize(h);
  Bytes buffer(size);
  absl::StatusOr<size_t> n = EncodeV2(h, absl::MakeSpan(buffer));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, size);
  EXPECT_EQ(buffer, GoldenMsgAllLists());
  for (size_t short_size : {size_t{0}, size_t{15}, size_t{16}, size - 1}) {
    Bytes small(short_size);
    absl::StatusOr<size_t> r = EncodeV2(h, absl::MakeSpan(small));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
        << short_size;
  }
}

TEST(V2Encode, Draft04_6_2_InexpressibleHeadersRejected) {
  V2Header h;
  V2Msg m;
  m.chunks.direction = static_cast<MsgDirection>(2);
  h.body = m;
  Bytes buffer(64);
  EXPECT_EQ(EncodeV2(h, absl::MakeSpan(buffer)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(EncodeV2(h), IsEmpty());
  V2Optional o;
  o.optdir = static_cast<MsgDirection>(7);
  h.body = o;
  EXPECT_EQ(EncodeV2(h, absl::MakeSpan(buffer)).status().code(),
            absl::StatusCode::kInvalidArgument);
  V2Error e;
  e.code = static_cast<V2ErrorCode>(11);
  h.body = e;
  EXPECT_EQ(EncodeV2(h, absl::MakeSpan(buffer)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(EncodeV2(h), IsEmpty());
}

}  // namespace
}  // namespace rpcrdma::wire
