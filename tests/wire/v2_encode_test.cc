// The version two header codec's output
// (draft-cel-nfsv4-rpcrdma-version-two-04): the error replies of §6.2.4, the
// subset bit layout of §5.1.1, names, and the encoder's round trips and
// refusals.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/wire/v2.h"
#include "tests/wire/v2_test_util.h"

namespace rpcrdma::test {

using wire::DecodeError;
using wire::DecodeErrorKind;
using wire::DecodeResult;
using wire::DecodeV2;
using wire::kPropIdBrs;
using wire::MakeRbsizProperty;
using wire::MsgDirection;
using wire::PropSubset;
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
}  // namespace rpcrdma::test
