// The version two header codec against malformed input
// (draft-cel-nfsv4-rpcrdma-version-two-04): property values of §5.1.1 and
// §5.2, absurd counts, wrong versions and procedures, truncation at every
// offset.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"
#include "tests/wire/v2_test_util.h"

namespace rpcrdma::test {

using wire::BackwardRequestSupport;
using wire::ChunkLimits;
using wire::DecodeError;
using wire::DecodeErrorKind;
using wire::DecodeResult;
using wire::DecodeV2;
using wire::InterpretProperties;
using wire::kDefaultBrs;
using wire::kDefaultRbsiz;
using wire::KnownProperties;
using wire::kPropIdBrs;
using wire::kPropIdRbsiz;
using wire::MakeRbsizProperty;
using wire::PropSet;
using wire::PropVal;
using wire::V2Decoded;
using wire::V2Limits;
using wire::V2ReqProp;
using wire::V2UpdProp;

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

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
    StoreBigEndian32(full.data() + 4, vers);
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

}  // namespace
}  // namespace rpcrdma::test
