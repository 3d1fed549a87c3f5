// The adapter's XDR streams under rpcgen's routines (testprog.x): the
// reduced stream of RFC 8166 §3.4 and DDP items when encoding, write-chunk
// data put back when decoding, and every malformed length refused.
#include "oncrpc/adapter/rdma_xdr.h"

#include <rpc/rpc.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/xdr.h"
#include "testprog.h"
#include "tests/oncrpc/testprog_server.h"

namespace rpcrdma::oncrpc {
namespace {

using test::AsXdrProc;
using ::testing::ElementsAre;

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

blob BlobOf(std::vector<uint8_t>& b) {
  return blob{static_cast<u_int>(b.size()), reinterpret_cast<char*>(b.data())};
}

// What libtirpc's own memory stream makes of `value`: the complete stream.
template <typename T>
std::vector<uint8_t> FullEncoding(bool_t (*routine)(XDR*, T*), T* value) {
  std::vector<uint8_t> out(1 << 20);
  XDR x;
  xdrmem_create(&x, reinterpret_cast<char*>(out.data()),
                static_cast<u_int>(out.size()), XDR_ENCODE);
  EXPECT_TRUE(routine(&x, value));
  out.resize(xdr_getpos(&x));
  xdr_destroy(&x);
  return out;
}

// The reduced stream with every item put back at its position with its
// XDR roundup: the complete stream again (RFC 8166 §3.4.5).
std::vector<uint8_t> Reinsert(const std::vector<uint8_t>& reduced,
                              const std::vector<DdpItem>& items) {
  std::vector<uint8_t> out;
  size_t at = 0;
  for (const DdpItem& item : items) {
    out.insert(out.end(), reduced.begin() + at,
               reduced.begin() + item.position);
    out.insert(out.end(), item.data.begin(), item.data.end());
    out.resize(out.size() + (4 - item.data.size() % 4) % 4, 0);
    at = item.position;
  }
  out.insert(out.end(), reduced.begin() + at, reduced.end());
  return out;
}

struct Encoded {
  std::vector<uint8_t> stream;
  std::vector<DdpItem> items;
};

Encoded EncodePair(pair* value, uint32_t threshold,
                   const std::vector<uint64_t>* capacities = nullptr) {
  RdmaXdrEncoder encoder(capacities != nullptr
                             ? RdmaXdrEncoder::Message::kReply
                             : RdmaXdrEncoder::Message::kCall);
  encoder.set_threshold(threshold);
  if (capacities != nullptr) encoder.set_item_capacities(*capacities);
  EXPECT_TRUE(xdr_pair(encoder.xdr(), value));
  Encoded e;
  e.items = encoder.items();
  e.stream = encoder.TakeStream();
  return e;
}

TEST(RdmaXdrEncoder, Rfc8166_3_4_5_LargeOpaqueLeavesTheStreamAsAnItem) {
  std::vector<uint8_t> first = Bytes(4097, 1), second = Bytes(10, 2);
  char label[] = "abc";
  pair value{label, BlobOf(first), 42, BlobOf(second)};
  Encoded e = EncodePair(&value, 1024);
  ASSERT_EQ(e.items.size(), 1u);
  // label: length word + 4 octets; then first's length word.
  EXPECT_EQ(e.items[0].position, 12u);
  EXPECT_EQ(e.items[0].data.data(), first.data());  // the caller's memory
  EXPECT_EQ(e.items[0].data.size(), 4097u);
  const std::vector<uint8_t> full = FullEncoding(&xdr_pair, &value);
  // The content and its three octets of roundup are gone, the length word
  // stays.
  EXPECT_EQ(e.stream.size(), full.size() - 4097 - 3);
  EXPECT_EQ(Reinsert(e.stream, e.items), full);
}

TEST(RdmaXdrEncoder, Rfc8166_3_4_5_RoundupOfEveryLengthIsDropped) {
  for (size_t n = 1024; n < 1032; ++n) {
    std::vector<uint8_t> first = Bytes(n, 3), second;
    char label[] = "";
    pair value{label, BlobOf(first), 1, BlobOf(second)};
    Encoded e = EncodePair(&value, 1024);
    ASSERT_EQ(e.items.size(), 1u) << n;
    const std::vector<uint8_t> full = FullEncoding(&xdr_pair, &value);
    EXPECT_EQ(e.stream.size(), full.size() - n - (4 - n % 4) % 4) << n;
    EXPECT_EQ(Reinsert(e.stream, e.items), full) << n;
  }
}

TEST(RdmaXdrEncoder, Rfc8166_3_4_5_SeveralItemsAtIncreasingPositions) {
  std::vector<uint8_t> first = Bytes(5000, 4), second = Bytes(2049, 5);
  char label[] = "label";
  pair value{label, BlobOf(first), -7, BlobOf(second)};
  Encoded e = EncodePair(&value, 1024);
  ASSERT_EQ(e.items.size(), 2u);
  // label (4 + 8), first's length word, then tag and second's length word
  // follow first's position directly: its content is not in the stream.
  EXPECT_EQ(e.items[0].position, 16u);
  EXPECT_EQ(e.items[1].position, 24u);
  EXPECT_EQ(Reinsert(e.stream, e.items), FullEncoding(&xdr_pair, &value));
}

TEST(RdmaXdrEncoder, BelowTheThresholdOrWithDdpOffEverythingStaysInline) {
  std::vector<uint8_t> first = Bytes(1023, 6), second = Bytes(3000, 7);
  char label[] = "x";
  pair value{label, BlobOf(first), 0, BlobOf(second)};
  const std::vector<uint8_t> full = FullEncoding(&xdr_pair, &value);
  Encoded off = EncodePair(&value, 0);
  EXPECT_TRUE(off.items.empty());
  EXPECT_EQ(off.stream, full);
  Encoded high = EncodePair(&value, 4096);
  EXPECT_TRUE(high.items.empty());
  EXPECT_EQ(high.stream, full);
  Encoded mid = EncodePair(&value, 1024);
  ASSERT_EQ(mid.items.size(), 1u);
  EXPECT_EQ(mid.items[0].data.data(), second.data());
}

TEST(RdmaXdrEncoder, ReplyItemsGoOnlyIntoOfferedChunksTheyFit) {
  std::vector<uint8_t> first = Bytes(8000, 8), second = Bytes(2000, 9);
  char label[] = "y";
  pair value{label, BlobOf(first), 3, BlobOf(second)};
  // One chunk of 4096: first does not fit it and stays inline; second
  // takes it.
  const std::vector<uint64_t> one_small = {4096};
  Encoded e = EncodePair(&value, 1024, &one_small);
  ASSERT_EQ(e.items.size(), 1u);
  EXPECT_EQ(e.items[0].data.data(), second.data());
  EXPECT_EQ(Reinsert(e.stream, e.items), FullEncoding(&xdr_pair, &value));
  // No chunk offered: nothing leaves the stream.
  const std::vector<uint64_t> none;
  EXPECT_TRUE(EncodePair(&value, 1024, &none).items.empty());
}

TEST(RdmaXdrEncoder, InlineFastPathsRefuseWhatMayBecomeAnItem) {
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kCall);
  encoder.set_threshold(1024);
  EXPECT_NE(XDR_INLINE(encoder.xdr(), 16), nullptr);
  EXPECT_EQ(XDR_INLINE(encoder.xdr(), 1024), nullptr);
  EXPECT_EQ(XDR_INLINE(encoder.xdr(), 6), nullptr);  // not a whole unit
}

TEST(RdmaXdrEncoder, RewindingOverAnItemIsRefused) {
  std::vector<uint8_t> first = Bytes(2000, 1), second;
  char label[] = "";
  pair value{label, BlobOf(first), 0, BlobOf(second)};
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kCall);
  encoder.set_threshold(1024);
  ASSERT_TRUE(xdr_pair(encoder.xdr(), &value));
  EXPECT_FALSE(xdr_setpos(encoder.xdr(), 4));
  EXPECT_TRUE(xdr_setpos(encoder.xdr(), 8));
}

