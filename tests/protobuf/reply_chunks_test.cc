// Reply bulk values in write chunks (protobuf/README.md, "Replies"; RFC
// 8166 §3.4.7): a method's (rpcrdma.protobuf.reply_chunks) makes the
// client offer write chunks the server writes the values into, and
// ClientContext::ReceiveBulkInto makes the caller's memory that chunk.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "tests/protobuf/placement_service.h"

namespace rpcrdma::test {
namespace {

using protobuf::ClientContext;
using protobuf::kDefaultBulkThreshold;
using protobuf::Status;

constexpr size_t kT = kDefaultBulkThreshold;
constexpr uint8_t kUntouched = 0xee;
constexpr size_t kGuard = 64;

struct Delta {
  uint64_t write_chunks = 0;
  uint64_t long_replies = 0;
};

class ReplyChunksTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = StartPlacementServer(GetParam());
    ASSERT_NE(server_, nullptr);
    channel_ = PlacementChannel(*server_);
    ASSERT_NE(channel_, nullptr);
  }
  // Fetch (with the option) or FetchUnsized of `request`.
  Status Call(bool sized, ClientContext& context,
              const rpcrdma_test::BlobRequest& request,
              rpcrdma_test::BlobReply& reply, Delta& delta) {
    rpcrdma_test::rdma::Placement::Stub stub(channel_);
    const Counters before = channel_->transport().counters();
    Status s = sized ? stub.Fetch(&context, request, &reply)
                     : stub.FetchUnsized(&context, request, &reply);
    const Counters after = channel_->transport().counters();
    delta.write_chunks = after.write_chunks - before.write_chunks;
    delta.long_replies = after.long_replies - before.long_replies;
    return s;
  }
  std::unique_ptr<PlacementServer> server_;
  std::shared_ptr<protobuf::Channel> channel_;
};

class ReplyChunkSizesTest
    : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {
 protected:
  void SetUp() override {
    server_ = StartPlacementServer(std::get<0>(GetParam()));
    ASSERT_NE(server_, nullptr);
    channel_ = PlacementChannel(*server_);
    ASSERT_NE(channel_, nullptr);
  }
  std::unique_ptr<PlacementServer> server_;
  std::shared_ptr<protobuf::Channel> channel_;
};

