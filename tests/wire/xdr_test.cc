// Tests for the XDR codec (RFC 4506) of <rpcrdma/xdr.h>, which every wire
// codec is built on.
#include "rpcrdma/xdr.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rpcrdma {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// RFC 4506 §3: every item occupies a multiple of four octets.
TEST(XdrPad, Rfc4506_3_PadsToMultipleOfFour) {
  EXPECT_EQ(XdrPad(0), 0u);
  EXPECT_EQ(XdrPad(1), 3u);
  EXPECT_EQ(XdrPad(2), 2u);
  EXPECT_EQ(XdrPad(3), 1u);
  EXPECT_EQ(XdrPad(4), 0u);
  EXPECT_EQ(XdrPad(5), 3u);
  EXPECT_EQ(XdrRoundUp(0), 0u);
  EXPECT_EQ(XdrRoundUp(1), 4u);
  EXPECT_EQ(XdrRoundUp(4), 4u);
  EXPECT_EQ(XdrRoundUp(7), 8u);
  EXPECT_EQ(XdrRoundUp(8), 8u);
  EXPECT_EQ(XdrRoundUp(4093), 4096u);
}

TEST(XdrBigEndian, Rfc4506_4_2_LoadAndStoreAreMostSignificantFirst) {
  const uint8_t bytes[] = {0xDE, 0xAD, 0xBE, 0xEF};
  EXPECT_EQ(LoadBigEndian32(bytes), 0xDEADBEEFu);
  uint8_t out[4] = {};
  StoreBigEndian32(out, 0x01020304u);
  EXPECT_THAT(out, ElementsAre(0x01, 0x02, 0x03, 0x04));
}

TEST(XdrReader, Rfc4506_4_2_ReadsUnsignedIntegerBigEndian) {
  const std::vector<uint8_t> data = {0x01, 0x02, 0x03, 0x04,
                                     0xFF, 0xFF, 0xFF, 0xFE};
  XdrReader r(data);
  uint32_t v = 0;
  ASSERT_TRUE(r.ReadUint32("first", &v).ok());
  EXPECT_EQ(v, 0x01020304u);
  EXPECT_EQ(r.offset(), 4u);
  EXPECT_EQ(r.remaining(), 4u);
  ASSERT_TRUE(r.ReadUint32("second", &v).ok());
  EXPECT_EQ(v, 0xFFFFFFFEu);
  EXPECT_EQ(r.offset(), 8u);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(r.rest().empty());
}

TEST(XdrReader, Rfc4506_4_2_TruncatedUnsignedIntegerAtEveryLength) {
  const std::vector<uint8_t> data = {0xAA, 0xBB, 0xCC, 0xDD};
  for (size_t n = 0; n < 4; ++n) {
    SCOPED_TRACE(n);
    XdrReader r(absl::MakeConstSpan(data.data(), n));
    uint32_t v = 0x5A5A5A5A;
    absl::Status st = r.ReadUint32("rdma_credit", &v);
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(Message(st), HasSubstr("rdma_credit"));
    EXPECT_THAT(Message(st), HasSubstr("offset 0"));
    EXPECT_EQ(v, 0x5A5A5A5Au) << "output written on failure";
    EXPECT_EQ(r.offset(), 0u) << "reader advanced on failure";
  }
}

TEST(XdrReader, Rfc4506_4_2_TruncationReportsOffsetOfField) {
  const std::vector<uint8_t> data = {0, 0, 0, 1, 0, 0};
  XdrReader r(data);
  uint32_t v = 0;
  ASSERT_TRUE(r.ReadUint32("a", &v).ok());
  absl::Status st = r.ReadUint32("b", &v);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(st), HasSubstr("truncated at b (offset 4)"));
  EXPECT_THAT(Message(st), HasSubstr("need 4 octets, 2 remain"));
  EXPECT_EQ(r.offset(), 4u);
}

TEST(XdrReader, Rfc4506_4_5_ReadsUnsignedHyperBigEndian) {
  const std::vector<uint8_t> data = {0x01, 0x02, 0x03, 0x04,
                                     0x05, 0x06, 0x07, 0x08};
  XdrReader r(data);
  uint64_t v = 0;
  ASSERT_TRUE(r.ReadUint64("rdma_offset", &v).ok());
  EXPECT_EQ(v, 0x0102030405060708ull);
  EXPECT_EQ(r.offset(), 8u);
}

