// The soft fabric's framing (plugin/fabric/soft/soft_wire.h): golden
// encodings written by hand from the layout comment, partial input, and
// every class of malformed frame.
#include "plugin/fabric/soft/soft_wire.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rpcrdma::fabric::soft {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::vector<uint8_t> Data(std::initializer_list<uint8_t> v) { return v; }

TEST(SoftWire, ConnectGolden) {
  std::vector<uint8_t> out;
  const std::vector<uint8_t> pd = Data({0xaa, 0xbb});
  AppendConnect(out, 16, 7, pd);
  EXPECT_THAT(out, ElementsAreArray(
                       Data({0,    0,    0,    18,                // body length
                             1,                                   // CONNECT
                             0x53, 0x4f, 0x46, 0x54,              // "SOFT"
                             1,                                   // version
                             0,    0,    0,    16,   0, 0, 0, 7,  // ORD, IRD
                             0,    2,    0xaa, 0xbb})));  // private data
  absl::StatusOr<DecodeResult> d = DecodeFrame(out);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->consumed, out.size());
  EXPECT_EQ(d->frame.type, FrameType::kConnect);
  EXPECT_EQ(d->frame.initiator_depth, 16u);
  EXPECT_EQ(d->frame.responder_resources, 7u);
  EXPECT_THAT(d->frame.data, ElementsAre(0xaa, 0xbb));
}

TEST(SoftWire, SendWithInvalidateGolden) {
  std::vector<uint8_t> out;
  const std::vector<uint8_t> a = Data({1, 2}), b = Data({3});
  const absl::Span<const uint8_t> pieces[] = {a, b};
  AppendSend(out, 0x0102030405060708, 0xdeadbeef, pieces);
  EXPECT_THAT(out,
              ElementsAreArray(Data({0,    0,    0,    17,   4,  // SEND
                                     1,    2,    3,    4,    5, 6, 7, 8,  // id
                                     1,  // flags: invalidate
                                     0xde, 0xad, 0xbe, 0xef,  // handle
                                     1,    2,    3})));       // payload
  absl::StatusOr<DecodeResult> d = DecodeFrame(out);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->frame.id, 0x0102030405060708u);
  EXPECT_EQ(d->frame.invalidate, 0xdeadbeefu);
  EXPECT_THAT(d->frame.data, ElementsAre(1, 2, 3));
}

TEST(SoftWire, ReadRequestAndResponseGolden) {
  std::vector<uint8_t> out;
  AppendReadReq(out, 9, 0x100, 0x1122334455667788, 65536);
  EXPECT_THAT(out, ElementsAreArray(
                       Data({0,    0,    0,    25,   6,  // READ_REQ
                             0,    0,    0,    0,    0,    0,    0,    9,  // id
                             0,    0,    1,    0,  // handle
                             0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                             0,    1,    0,    0})));  // length
  const std::vector<uint8_t> data = Data({0xfe});
  std::vector<uint8_t> resp;
  AppendReadResp(resp, 9, 4, true, data);
  EXPECT_THAT(resp, ElementsAreArray(Data(
                        {0, 0, 0, 12, 7, 0, 0, 0, 0, 0, 0, 0, 9, 4, 1, 0xfe})));
  absl::StatusOr<DecodeResult> d = DecodeFrame(resp);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->frame.status, 4);
  EXPECT_TRUE(d->frame.last);
}

TEST(SoftWire, WriteAckRejectDisconnectRoundTrip) {
  std::vector<uint8_t> out;
  const std::vector<uint8_t> w = Data({5, 6, 7});
  const absl::Span<const uint8_t> pieces[] = {w};
  AppendWrite(out, 3, 0x205, 1000, false, pieces);
  AppendAck(out, 3, 0);
  AppendReject(out, Data({9}));
  AppendAccept(out, 1, 2, {});
  AppendDisconnect(out);
  absl::Span<const uint8_t> in(out);
  std::vector<FrameType> types;
  while (!in.empty()) {
    absl::StatusOr<DecodeResult> d = DecodeFrame(in);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_GT(d->consumed, 0u);
    types.push_back(d->frame.type);
    if (d->frame.type == FrameType::kWrite) {
      EXPECT_EQ(d->frame.handle, 0x205u);
      EXPECT_EQ(d->frame.address, 1000u);
      EXPECT_FALSE(d->frame.last);
      EXPECT_THAT(d->frame.data, ElementsAre(5, 6, 7));
    }
    in.remove_prefix(d->consumed);
  }
  EXPECT_THAT(
      types, ElementsAre(FrameType::kWrite, FrameType::kAck, FrameType::kReject,
                         FrameType::kAccept, FrameType::kDisconnect));
  EXPECT_THAT(Data({0, 0, 0, 1, 9}),
              ElementsAreArray(std::vector<uint8_t>(out.end() - 5, out.end())));
}

