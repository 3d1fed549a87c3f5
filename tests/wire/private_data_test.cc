// Tests for the RFC 8797 CM private data codec. Golden octets are written by
// hand from the §4 diagram:
//
//   octets 0..3  Format Identifier 0xf6ab0e18, network order
//   octet  4     Version (1)
//   octet  5     Reserved (7 bits) | R (least significant bit, bit 15)
//   octet  6     Send Size    (octets / 1024 - 1)
//   octet  7     Receive Size (octets / 1024 - 1)
#include "plugin/wire/private_data.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rpcrdma::wire {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

// rdma-cm pads private data to the CM message size: 56 octets in a connect
// request, 196 in a connect reply (InfiniBand and RoCE).
constexpr size_t kConnectRequestPrivateData = 56;
constexpr size_t kConnectReplyPrivateData = 196;

PrivateData Make(bool r, uint32_t send, uint32_t receive) {
  PrivateData d;
  d.remote_invalidation = r;
  d.send_size = send;
  d.receive_size = receive;
  return d;
}

// A buffer of `size` octets filled with `fill`, with `message` copied in at
// `offset` (clipped at the end of the buffer).
std::vector<uint8_t> Padded(size_t size, uint8_t fill, size_t offset,
                            const std::vector<uint8_t>& message) {
  std::vector<uint8_t> buf(size, fill);
  for (size_t i = 0; i < message.size() && offset + i < size; ++i) {
    buf[offset + i] = message[i];
  }
  return buf;
}

// Pseudo-random filler that never contains the octet 0xf6, so it cannot
// contain the Format Identifier by chance.
std::vector<uint8_t> Garbage(size_t size) {
  std::vector<uint8_t> buf(size);
  uint32_t x = 0x12345678;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1103515245u + 12345u;
    uint8_t b = static_cast<uint8_t>(x >> 16);
    buf[i] = b == 0xf6 ? 0x00 : b;
  }
  return buf;
}

// Hand-written §4 message: R set, Send Size 4096 (3), Receive Size 8192 (7).
const std::vector<uint8_t> kGolden = {0xf6, 0xab, 0x0e, 0x18,
                                      0x01, 0x01, 0x03, 0x07};
const PrivateData kGoldenDecoded = Make(true, 4096, 8192);

// ---------------------------------------------------------------- encoding

TEST(PrivateDataEncode, Rfc8797_4_GoldenOctetsRSetAsymmetricSizes) {
  auto encoded = EncodePrivateData(kGoldenDecoded);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_THAT(*encoded,
              ElementsAre(0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x07));
}

TEST(PrivateDataEncode, Rfc8797_4_GoldenOctetsRClearMinAndMaxSizes) {
  auto encoded = EncodePrivateData(Make(false, 1024, 262144));
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_THAT(*encoded,
              ElementsAre(0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x00, 0xff));
}

TEST(PrivateDataEncode, Rfc8797_4_RIsLowBitReservedBitsZero) {
  // Only bit 15 (the least significant bit of octet 5) may be set by a
  // sender; the seven Reserved bits MUST be zero.
  auto with_r = EncodePrivateData(Make(true, 1024, 1024));
  auto without_r = EncodePrivateData(Make(false, 1024, 1024));
  ASSERT_TRUE(with_r.ok());
  ASSERT_TRUE(without_r.ok());
  EXPECT_EQ((*with_r)[5], 0x01);
  EXPECT_EQ((*without_r)[5], 0x00);
}

TEST(PrivateDataEncode, Rfc8797_4_2_RoundsDownNonMultiplesOf1024) {
  auto a = EncodePrivateData(Make(false, 4097, 2047));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)[6], 3);  // 4097 -> 4096
  EXPECT_EQ((*a)[7], 0);  // 2047 -> 1024
  auto b = EncodePrivateData(Make(false, 262143, 5119));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[6], 254);  // 262143 -> 261120
  EXPECT_EQ((*b)[7], 3);    // 5119 -> 4096
}

TEST(PrivateDataEncode, Rfc8797_4_2_SizeRangeErrors) {
  struct Case {
    uint32_t send;
    uint32_t receive;
    const char* field;
  };
  const Case cases[] = {
      {0, 1024, "send size"},         {1023, 1024, "send size"},
      {262145, 1024, "send size"},    {0xffffffffu, 1024, "send size"},
      {1024, 0, "receive size"},      {1024, 1023, "receive size"},
      {1024, 262145, "receive size"}, {1024, 0xffffffffu, "receive size"},
      {263168, 263168, "send size"},  // (256 + 1) * 1024
  };
  for (const Case& c : cases) {
    auto encoded = EncodePrivateData(Make(false, c.send, c.receive));
    ASSERT_FALSE(encoded.ok()) << c.send << " " << c.receive;
    EXPECT_EQ(encoded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(encoded.status().message()), HasSubstr(c.field));
  }
}

