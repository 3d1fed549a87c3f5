// Tests of the RPC-over-RDMA version two header codec against
// draft-cel-nfsv4-rpcrdma-version-two-04 (golden octets in
// v2_test_util.h): each message kind of §6.2 and the property operations of
// §5.3 decoded from golden octets.
#include "plugin/wire/v2.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wire/v2_test_util.h"

namespace rpcrdma::test {

using wire::BackwardRequestSupport;
using wire::ChunkLists;
using wire::DecodeError;
using wire::DecodeErrorKind;
using wire::DecodeResult;
using wire::InterpretProperties;
using wire::KnownProperties;
using wire::MakeRbsizProperty;
using wire::MsgDirection;
using wire::PropSet;
using wire::PropVal;
using wire::Segment;
using wire::SubsetAdd;
using wire::SubsetContains;
using wire::V2Body;
using wire::V2ConnProp;
using wire::V2Decoded;
using wire::V2Error;
using wire::V2ErrorCode;
using wire::V2Header;
using wire::V2Limits;
using wire::V2Msg;
using wire::V2NoMsg;
using wire::V2Optional;
using wire::V2Proc;
using wire::V2ReqProp;
using wire::V2ResProp;
using wire::V2UpdProp;
using wire::WriteChunk;

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

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

}  // namespace
}  // namespace rpcrdma::test