TEST(SoftWire, PartialFramesNeedMoreInput) {
  std::vector<uint8_t> out;
  AppendReadReq(out, 1, 2, 3, 4);
  for (size_t n = 0; n < out.size(); ++n) {
    absl::StatusOr<DecodeResult> d =
        DecodeFrame(absl::MakeConstSpan(out).subspan(0, n));
    ASSERT_TRUE(d.ok()) << n;
    EXPECT_EQ(d->consumed, 0u) << n;
  }
}

void ExpectMalformed(std::vector<uint8_t> frame) {
  absl::StatusOr<DecodeResult> d = DecodeFrame(frame);
  EXPECT_FALSE(d.ok()) << ::testing::PrintToString(frame);
}

TEST(SoftWire, MalformedFramesAreErrors) {
  ExpectMalformed(Data({0, 0, 0, 0}));                             // empty body
  ExpectMalformed(Data({0, 0x10, 0, 0x0f}));                       // too long
  ExpectMalformed(Data({0xff, 0xff, 0xff, 0xff}));                 // too long
  ExpectMalformed(Data({0, 0, 0, 1, 0}));                          // type 0
  ExpectMalformed(Data({0, 0, 0, 1, 14}));                         // type 14
  ExpectMalformed(Data({0, 0, 0, 2, 9, 0}));                       // trailing
  ExpectMalformed(Data({0, 0, 0, 9, 5, 0, 0, 0, 0, 0, 0, 0, 1}));  // short ACK
  ExpectMalformed(Data({0, 0, 0, 11, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
  ExpectMalformed(Data({0, 0, 0, 2, 3, 0}));        // short REJECT
  ExpectMalformed(Data({0, 0, 0, 4, 3, 0, 2, 1}));  // pd past end
  // Private data longer than 196 octets.
  std::vector<uint8_t> reject = Data({0, 0, 0, 200, 3, 0, 197});
  reject.resize(4 + 200);
  ExpectMalformed(reject);
  // CONNECT with a bad magic, and with a bad version.
  std::vector<uint8_t> connect;
  AppendConnect(connect, 1, 1, {});
  connect[5] ^= 1;
  ExpectMalformed(connect);
  connect[5] ^= 1;
  connect[9] = 2;
  ExpectMalformed(connect);
  // SEND with an unknown flag.
  std::vector<uint8_t> send;
  AppendSend(send, 1, std::nullopt, {});
  send[13] = 2;
  ExpectMalformed(send);
  // READ_RESP / WRITE with last = 2.
  std::vector<uint8_t> resp;
  AppendReadResp(resp, 1, 0, true, {});
  resp[14] = 2;
  ExpectMalformed(resp);
  std::vector<uint8_t> write;
  AppendWrite(write, 1, 1, 1, true, {});
  write[25] = 2;
  ExpectMalformed(write);
  // RDMA data pieces over 64 KiB.
  std::vector<uint8_t> big(kMaxRdmaChunk + 1);
  std::vector<uint8_t> huge;
  AppendReadResp(huge, 1, 0, true, big);
  ExpectMalformed(huge);
}

TEST(SoftWire, CrossMemoryOfferAndAnswerGolden) {
  std::vector<uint8_t> out;
  AppendCmaOffer(out, 0x00007f0011223344, 0x0102030405060708, 0x2a);
  AppendCmaAnswer(out, true);
  EXPECT_THAT(out, ElementsAreArray(Data({
                       0, 0, 0,    21,   10,                      // CMA_OFFER
                       0, 0, 0x7f, 0,    0x11, 0x22, 0x33, 0x44,  // addr
                       1, 2, 3,    4,    5,    6,    7,    8,     // cookie
                       0, 0, 0,    0x2a,                          // gate fd
                       0, 0, 0,    2,    11,   1,  // CMA_ANSWER yes
                   })));
  absl::StatusOr<DecodeResult> d = DecodeFrame(out);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->consumed, 25u);
  EXPECT_EQ(d->frame.type, FrameType::kCmaOffer);
  EXPECT_EQ(d->frame.address, 0x00007f0011223344u);
  EXPECT_EQ(d->frame.cookie, 0x0102030405060708u);
  EXPECT_EQ(d->frame.gate_fd, 0x2au);
  d = DecodeFrame(absl::MakeConstSpan(out).subspan(25));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->frame.type, FrameType::kCmaAnswer);
  EXPECT_EQ(d->frame.status, 1);
}

TEST(SoftWire, CrossMemoryRequestsGolden) {
  std::vector<uint8_t> out;
  const CmaSegment segments[] = {{0x1000, 5}, {0xa0b0c0d0e0f00102, 0x10000}};
  AppendCmaRequest(out, FrameType::kReadReqCma, 3, 0x200, 0x55, 0x10005,
                   segments);
  EXPECT_THAT(out, ElementsAreArray(Data({
                       0,    0,    0,    49,   12,  // READ_REQ_CMA
                       0,    0,    0,    0,    0,    0,    0,    3,  // id
                       0,    0,    2,    0,                          // handle
                       0,    0,    0,    0,    0,    0,    0,    0x55,  // addr
                       0,    1,    0,    5,  // length
                       0,    0,    0,    0,    0,    0,    0x10, 0,
                       0,    0,    0,    5,  // segment 1
                       0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0, 1,    2,
                       0,    1,    0,    0,  // segment 2
                   })));
  absl::StatusOr<DecodeResult> d = DecodeFrame(out);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->frame.type, FrameType::kReadReqCma);
  EXPECT_EQ(d->frame.id, 3u);
  EXPECT_EQ(d->frame.handle, 0x200u);
  EXPECT_EQ(d->frame.address, 0x55u);
  EXPECT_EQ(d->frame.length, 0x10005u);
  EXPECT_THAT(d->frame.segments, ElementsAreArray(segments));
  // WRITE_CMA differs only in its type; no segments is allowed.
  std::vector<uint8_t> write;
  AppendCmaRequest(write, FrameType::kWriteCma, 4, 1, 2, 0, {});
  EXPECT_THAT(write, ElementsAreArray(Data({0, 0, 0, 25, 13,  // WRITE_CMA
                                            0, 0, 0, 0,  0,  0, 0, 4,  //
                                            0, 0, 0, 1,                //
                                            0, 0, 0, 0,  0,  0, 0, 2,  //
                                            0, 0, 0, 0})));
  d = DecodeFrame(write);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->frame.type, FrameType::kWriteCma);
  EXPECT_TRUE(d->frame.segments.empty());
}