TEST(PrivateDataEncode, Rfc8797_4_2_EveryEncodedValueRoundTrips) {
  for (uint32_t v = 0; v <= 255; ++v) {
    const uint32_t size = (v + 1) * 1024;
    auto encoded = EncodePrivateData(Make(v % 2 == 0, size, 263168 - size));
    ASSERT_TRUE(encoded.ok()) << size;
    EXPECT_EQ((*encoded)[6], v);
    EXPECT_EQ((*encoded)[7], 255 - v);
    std::vector<uint8_t> bytes(encoded->begin(), encoded->end());
    EXPECT_THAT(FindPrivateData(bytes),
                Optional(Make(v % 2 == 0, size, 263168 - size)));
  }
}

// ---------------------------------------------------------------- decoding

TEST(PrivateDataFind, Rfc8797_4_DecodesGoldenOctets) {
  EXPECT_THAT(FindPrivateData(kGolden), Optional(kGoldenDecoded));
}

TEST(PrivateDataFind, Rfc8797_4_2_MinimumAndMaximumSizeValues) {
  // Value 0 -> 1024 octets, value 255 -> 262144 octets.
  std::vector<uint8_t> min_max = {0xf6, 0xab, 0x0e, 0x18,
                                  0x01, 0x00, 0x00, 0xff};
  EXPECT_THAT(FindPrivateData(min_max), Optional(Make(false, 1024, 262144)));
  std::vector<uint8_t> max_min = {0xf6, 0xab, 0x0e, 0x18,
                                  0x01, 0x00, 0xff, 0x00};
  EXPECT_THAT(FindPrivateData(max_min), Optional(Make(false, 262144, 1024)));
}

TEST(PrivateDataFind, Rfc8797_5_2_AnyOffsetInZeroPaddedCmBuffers) {
  for (size_t size : {kConnectRequestPrivateData, kConnectReplyPrivateData}) {
    for (size_t offset : {0u, 1u, 2u, 3u, 5u, 17u}) {
      auto buf = Padded(size, 0x00, offset, kGolden);
      EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded))
          << "size " << size << " offset " << offset;
    }
    // Flush against the end of the buffer.
    auto at_end = Padded(size, 0x00, size - 8, kGolden);
    EXPECT_THAT(FindPrivateData(at_end), Optional(kGoldenDecoded));
  }
}

TEST(PrivateDataFind, Rfc8797_5_2_AnyOffsetInGarbagePaddedCmBuffers) {
  for (size_t size : {kConnectRequestPrivateData, kConnectReplyPrivateData}) {
    for (size_t offset : {0u, 1u, 2u, 3u, 5u, 17u}) {
      auto buf = Garbage(size);
      for (size_t i = 0; i < kGolden.size(); ++i) buf[offset + i] = kGolden[i];
      EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded))
          << "size " << size << " offset " << offset;
    }
  }
}

TEST(PrivateDataFind, Rfc8797_5_2_AbsentIdentifierIsNotFound) {
  EXPECT_EQ(FindPrivateData({}), std::nullopt);
  EXPECT_EQ(FindPrivateData(std::vector<uint8_t>(56, 0)), std::nullopt);
  EXPECT_EQ(FindPrivateData(Garbage(kConnectReplyPrivateData)), std::nullopt);
  // The identifier in host (little-endian) order is not the identifier.
  std::vector<uint8_t> swapped = {0x18, 0x0e, 0xab, 0xf6,
                                  0x01, 0x01, 0x03, 0x07};
  EXPECT_EQ(FindPrivateData(swapped), std::nullopt);
  // One octet of the identifier wrong.
  std::vector<uint8_t> near_miss = {0xf6, 0xab, 0x0e, 0x19,
                                    0x01, 0x01, 0x03, 0x07};
  EXPECT_EQ(FindPrivateData(near_miss), std::nullopt);
}