TEST(RdmaXdrEncoder, ControlsOfferChunksOnCallsOnly) {
  RdmaXdrEncoder call(RdmaXdrEncoder::Message::kCall);
  call.set_threshold(2048);
  std::vector<uint8_t> land(100);
  xdr_rdma_write_chunk chunk{100, land.data()};
  u_int reply = 65536, threshold = 0;
  EXPECT_TRUE(xdr_rdma_control(call.xdr(), XDR_RDMA_WRITE_CHUNK, &chunk));
  EXPECT_TRUE(xdr_rdma_control(call.xdr(), XDR_RDMA_REPLY_CHUNK, &reply));
  EXPECT_TRUE(
      xdr_rdma_control(call.xdr(), XDR_RDMA_GET_DDP_THRESHOLD, &threshold));
  EXPECT_EQ(threshold, 2048u);
  ASSERT_EQ(call.write_chunks().size(), 1u);
  EXPECT_EQ(call.write_chunks()[0].buffer, land.data());
  EXPECT_EQ(call.reply_chunk(), 65536u);

  RdmaXdrEncoder answer(RdmaXdrEncoder::Message::kReply);
  EXPECT_FALSE(xdr_rdma_control(answer.xdr(), XDR_RDMA_WRITE_CHUNK, &chunk));
  EXPECT_FALSE(xdr_rdma_control(answer.xdr(), XDR_RDMA_REPLY_CHUNK, &reply));
  answer.set_ddp(false);
  EXPECT_TRUE(
      xdr_rdma_control(answer.xdr(), XDR_RDMA_GET_DDP_THRESHOLD, &threshold));
  EXPECT_EQ(threshold, 0u);

  // Other streams refuse: a routine can tell it does not run over RDMA.
  char memory[16];
  XDR plain;
  xdrmem_create(&plain, memory, sizeof memory, XDR_ENCODE);
  EXPECT_FALSE(xdr_rdma_control(&plain, XDR_RDMA_DDP_NEXT, nullptr));
}