TEST(SoftWire, MalformedCrossMemoryFramesAreErrors) {
  ExpectMalformed(Data({0, 0, 0, 1, 10}));  // CMA_OFFER without a body
  ExpectMalformed(Data({0, 0, 0, 9, 10, 0, 0, 0, 0, 0, 0, 0, 1}));  // short
  ExpectMalformed(Data({0, 0, 0, 1, 11}));        // CMA_ANSWER without a body
  ExpectMalformed(Data({0, 0, 0, 2, 11, 2}));     // accepted = 2
  ExpectMalformed(Data({0, 0, 0, 3, 11, 1, 0}));  // trailing
  // A request cut inside its fixed part, and one with a partial segment.
  std::vector<uint8_t> req;
  const CmaSegment one[] = {{1, 1}};
  AppendCmaRequest(req, FrameType::kWriteCma, 1, 1, 1, 1, one);
  std::vector<uint8_t> partial(req.begin(), req.end() - 1);
  partial[3] = static_cast<uint8_t>(partial[3] - 1);
  ExpectMalformed(partial);
  std::vector<uint8_t> fixed_only(req.begin(), req.begin() + 5 + 23);
  fixed_only[3] = 24;
  ExpectMalformed(fixed_only);
  // kMaxCmaSegments segments decode; one more is out of range.
  std::vector<CmaSegment> many(kMaxCmaSegments, CmaSegment{1, 1});
  std::vector<uint8_t> most;
  AppendCmaRequest(most, FrameType::kReadReqCma, 1, 1, 1, 256, many);
  absl::StatusOr<DecodeResult> d = DecodeFrame(most);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->frame.segments.size(), kMaxCmaSegments);
  many.push_back(CmaSegment{1, 1});
  std::vector<uint8_t> too_many;
  AppendCmaRequest(too_many, FrameType::kReadReqCma, 1, 1, 1, 257, many);
  d = DecodeFrame(too_many);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(SoftWire, SendWithoutInvalidateHasNoHandle) {
  std::vector<uint8_t> out;
  AppendSend(out, 1, std::nullopt, {});
  absl::StatusOr<DecodeResult> d = DecodeFrame(out);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->frame.invalidate.has_value());
  EXPECT_TRUE(d->frame.data.empty());
}

}  // namespace
}  // namespace rpcrdma::fabric::soft