TEST(PrivateDataFind, Rfc8797_5_2_TruncatedAtEndOfBufferIsNotFound) {
  // The identifier (and perhaps part of the rest) ends the buffer: the
  // eight octets would overrun it.
  for (size_t kept = 1; kept < 8; ++kept) {
    std::vector<uint8_t> buf(20, 0);
    buf.insert(buf.end(), kGolden.begin(), kGolden.begin() + kept);
    EXPECT_EQ(FindPrivateData(buf), std::nullopt) << "kept " << kept;
    // Also in a buffer that is exactly the truncated message.
    std::vector<uint8_t> bare(kGolden.begin(), kGolden.begin() + kept);
    EXPECT_EQ(FindPrivateData(bare), std::nullopt) << "kept " << kept;
  }
  // The whole identifier, version and flags in a 56-octet buffer whose last
  // two octets would be the sizes: truncated.
  auto buf = Padded(kConnectRequestPrivateData, 0, 50, kGolden);
  EXPECT_EQ(FindPrivateData(buf), std::nullopt);
}

TEST(PrivateDataFind, Rfc8797_5_2_BadVersionIsNotFound) {
  for (int version : {0x00, 0x02, 0x80, 0xff}) {
    std::vector<uint8_t> buf = kGolden;
    buf[4] = static_cast<uint8_t>(version);
    EXPECT_EQ(FindPrivateData(buf), std::nullopt) << version;
    EXPECT_EQ(PrivateDataOrDefault(buf), PrivateData{});
  }
}

TEST(PrivateDataFind, Rfc8797_5_2_BadVersionThenValidCopyFindsValidCopy) {
  // A first occurrence with version 2 (for example a future format, §6, or
  // another layer's data that contains the identifier by chance) does not
  // hide a valid version-one copy later in the buffer.
  std::vector<uint8_t> buf(kConnectReplyPrivateData, 0);
  const std::vector<uint8_t> v2 = {0xf6, 0xab, 0x0e, 0x18,
                                   0x02, 0x00, 0x0f, 0x0f};
  for (size_t i = 0; i < v2.size(); ++i) buf[3 + i] = v2[i];
  for (size_t i = 0; i < kGolden.size(); ++i) buf[41 + i] = kGolden[i];
  EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded));
}

TEST(PrivateDataFind, Rfc8797_5_2_OverlappingFalseStartThenValidCopy) {
  // An identifier followed immediately by another identifier: the first
  // one's "version" octet is 0xf6, so it is skipped, and the second one,
  // four octets later, is the message.
  std::vector<uint8_t> buf = {0xf6, 0xab, 0x0e, 0x18};
  buf.insert(buf.end(), kGolden.begin(), kGolden.end());
  EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded));
}

TEST(PrivateDataFind, Rfc8797_5_2_FirstValidCopyWins) {
  std::vector<uint8_t> buf(kConnectRequestPrivateData, 0);
  const std::vector<uint8_t> other = {0xf6, 0xab, 0x0e, 0x18,
                                      0x01, 0x00, 0x00, 0x00};
  for (size_t i = 0; i < kGolden.size(); ++i) buf[9 + i] = kGolden[i];
  for (size_t i = 0; i < other.size(); ++i) buf[30 + i] = other[i];
  EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded));
}

TEST(PrivateDataFind, Rfc8797_4_ReservedBitsAreIgnored) {
  struct Case {
    uint8_t flags;
    bool r;
  };
  // R is the least significant bit of octet 5; 0x80 is a Reserved bit, not R.
  const Case cases[] = {{0x00, false}, {0x01, true}, {0x80, false},
                        {0xfe, false}, {0xff, true}, {0x02, false},
                        {0x81, true}};
  for (const Case& c : cases) {
    std::vector<uint8_t> buf = kGolden;
    buf[5] = c.flags;
    EXPECT_THAT(FindPrivateData(buf), Optional(Make(c.r, 4096, 8192)))
        << "flags " << int{c.flags};
  }
}

TEST(PrivateDataFind, Rfc8797_6_TrailingOctetsAfterTheEightAreIgnored) {
  // A future extension adds fields starting at byte eight (§6); a version-one
  // receiver reads only the first eight.
  std::vector<uint8_t> buf = kGolden;
  buf.insert(buf.end(), {0xde, 0xad, 0xbe, 0xef});
  EXPECT_THAT(FindPrivateData(buf), Optional(kGoldenDecoded));
}

// ------------------------------------------------------------ §5.1 default

TEST(PrivateDataOrDefault, Rfc8797_5_1_AbsentMeansRClearAnd1024) {
  const PrivateData d = PrivateDataOrDefault({});
  EXPECT_FALSE(d.remote_invalidation);
  EXPECT_EQ(d.send_size, 1024u);
  EXPECT_EQ(d.receive_size, 1024u);
  // A CM-padded buffer with no identifier (a peer that does not implement
  // RFC 8797 sends zeros).
  EXPECT_EQ(PrivateDataOrDefault(std::vector<uint8_t>(196, 0)),
            Make(false, 1024, 1024));
}