// The option's write chunk takes `data` at every size: the reply itself
// stays small enough to come inline (no RDMA_NOMSG reply), however large
// the value.
TEST_P(ReplyChunkSizesTest, Rfc8166_3_4_7_MethodOptionOffersWriteChunk) {
  const size_t size = std::get<1>(GetParam());
  rpcrdma_test::BlobRequest request;
  request.set_size(size);
  rpcrdma_test::rdma::Placement::Stub stub(channel_);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  const Counters before = channel_->transport().counters();
  Status s = stub.Fetch(&context, request, &reply);
  ASSERT_TRUE(s.ok()) << s;
  const Counters after = channel_->transport().counters();
  EXPECT_EQ(reply.data(), BlobOctets(size, 0));
  EXPECT_EQ(reply.note(), "the rest of the reply");
  EXPECT_EQ(after.write_chunks - before.write_chunks, 1u);
  EXPECT_EQ(after.long_replies - before.long_replies, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    SoftFabric, ReplyChunkSizesTest,
    ::testing::Combine(::testing::Values("unix", "tcp"),
                       ::testing::Values(size_t{0}, kT - 1, kT, size_t{1} << 20,
                                         size_t{16} << 20)),
    [](const auto& param_info) {
      return std::get<0>(param_info.param) + "_" +
             std::to_string(std::get<1>(param_info.param));
    });

// Without the option nothing changes: no write chunk, the large reply in
// the reply chunk (RFC 8166 §3.5.4).
TEST_P(ReplyChunksTest, Rfc8166_3_5_4_WithoutOptionReplyChunkAsBefore) {
  rpcrdma_test::BlobRequest request;
  request.set_size(1 << 20);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  Delta delta;
  Status s = Call(false, context, request, reply, delta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(reply.data(), BlobOctets(1 << 20, 0));
  EXPECT_EQ(delta.write_chunks, 0u);
  EXPECT_EQ(delta.long_replies, 1u);
}

// The option's max_size (64 KiB) is the reply chunk's: a reply of more
// outside the write chunks is refused, which the channel's 20 MiB would
// have taken.
TEST_P(ReplyChunksTest, Rfc8166_3_5_4_MethodOptionMaxSizeIsTheReplyChunk) {
  rpcrdma_test::BlobRequest request;
  request.set_size(10);
  request.set_extras(2);
  request.set_extra_size(64 << 10);
  rpcrdma_test::BlobReply reply;
  Delta delta;
  ClientContext sized;
  EXPECT_EQ(Call(true, sized, request, reply, delta).code(),
            absl::StatusCode::kInvalidArgument);
  ClientContext unsized;
  rpcrdma_test::BlobReply whole;
  ASSERT_TRUE(Call(false, unsized, request, whole, delta).ok());
  EXPECT_EQ(whole.extra(1), BlobOctets(64 << 10, 2));
}

// More bulk values than chunks: the first takes the chunk, the others
// come as before (inline or in the reply chunk).
TEST_P(ReplyChunksTest, Rfc8166_3_4_7_MoreValuesThanChunksStillArrive) {
  rpcrdma_test::BlobRequest request;
  request.set_size(1 << 20);
  request.set_extras(3);
  request.set_extra_size(8 << 10);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  Delta delta;
  Status s = Call(true, context, request, reply, delta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(delta.write_chunks, 1u);
  EXPECT_EQ(reply.data(), BlobOctets(1 << 20, 0));
  ASSERT_EQ(reply.extra_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(reply.extra(i), BlobOctets(8 << 10, i + 1)) << i;
  }
}

// Fewer values than chunks: the unused ones come back empty.
TEST_P(ReplyChunksTest, Rfc8166_3_4_7_ContextSizesFewerValuesThanChunks) {
  rpcrdma_test::BlobRequest request;
  request.set_size(1 << 20);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  context.set_reply_bulk_sizes({2 << 20, 2 << 20, 2 << 20});
  Delta delta;
  Status s = Call(false, context, request, reply, delta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(delta.write_chunks, 3u);
  EXPECT_EQ(delta.long_replies, 0u);
  EXPECT_EQ(reply.data(), BlobOctets(1 << 20, 0));
}

// A value larger than its chunk: the server says so, sending nothing.
TEST_P(ReplyChunksTest, Rfc8166_3_4_7_ValueLargerThanChunkIsResourceExhausted) {
  rpcrdma_test::BlobRequest request;
  request.set_size((16 << 20) + 1);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  Delta delta;
  Status s = Call(true, context, request, reply, delta);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("write chunk 0"), absl::string_view::npos) << s;
}

// The caller's memory: `size` octets of it, guards on both sides.
struct Landing {
  explicit Landing(size_t size)
      : octets(size + 2 * kGuard, kUntouched),
        span(absl::MakeSpan(octets).subspan(kGuard, size)) {}
  bool GuardsUntouched() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (octets[i] != kUntouched) return false;
      if (octets[octets.size() - 1 - i] != kUntouched) return false;
    }
    return true;
  }
  bool Holds(const std::string& value) const {
    return value.size() <= span.size() &&
           std::memcmp(span.data(), value.data(), value.size()) == 0;
  }
  bool AllUntouched() const {
    for (uint8_t o : octets) {
      if (o != kUntouched) return false;
    }
    return true;
  }
  std::vector<uint8_t> octets;
  absl::Span<uint8_t> span;
};

TEST_P(ReplyChunksTest, Rfc8166_3_4_7_ReceiveBulkIntoLandsInCallerMemory) {
  for (size_t size : {size_t{0}, kT - 1, size_t{1} << 20, size_t{16} << 20}) {
    rpcrdma_test::BlobRequest request;
    request.set_size(size);
    // Exactly the value's size (the transport exposes no empty memory).
    Landing landing(size == 0 ? 16 : size);
    rpcrdma_test::BlobReply reply;
    ClientContext context;
    context.ReceiveBulkInto(rpcrdma_test::BlobReply::kDataFieldNumber,
                            landing.span);
    Delta delta;
    // The method without the option: the receive alone offers the chunk.
    Status s = Call(false, context, request, reply, delta);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(delta.write_chunks, 1u) << size;
    EXPECT_EQ(delta.long_replies, 0u) << size;
    EXPECT_TRUE(reply.data().empty()) << size;
    EXPECT_EQ(context.bulk_received(rpcrdma_test::BlobReply::kDataFieldNumber),
              size);
    EXPECT_TRUE(landing.Holds(BlobOctets(size, 0))) << size;
    EXPECT_TRUE(landing.GuardsUntouched()) << size;
    EXPECT_EQ(reply.note(), "the rest of the reply");
  }
}

// Memory too small: RESOURCE_EXHAUSTED, not one octet written.
TEST_P(ReplyChunksTest, Rfc8166_3_4_7_ReceiveBulkIntoTooSmallWritesNothing) {
  rpcrdma_test::BlobRequest request;
  request.set_size(1 << 20);
  Landing landing((1 << 20) - 1);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  context.ReceiveBulkInto(rpcrdma_test::BlobReply::kDataFieldNumber,
                          landing.span);
  Delta delta;
  Status s = Call(true, context, request, reply, delta);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_TRUE(landing.AllUntouched());
  EXPECT_EQ(context.bulk_received(rpcrdma_test::BlobReply::kDataFieldNumber),
            std::nullopt);
}

// An earlier field of the response went as a bulk value and took the
// chunk: both still arrive where they belong (by a copy).
TEST_P(ReplyChunksTest, Rfc8166_3_4_7_ReceiveBulkIntoAfterAnEarlierBulkValue) {
  rpcrdma_test::BlobRequest request;
  request.set_size(1 << 20);
  request.set_small_size(kT * 2);
  Landing landing(2 << 20);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  context.ReceiveBulkInto(rpcrdma_test::BlobReply::kDataFieldNumber,
                          landing.span);
  Delta delta;
  Status s = Call(false, context, request, reply, delta);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(reply.small(), BlobOctets(kT * 2, 100));
  EXPECT_TRUE(reply.data().empty());
  EXPECT_EQ(context.bulk_received(rpcrdma_test::BlobReply::kDataFieldNumber),
            size_t{1} << 20);
  EXPECT_TRUE(landing.Holds(BlobOctets(1 << 20, 0)));
  EXPECT_TRUE(landing.GuardsUntouched());
}

TEST_P(ReplyChunksTest, ReceiveBulkIntoEmptyMemoryIsInvalidArgument) {
  rpcrdma_test::BlobRequest request;
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  context.ReceiveBulkInto(rpcrdma_test::BlobReply::kDataFieldNumber, {});
  Delta delta;
  Status s = Call(false, context, request, reply, delta);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("no octets"), absl::string_view::npos) << s;
}

TEST_P(ReplyChunksTest, ReceiveBulkIntoFieldThatIsNotBytesIsInvalidArgument) {
  rpcrdma_test::BlobRequest request;
  Landing landing(16);
  rpcrdma_test::BlobReply reply;
  ClientContext context;
  context.ReceiveBulkInto(rpcrdma_test::BlobReply::kNoteFieldNumber,
                          landing.span);
  Delta delta;
  EXPECT_EQ(Call(true, context, request, reply, delta).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(delta.write_chunks, 0u);
}

INSTANTIATE_TEST_SUITE_P(SoftFabric, ReplyChunksTest,
                         ::testing::Values("unix", "tcp"));

}  // namespace
}  // namespace rpcrdma::test