TEST(RdmaXdrEncoder, AMarkedOpaqueIsAnItemWhateverItsLength) {
  std::vector<uint8_t> small = Bytes(5, 1);
  blob b = BlobOf(small);
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kCall);
  encoder.set_threshold(1024);
  ASSERT_TRUE(xdr_rdma_control(encoder.xdr(), XDR_RDMA_DDP_NEXT, nullptr));
  ASSERT_TRUE(xdr_blob(encoder.xdr(), &b));
  ASSERT_TRUE(xdr_blob(encoder.xdr(), &b));  // unmarked: inline
  ASSERT_EQ(encoder.items().size(), 1u);
  EXPECT_EQ(encoder.items()[0].position, 4u);
  EXPECT_EQ(encoder.TakeStream().size(), 4u + 4 + 8);
}

// Decoding a reply whose items came back in write chunks.
class RdmaXdrDecoderTest : public ::testing::Test {
 protected:
  // `value` encoded as a reply: its reduced stream and, per item, a chunk
  // holding the item's octets (as a responder's RDMA Writes leave them).
  void EncodeReply(pair* value) {
    Encoded e = EncodePair(value, 1024);
    stream_ = e.stream;
    for (const DdpItem& item : e.items) {
      landed_.emplace_back(item.data.begin(), item.data.end());
    }
  }
  std::vector<RdmaXdrDecoder::Chunk> Chunks() {
    std::vector<RdmaXdrDecoder::Chunk> chunks;
    for (auto& l : landed_) chunks.emplace_back(l.data(), l.size());
    return chunks;
  }

  std::vector<uint8_t> stream_;
  std::vector<std::vector<uint8_t>> landed_;
};

TEST_F(RdmaXdrDecoderTest, Rfc8166_3_4_7_WriteChunkDataTakesItsOpaquesPlace) {
  std::vector<uint8_t> first = Bytes(5000, 4), second = Bytes(2049, 5);
  char label[] = "label";
  pair value{label, BlobOf(first), -7, BlobOf(second)};
  EncodeReply(&value);
  ASSERT_EQ(landed_.size(), 2u);
  RdmaXdrDecoder decoder(stream_, Chunks(), 1024, 1024);
  pair out{};
  ASSERT_TRUE(xdr_pair(decoder.xdr(), &out));
  EXPECT_STREQ(out.label, "label");
  EXPECT_EQ(out.tag, -7);
  EXPECT_EQ(std::vector<uint8_t>(out.first.blob_val,
                                 out.first.blob_val + out.first.blob_len),
            first);
  EXPECT_EQ(std::vector<uint8_t>(out.second.blob_val,
                                 out.second.blob_val + out.second.blob_len),
            second);
  EXPECT_EQ(decoder.unconsumed_chunks(), 0u);
  xdr_free(AsXdrProc(&xdr_pair), &out);
}