TEST(XdrReader, Rfc4506_4_5_ReadsMaximumHyper) {
  const std::vector<uint8_t> data(8, 0xFF);
  XdrReader r(data);
  uint64_t v = 0;
  ASSERT_TRUE(r.ReadUint64("h", &v).ok());
  EXPECT_EQ(v, std::numeric_limits<uint64_t>::max());
}

TEST(XdrReader, Rfc4506_4_5_TruncatedHyperAtEveryLength) {
  const std::vector<uint8_t> data(8, 0x11);
  for (size_t n = 0; n < 8; ++n) {
    SCOPED_TRACE(n);
    XdrReader r(absl::MakeConstSpan(data.data(), n));
    uint64_t v = 7;
    absl::Status st = r.ReadUint64("rdma_offset", &v);
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(Message(st), HasSubstr("rdma_offset"));
    EXPECT_THAT(Message(st), HasSubstr("need 8 octets"));
    EXPECT_EQ(v, 7u);
    EXPECT_EQ(r.offset(), 0u);
  }
}

TEST(XdrReader, Rfc4506_4_4_BooleanZeroAndOne) {
  const std::vector<uint8_t> data = {0, 0, 0, 0, 0, 0, 0, 1};
  XdrReader r(data);
  bool b = true;
  ASSERT_TRUE(r.ReadBool("f", &b).ok());
  EXPECT_FALSE(b);
  ASSERT_TRUE(r.ReadBool("t", &b).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(r.offset(), 8u);
}

TEST(XdrReader, Rfc4506_4_4_BooleanOtherValuesAreRejected) {
  for (uint32_t bad :
       {2u, 3u, 7u, 0x100u, 0x01000000u, 0x80000000u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(bad);
    std::vector<uint8_t> data(4);
    StoreBigEndian32(data.data(), bad);
    XdrReader r(data);
    bool b = true;
    absl::Status st = r.ReadBool("reply chunk discriminant", &b);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(st), HasSubstr("bad boolean"));
    EXPECT_THAT(Message(st), HasSubstr("reply chunk discriminant"));
    EXPECT_TRUE(b) << "output written on failure";
    EXPECT_EQ(r.offset(), 0u);
  }
}

TEST(XdrReader, Rfc4506_4_4_TruncatedBoolean) {
  const std::vector<uint8_t> data = {0, 0, 0};
  XdrReader r(data);
  bool b = false;
  absl::Status st = r.ReadBool("follows", &b);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(st), HasSubstr("follows"));
  EXPECT_EQ(r.offset(), 0u);
}

TEST(XdrReader, Rfc4506_4_9_FixedOpaqueSkipsPadding) {
  const std::vector<uint8_t> data = {'a', 'b', 'c', 'd', 'e', 0, 0, 0, 0x42};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadFixedOpaque("o", 5, &out).ok());
  EXPECT_THAT(out, ElementsAre('a', 'b', 'c', 'd', 'e'));
  EXPECT_EQ(out.data(), data.data()) << "opaque should alias the input";
  EXPECT_EQ(r.offset(), 8u);
  EXPECT_THAT(r.rest(), ElementsAre(0x42));
}

TEST(XdrReader, Rfc4506_4_9_FixedOpaqueOfMultipleOfFourHasNoPadding) {
  const std::vector<uint8_t> data = {1, 2, 3, 4, 5};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadFixedOpaque("o", 4, &out).ok());
  EXPECT_THAT(out, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(r.offset(), 4u);
}

TEST(XdrReader, Rfc4506_4_9_ZeroLengthFixedOpaque) {
  const std::vector<uint8_t> data;
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadFixedOpaque("o", 0, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.offset(), 0u);
}

TEST(XdrReader, Rfc4506_4_9_PaddingContentIsNotChecked) {
  const std::vector<uint8_t> data = {'x', 0xFF, 0xEE, 0xDD};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadFixedOpaque("o", 1, &out).ok());
  EXPECT_THAT(out, ElementsAre('x'));
  EXPECT_EQ(r.offset(), 4u);
}