TEST(PrivateDataOrDefault, Rfc8797_5_1_PresentIsDecoded) {
  auto buf = Padded(kConnectRequestPrivateData, 0, 2, kGolden);
  EXPECT_EQ(PrivateDataOrDefault(buf), kGoldenDecoded);
}

// ------------------------------------------------------------- negotiation

TEST(NegotiateInline, Rfc8797_4_2_EqualSizesBothR) {
  const PrivateData local = Make(true, 4096, 4096);
  const PrivateData peer = Make(true, 4096, 4096);
  InlineThresholds t = NegotiateInline(local, peer);
  EXPECT_EQ(t.send, 4096u);
  EXPECT_EQ(t.receive, 4096u);
  EXPECT_TRUE(t.remote_invalidation);
}

TEST(NegotiateInline, Rfc8797_4_2_SendIsMinOfOwnSendAndPeerReceive) {
  // Client sends up to 8192 and receives up to 4096; server sends up to 2048
  // and receives up to 16384.
  const PrivateData client = Make(false, 8192, 4096);
  const PrivateData server = Make(false, 2048, 16384);
  InlineThresholds c = NegotiateInline(client, server);
  EXPECT_EQ(c.send, 8192u);     // min(8192, 16384)
  EXPECT_EQ(c.receive, 2048u);  // min(4096, 2048)
  InlineThresholds s = NegotiateInline(server, client);
  EXPECT_EQ(s.send, 2048u);     // min(2048, 4096)
  EXPECT_EQ(s.receive, 8192u);  // min(16384, 8192)
  // Each side's send threshold is the other side's receive threshold.
  EXPECT_EQ(c.send, s.receive);
  EXPECT_EQ(s.send, c.receive);
}

TEST(NegotiateInline, Rfc8797_4_2_PeerLimitsOwnLargerBuffers) {
  InlineThresholds t =
      NegotiateInline(Make(false, 262144, 262144), Make(false, 1024, 3072));
  EXPECT_EQ(t.send, 3072u);
  EXPECT_EQ(t.receive, 1024u);
}

TEST(NegotiateInline, Rfc8797_4_1_RemoteInvalidationNeedsBothR) {
  EXPECT_TRUE(NegotiateInline(Make(true, 1024, 1024), Make(true, 1024, 1024))
                  .remote_invalidation);
  EXPECT_FALSE(NegotiateInline(Make(true, 1024, 1024), Make(false, 1024, 1024))
                   .remote_invalidation);
  EXPECT_FALSE(NegotiateInline(Make(false, 1024, 1024), Make(true, 1024, 1024))
                   .remote_invalidation);
  EXPECT_FALSE(NegotiateInline(Make(false, 1024, 1024), Make(false, 1024, 1024))
                   .remote_invalidation);
}

TEST(NegotiateInline, Rfc8797_5_1_AbsentPeerDataGives1024AndNoInvalidate) {
  // The local side would like 4096 and remote invalidation, but the peer
  // sent no private data: §5.1 defaults bring both thresholds to 1024 and R
  // is clear.
  const PrivateData local = Make(true, 4096, 4096);
  const PrivateData peer = PrivateDataOrDefault(std::vector<uint8_t>(56, 0));
  InlineThresholds t = NegotiateInline(local, peer);
  EXPECT_EQ(t.send, 1024u);
  EXPECT_EQ(t.receive, 1024u);
  EXPECT_FALSE(t.remote_invalidation);
}

TEST(NegotiateInline, Rfc8797_4_2_EndToEndThroughTheWireFormat) {
  // Both sides encode, each finds the other's message inside a padded CM
  // buffer, and the two negotiations agree.
  const PrivateData client = Make(true, 4096, 16384);
  const PrivateData server = Make(true, 32768, 2048);
  auto client_octets = EncodePrivateData(client);
  auto server_octets = EncodePrivateData(server);
  ASSERT_TRUE(client_octets.ok());
  ASSERT_TRUE(server_octets.ok());
  std::vector<uint8_t> request(kConnectRequestPrivateData, 0);
  std::vector<uint8_t> reply(kConnectReplyPrivateData, 0);
  for (size_t i = 0; i < kPrivateDataSize; ++i) {
    request[i] = (*client_octets)[i];
    reply[i] = (*server_octets)[i];
  }
  InlineThresholds c = NegotiateInline(client, PrivateDataOrDefault(reply));
  InlineThresholds s = NegotiateInline(server, PrivateDataOrDefault(request));
  EXPECT_EQ(c, (InlineThresholds{2048, 16384, true}));
  EXPECT_EQ(s, (InlineThresholds{16384, 2048, true}));
}

}  // namespace
}  // namespace rpcrdma::wire