TEST_F(RdmaXdrDecoderTest, DataLandsInAPresetDestinationWithoutACopy) {
  std::vector<uint8_t> first = Bytes(4096, 1), second;
  char label[] = "";
  pair value{label, BlobOf(first), 0, BlobOf(second)};
  EncodeReply(&value);
  // The destination is the chunk's own memory (the caller offered the
  // write chunk there): decoding must not copy onto itself (ASan reports
  // an overlapping memcpy).
  pair out{};
  out.first.blob_val = reinterpret_cast<char*>(landed_[0].data());
  out.first.blob_len = static_cast<u_int>(landed_[0].size());
  char label_out[8];
  out.label = label_out;
  char second_out[1];
  out.second.blob_val = second_out;
  RdmaXdrDecoder decoder(stream_, Chunks(), 1, 1024);
  ASSERT_TRUE(xdr_pair(decoder.xdr(), &out));
  EXPECT_EQ(out.first.blob_val, reinterpret_cast<char*>(landed_[0].data()));
  EXPECT_EQ(landed_[0], first);
}

TEST_F(RdmaXdrDecoderTest, AShortBoundResultTakesItsChunk) {
  // nfsd puts a READ of any length in the write chunk offered for it: with
  // the procedure bound (minimum 1), a 5-octet result comes from its chunk.
  std::vector<uint8_t> data = Bytes(5, 9);
  std::vector<uint8_t> stream = {0, 0, 0, 5};  // the length word stays
  std::vector<RdmaXdrDecoder::Chunk> chunks = {{data.data(), data.size()}};
  blob out{};
  RdmaXdrDecoder bound(stream, chunks, 1, 1024);
  ASSERT_TRUE(xdr_blob(bound.xdr(), &out));
  EXPECT_EQ(std::vector<uint8_t>(out.blob_val, out.blob_val + out.blob_len),
            data);
  xdr_free(AsXdrProc(&xdr_blob), &out);
  // Unbound, a short opaque is inline: the stream lacks its octets.
  RdmaXdrDecoder unbound(stream, chunks, 1024, 1024);
  blob none{};
  EXPECT_FALSE(xdr_blob(unbound.xdr(), &none));
  xdr_free(AsXdrProc(&xdr_blob), &none);
}

// A routine learns which opaques a write chunk carried (the placement is
// the responder's choice, RFC 8166 §3.4.7): XDR_RDMA_WRITE_CHUNKS_TAKEN
// counts them as they are decoded; the encoder refuses the request.
TEST_F(RdmaXdrDecoderTest, Rfc8166_3_4_7_ChunksTakenCountsPlacedOpaques) {
  std::vector<uint8_t> first = Bytes(5000, 4), second = Bytes(20, 5);
  char label[] = "label";
  pair value{label, BlobOf(first), 3, BlobOf(second)};
  EncodeReply(&value);  // the first is an item, the second stays inline
  ASSERT_EQ(landed_.size(), 1u);
  RdmaXdrDecoder decoder(stream_, Chunks(), 1024, 1024);
  u_int taken = 99;
  ASSERT_TRUE(
      xdr_rdma_control(decoder.xdr(), XDR_RDMA_WRITE_CHUNKS_TAKEN, &taken));
  EXPECT_EQ(taken, 0u);
  pair out{};
  ASSERT_TRUE(xdr_string(decoder.xdr(), &out.label, ~0u));
  ASSERT_TRUE(xdr_blob(decoder.xdr(), &out.first));
  ASSERT_TRUE(
      xdr_rdma_control(decoder.xdr(), XDR_RDMA_WRITE_CHUNKS_TAKEN, &taken));
  EXPECT_EQ(taken, 1u) << "the first blob came from the chunk";
  ASSERT_TRUE(xdr_int(decoder.xdr(), &out.tag));
  ASSERT_TRUE(xdr_blob(decoder.xdr(), &out.second));
  ASSERT_TRUE(
      xdr_rdma_control(decoder.xdr(), XDR_RDMA_WRITE_CHUNKS_TAKEN, &taken));
  EXPECT_EQ(taken, 1u) << "the second came inline";
  EXPECT_FALSE(
      xdr_rdma_control(decoder.xdr(), XDR_RDMA_WRITE_CHUNKS_TAKEN, nullptr));
  xdr_free(AsXdrProc(&xdr_pair), &out);
  RdmaXdrEncoder encoder(RdmaXdrEncoder::Message::kCall);
  EXPECT_FALSE(
      xdr_rdma_control(encoder.xdr(), XDR_RDMA_WRITE_CHUNKS_TAKEN, &taken));
}