TEST(XdrReader, Rfc4506_4_9_MissingPaddingIsTruncation) {
  // Five data octets present, but the three padding octets are not.
  const std::vector<uint8_t> data = {1, 2, 3, 4, 5, 0, 0};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  absl::Status st = r.ReadFixedOpaque("verifier", 5, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(st), HasSubstr("verifier"));
  EXPECT_THAT(Message(st), HasSubstr("need 8 octets, 7 remain"));
  EXPECT_EQ(r.offset(), 0u);
}

TEST(XdrReader, Rfc4506_4_9_HugeFixedLengthDoesNotWrap) {
  const std::vector<uint8_t> data(16, 0);
  const size_t max = std::numeric_limits<size_t>::max();
  for (size_t length : {max, max - 1, max - 2, max - 3}) {
    SCOPED_TRACE(length);
    XdrReader r(data);
    absl::Span<const uint8_t> out;
    absl::Status st = r.ReadFixedOpaque("o", length, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(r.offset(), 0u);
    EXPECT_TRUE(out.empty());
  }
}

TEST(XdrReader, Rfc4506_4_10_VariableOpaque) {
  const std::vector<uint8_t> data = {0, 0, 0, 3, 'a', 'b', 'c', 0, 9};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadVarOpaque("name", 16, &out).ok());
  EXPECT_THAT(out, ElementsAre('a', 'b', 'c'));
  EXPECT_EQ(out.data(), data.data() + 4);
  EXPECT_EQ(r.offset(), 8u);
  EXPECT_EQ(r.remaining(), 1u);
}

TEST(XdrReader, Rfc4506_4_10_EmptyVariableOpaque) {
  const std::vector<uint8_t> data = {0, 0, 0, 0};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadVarOpaque("name", 0, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r.offset(), 4u);
}