TEST_F(RdmaXdrDecoderTest, AnEmptyChunkLeavesItsOpaqueInline) {
  std::vector<uint8_t> first = Bytes(3000, 2), second;
  char label[] = "z";
  pair value{label, BlobOf(first), 1, BlobOf(second)};
  // Encoded without DDP (the responder did not use the chunk): all inline.
  Encoded e = EncodePair(&value, 0);
  std::vector<RdmaXdrDecoder::Chunk> chunks = {{}};
  RdmaXdrDecoder decoder(e.stream, chunks, 1024, 1024);
  pair out{};
  ASSERT_TRUE(xdr_pair(decoder.xdr(), &out));
  EXPECT_EQ(out.first.blob_len, 3000u);
  EXPECT_EQ(decoder.unconsumed_chunks(), 0u);
  xdr_free(AsXdrProc(&xdr_pair), &out);
}

TEST_F(RdmaXdrDecoderTest, ChunkDataNoOpaqueTakesIsReported) {
  std::vector<uint8_t> first = Bytes(3000, 2), second;
  char label[] = "z";
  pair value{label, BlobOf(first), 1, BlobOf(second)};
  Encoded e = EncodePair(&value, 0);
  std::vector<uint8_t> stray = Bytes(777, 1);
  std::vector<RdmaXdrDecoder::Chunk> chunks = {{stray.data(), stray.size()}};
  RdmaXdrDecoder decoder(e.stream, chunks, 1024, 1024);
  pair out{};
  ASSERT_TRUE(xdr_pair(decoder.xdr(), &out));
  EXPECT_EQ(decoder.unconsumed_chunks(), 1u);
  xdr_free(AsXdrProc(&xdr_pair), &out);
}

TEST_F(RdmaXdrDecoderTest, EveryMalformedLengthIsRefused) {
  std::vector<uint8_t> first = Bytes(5000, 4), second = Bytes(2049, 5);
  char label[] = "label";
  pair value{label, BlobOf(first), -7, BlobOf(second)};
  EncodeReply(&value);
  auto decodes = [](const std::vector<uint8_t>& stream,
                    std::vector<RdmaXdrDecoder::Chunk> chunks) {
    RdmaXdrDecoder decoder(stream, std::move(chunks), 1024, 1024);
    pair out{};
    const bool ok = xdr_pair(decoder.xdr(), &out);
    xdr_free(AsXdrProc(&xdr_pair), &out);
    return ok;
  };
  ASSERT_TRUE(decodes(stream_, Chunks()));
  // Every truncation of the reduced stream.
  for (size_t n = 0; n < stream_.size(); ++n) {
    EXPECT_FALSE(decodes({stream_.begin(), stream_.begin() + n}, Chunks()))
        << n;
  }
  // A chunk shorter or longer than its length word says: not taken, and
  // the stream does not hold the octets.
  for (int delta : {-1, 1}) {
    std::vector<uint8_t> wrong(landed_[0].size() + delta);
    std::vector<RdmaXdrDecoder::Chunk> chunks = Chunks();
    chunks[0] = {wrong.data(), wrong.size()};
    EXPECT_FALSE(decodes(stream_, chunks)) << delta;
  }
  // Length words beyond what the stream or the type allow.
  for (uint32_t length :
       {0xffffffffu, 0x80000000u, uint32_t{TESTPROG_MAXDATA} + 1}) {
    std::vector<uint8_t> bad = stream_;
    StoreBigEndian32(bad.data() + 12, length);
    EXPECT_FALSE(decodes(bad, Chunks())) << length;
  }
  // A name longer than its bound.
  std::vector<uint8_t> long_name = {0, 0, 1, 0};
  EXPECT_FALSE(decodes(long_name, {}));
}

TEST(RdmaXdrDecoder, ReportsItsThresholdAndTakesMarks) {
  std::vector<uint8_t> stream = {0, 0, 0, 3, 'a', 'b', 'c', 0};
  RdmaXdrDecoder decoder(stream, 512);
  u_int threshold = 0;
  EXPECT_TRUE(
      xdr_rdma_control(decoder.xdr(), XDR_RDMA_GET_DDP_THRESHOLD, &threshold));
  EXPECT_EQ(threshold, 512u);
  EXPECT_TRUE(xdr_rdma_control(decoder.xdr(), XDR_RDMA_DDP_NEXT, nullptr));
  blob out{};
  // Marked, but no chunk came: the octets are inline.
  ASSERT_TRUE(xdr_blob(decoder.xdr(), &out));
  EXPECT_THAT(std::vector<char>(out.blob_val, out.blob_val + out.blob_len),
              ElementsAre('a', 'b', 'c'));
  xdr_free(AsXdrProc(&xdr_blob), &out);
}

}  // namespace
}  // namespace rpcrdma::oncrpc