TEST(XdrReader, Rfc4506_4_10_LengthEqualToLimitIsAccepted) {
  const std::vector<uint8_t> data = {0, 0, 0, 4, 1, 2, 3, 4};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(r.ReadVarOpaque("o", 4, &out).ok());
  EXPECT_THAT(out, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(r.offset(), 8u);
}

TEST(XdrReader, Rfc4506_4_10_LengthAboveLimitIsInvalidArgument) {
  const std::vector<uint8_t> data = {0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  absl::Status st = r.ReadVarOpaque("property value", 4, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(st), HasSubstr("length 5 of property value"));
  EXPECT_THAT(Message(st), HasSubstr("limit of 4"));
  EXPECT_EQ(r.offset(), 0u);
}

TEST(XdrReader, Rfc4506_4_10_HugeLengthIsTruncationWithoutAllocating) {
  const std::vector<uint8_t> data = {0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4};
  XdrReader r(data);
  absl::Span<const uint8_t> out;
  absl::Status st =
      r.ReadVarOpaque("o", std::numeric_limits<uint32_t>::max(), &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(st), HasSubstr("length 4294967295"));
  EXPECT_EQ(r.offset(), 0u);
}

TEST(XdrReader, Rfc4506_4_10_TruncatedAtEveryLength) {
  // length 5, data "hello", three octets of padding: 12 octets in all.
  const std::vector<uint8_t> data = {0,   0,   0,   5, 'h', 'e',
                                     'l', 'l', 'o', 0, 0,   0};
  for (size_t n = 0; n < data.size(); ++n) {
    SCOPED_TRACE(n);
    XdrReader r(absl::MakeConstSpan(data.data(), n));
    absl::Span<const uint8_t> out;
    absl::Status st = r.ReadVarOpaque("greeting", 64, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(Message(st), HasSubstr("greeting"));
    EXPECT_EQ(r.offset(), 0u);
  }
  XdrReader whole(data);
  absl::Span<const uint8_t> out;
  ASSERT_TRUE(whole.ReadVarOpaque("greeting", 64, &out).ok());
  EXPECT_EQ(std::string(out.begin(), out.end()), "hello");
  EXPECT_EQ(whole.offset(), 12u);
}

TEST(XdrReader, ReadsAfterAFailureResumeAtTheSameOffset) {
  const std::vector<uint8_t> data = {0, 0, 0, 2, 0, 0, 0, 1};
  XdrReader r(data);
  bool b = false;
  EXPECT_FALSE(r.ReadBool("b", &b).ok());
  uint32_t v = 0;
  ASSERT_TRUE(r.ReadUint32("v", &v).ok());
  EXPECT_EQ(v, 2u);
  ASSERT_TRUE(r.ReadBool("b", &b).ok());
  EXPECT_TRUE(b);
}

TEST(XdrWriter, Rfc4506_4_2_WritesUnsignedIntegerBigEndian) {
  std::vector<uint8_t> buf(8, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  ASSERT_TRUE(w.WriteUint32("a", 0x01020304u).ok());
  ASSERT_TRUE(w.WriteUint32("b", 0xFFFFFFFFu).ok());
  EXPECT_EQ(w.offset(), 8u);
  EXPECT_THAT(buf, ElementsAre(1, 2, 3, 4, 0xFF, 0xFF, 0xFF, 0xFF));
  EXPECT_THAT(w.written(), ElementsAreArray(buf));
}

TEST(XdrWriter, Rfc4506_4_5_WritesUnsignedHyperBigEndian) {
  std::vector<uint8_t> buf(8);
  XdrWriter w(absl::MakeSpan(buf));
  ASSERT_TRUE(w.WriteUint64("h", 0x0102030405060708ull).ok());
  EXPECT_THAT(buf, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(w.offset(), 8u);
}

TEST(XdrWriter, Rfc4506_4_4_WritesBooleansAsZeroAndOne) {
  std::vector<uint8_t> buf(8, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  ASSERT_TRUE(w.WriteBool("t", true).ok());
  ASSERT_TRUE(w.WriteBool("f", false).ok());
  EXPECT_THAT(buf, ElementsAre(0, 0, 0, 1, 0, 0, 0, 0));
}

TEST(XdrWriter, Rfc4506_4_9_FixedOpaqueIsZeroPadded) {
  std::vector<uint8_t> buf(12, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  const uint8_t data[] = {9, 8, 7, 6, 5};
  ASSERT_TRUE(w.WriteFixedOpaque("o", data).ok());
  EXPECT_EQ(w.offset(), 8u);
  EXPECT_THAT(buf, ElementsAre(9, 8, 7, 6, 5, 0, 0, 0, 0xAA, 0xAA, 0xAA, 0xAA));
}

TEST(XdrWriter, Rfc4506_4_9_EmptyFixedOpaqueWritesNothing) {
  std::vector<uint8_t> buf(4, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  ASSERT_TRUE(w.WriteFixedOpaque("o", {}).ok());
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(buf, Each(0xAA));
}

TEST(XdrWriter, Rfc4506_4_10_VariableOpaqueHasLengthAndZeroPadding) {
  std::vector<uint8_t> buf(12, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  const uint8_t data[] = {'x', 'y'};
  ASSERT_TRUE(w.WriteVarOpaque("o", data).ok());
  EXPECT_EQ(w.offset(), 8u);
  EXPECT_THAT(buf,
              ElementsAre(0, 0, 0, 2, 'x', 'y', 0, 0, 0xAA, 0xAA, 0xAA, 0xAA));
}

TEST(XdrWriter, Rfc4506_4_10_EmptyVariableOpaqueIsJustTheLength) {
  std::vector<uint8_t> buf(4, 0xAA);
  XdrWriter w(absl::MakeSpan(buf));
  ASSERT_TRUE(w.WriteVarOpaque("o", {}).ok());
  EXPECT_THAT(buf, ElementsAre(0, 0, 0, 0));
}

TEST(XdrWriter, OverflowFailsAndLeavesPrefixIntact) {
  std::vector<uint8_t> backing(10, 0xEE);
  XdrWriter w(absl::MakeSpan(backing.data(), 6));
  ASSERT_TRUE(w.WriteUint32("rdma_xid", 0x11223344u).ok());
  absl::Status st = w.WriteUint32("rdma_vers", 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(st), HasSubstr("rdma_vers"));
  EXPECT_THAT(Message(st), HasSubstr("offset 4"));
  EXPECT_THAT(Message(st), HasSubstr("need 4 octets, buffer has 2"));
  EXPECT_EQ(w.offset(), 4u);
  EXPECT_THAT(w.written(), ElementsAre(0x11, 0x22, 0x33, 0x44));
  EXPECT_THAT(backing, ElementsAre(0x11, 0x22, 0x33, 0x44, 0xEE, 0xEE, 0xEE,
                                   0xEE, 0xEE, 0xEE));
}

TEST(XdrWriter, HyperOverflowWritesNothing) {
  std::vector<uint8_t> backing(8, 0xEE);
  XdrWriter w(absl::MakeSpan(backing.data(), 7));
  absl::Status st = w.WriteUint64("rdma_offset", 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(backing, Each(0xEE));
}

TEST(XdrWriter, BoolOverflowWritesNothing) {
  std::vector<uint8_t> backing(4, 0xEE);
  XdrWriter w(absl::MakeSpan(backing.data(), 3));
  EXPECT_EQ(w.WriteBool("b", true).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(backing, Each(0xEE));
}

TEST(XdrWriter, FixedOpaqueWhosePaddingDoesNotFitWritesNothing) {
  std::vector<uint8_t> backing(8, 0xEE);
  XdrWriter w(absl::MakeSpan(backing.data(), 6));
  const uint8_t data[] = {1, 2, 3, 4, 5};
  EXPECT_EQ(w.WriteFixedOpaque("o", data).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(backing, Each(0xEE));
}

TEST(XdrWriter, VariableOpaqueThatDoesNotFitWritesNotEvenTheLength) {
  std::vector<uint8_t> backing(12, 0xEE);
  XdrWriter w(absl::MakeSpan(backing.data(), 7));
  const uint8_t data[] = {1, 2, 3, 4};
  EXPECT_EQ(w.WriteVarOpaque("o", data).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(backing, Each(0xEE));
}

TEST(XdrWriter, ZeroSizedBufferRejectsEveryWrite) {
  uint8_t backing[4] = {0xEE, 0xEE, 0xEE, 0xEE};
  XdrWriter w(absl::MakeSpan(backing, 0));
  EXPECT_EQ(w.WriteUint32("a", 0).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.WriteUint64("b", 0).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.WriteBool("c", false).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(w.WriteVarOpaque("d", {}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(w.WriteFixedOpaque("e", {}).ok());
  EXPECT_EQ(w.offset(), 0u);
  EXPECT_THAT(backing, Each(0xEE));
}

TEST(XdrRoundTrip, Rfc4506_4_WriterOutputReadsBack) {
  std::vector<uint8_t> buf(64);
  XdrWriter w(absl::MakeSpan(buf));
  const uint8_t fixed[] = {0xA, 0xB, 0xC};
  const uint8_t var[] = {'r', 'd', 'm', 'a', '!'};
  ASSERT_TRUE(w.WriteUint32("u", 0xCAFEBABEu).ok());
  ASSERT_TRUE(w.WriteUint64("h", 0xFEDCBA9876543210ull).ok());
  ASSERT_TRUE(w.WriteBool("b", true).ok());
  ASSERT_TRUE(w.WriteFixedOpaque("f", fixed).ok());
  ASSERT_TRUE(w.WriteVarOpaque("v", var).ok());
  EXPECT_EQ(w.offset(), 4u + 8u + 4u + 4u + 4u + 8u);

  XdrReader r(w.written());
  uint32_t u = 0;
  uint64_t h = 0;
  bool b = false;
  absl::Span<const uint8_t> f, v;
  ASSERT_TRUE(r.ReadUint32("u", &u).ok());
  ASSERT_TRUE(r.ReadUint64("h", &h).ok());
  ASSERT_TRUE(r.ReadBool("b", &b).ok());
  ASSERT_TRUE(r.ReadFixedOpaque("f", 3, &f).ok());
  ASSERT_TRUE(r.ReadVarOpaque("v", 5, &v).ok());
  EXPECT_EQ(u, 0xCAFEBABEu);
  EXPECT_EQ(h, 0xFEDCBA9876543210ull);
  EXPECT_TRUE(b);
  EXPECT_THAT(f, ElementsAreArray(fixed));
  EXPECT_THAT(v, ElementsAreArray(var));
  EXPECT_EQ(r.remaining(), 0u);
}

// RFC 4506 §4.1: a two's complement integer, big-endian.
TEST(XdrReader, Rfc4506_4_1_ReadsSignedInteger) {
  const uint8_t data[] = {0xff, 0xff, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x07};
  XdrReader r(data);
  int32_t a = 0, b = 0;
  ASSERT_TRUE(r.ReadInt32("a", &a).ok());
  ASSERT_TRUE(r.ReadInt32("b", &b).ok());
  EXPECT_EQ(a, -2);
  EXPECT_EQ(b, 7);
  absl::Status s = r.ReadInt32("c", &a);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(s), HasSubstr("c (offset 8)"));
}

TEST(XdrWriter, Rfc4506_4_1_WritesSignedIntegerAsTwosComplement) {
  std::vector<uint8_t> out;
  XdrWriter w(&out);
  ASSERT_TRUE(w.WriteInt32("a", -2).ok());
  EXPECT_THAT(out, ElementsAre(0xff, 0xff, 0xff, 0xfe));
}

// RFC 4506 §4.11: a string is a variable-length opaque of its octets.
TEST(XdrReader, Rfc4506_4_11_ReadsStringWithinItsLimit) {
  const uint8_t data[] = {0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o', 0,
                          0, 0, 0, 0, 0,   3,   'b', 'i', 'g', 0};
  XdrReader r(data);
  std::string text;
  ASSERT_TRUE(r.ReadString("greeting", 5, &text).ok());
  EXPECT_EQ(text, "hello");
  absl::Status s = r.ReadString("name", 2, &text);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("name (offset 12)"));
  EXPECT_EQ(text, "hello");  // unchanged on failure
  EXPECT_EQ(r.offset(), 12u);
}

TEST(XdrWriter, Rfc4506_4_11_StringRoundTrips) {
  std::vector<uint8_t> out;
  XdrWriter w(&out);
  ASSERT_TRUE(w.WriteString("key", "greeting!").ok());
  EXPECT_THAT(out, ElementsAre(0, 0, 0, 9, 'g', 'r', 'e', 'e', 't', 'i', 'n',
                               'g', '!', 0, 0, 0));
  XdrReader r(out);
  std::string text;
  ASSERT_TRUE(r.ReadString("key", 255, &text).ok());
  EXPECT_EQ(text, "greeting!");
  EXPECT_EQ(r.remaining(), 0u);
}

// The appending form grows its vector and writes the same octets as the
// fixed form.
TEST(XdrWriter, AppendingFormWritesWhatTheFixedFormWrites) {
  const uint8_t opaque[] = {1, 2, 3, 4, 5};
  std::vector<uint8_t> fixed(4 + 8 + 4 + 4 + 8 + 8);
  XdrWriter f(absl::MakeSpan(fixed));
  ASSERT_TRUE(f.WriteUint32("u", 0x01020304).ok());
  ASSERT_TRUE(f.WriteUint64("h", 0x1122334455667788).ok());
  ASSERT_TRUE(f.WriteBool("b", true).ok());
  ASSERT_TRUE(f.WriteVarOpaque("v", opaque).ok());
  ASSERT_TRUE(f.WriteFixedOpaque("x", opaque).ok());
  ASSERT_EQ(f.offset(), fixed.size());

  std::vector<uint8_t> grown = {0xaa};  // kept: the writer appends after it
  XdrWriter a(&grown);
  ASSERT_TRUE(a.WriteUint32("u", 0x01020304).ok());
  ASSERT_TRUE(a.WriteUint64("h", 0x1122334455667788).ok());
  ASSERT_TRUE(a.WriteBool("b", true).ok());
  ASSERT_TRUE(a.WriteVarOpaque("v", opaque).ok());
  ASSERT_TRUE(a.WriteFixedOpaque("x", opaque).ok());
  EXPECT_EQ(a.offset(), fixed.size());
  EXPECT_EQ(grown.size(), 1 + fixed.size());
  EXPECT_EQ(grown[0], 0xaa);
  EXPECT_THAT(a.written(), ElementsAreArray(fixed));
}

// Octets the caller appends between writes stay; the next item follows
// them.
TEST(XdrWriter, AppendingFormWritesAtTheVectorsEnd) {
  std::vector<uint8_t> out;
  XdrWriter w(&out);
  ASSERT_TRUE(w.WriteUint32("a", 1).ok());
  out.insert(out.end(), {9, 9, 9, 9});
  ASSERT_TRUE(w.WriteUint32("b", 2).ok());
  EXPECT_THAT(out, ElementsAre(0, 0, 0, 1, 9, 9, 9, 9, 0, 0, 0, 2));
  EXPECT_EQ(w.offset(), 12u);
}

}  // namespace
}  // namespace rpcrdma
