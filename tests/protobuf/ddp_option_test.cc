// (rpcrdma.protobuf.ddp) on a `bytes` field (protobuf/README.md, "Bulk
// fields"): DDP_ALWAYS makes a value below the threshold its own read
// chunk (RFC 8166 §3.4.5), DDP_NEVER keeps one above it in the message,
// whatever the channel's threshold says.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "protobuf/runtime/bulk_fields.h"
#include "tests/protobuf/placement_service.h"

namespace rpcrdma::test {
namespace {

using protobuf::ClientContext;
using protobuf::kDefaultBulkThreshold;
using protobuf::Status;

class DdpOptionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = StartPlacementServer(GetParam());
    ASSERT_NE(server_, nullptr);
    channel_ = PlacementChannel(*server_);
    ASSERT_NE(channel_, nullptr);
  }
  // Echoes `request`, expecting it back whole; the channel's counters'
  // change over the call.
  Counters EchoAndCount(const rpcrdma_test::Placed& request) {
    rpcrdma_test::rdma::Placement::Stub stub(channel_);
    rpcrdma_test::Placed response;
    ClientContext context;
    const Counters before = channel_->transport().counters();
    Status s = stub.Echo(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s;
    const Counters after = channel_->transport().counters();
    EXPECT_EQ(response.forced(), request.forced());
    EXPECT_EQ(response.forbidden(), request.forbidden());
    EXPECT_EQ(response.plain(), request.plain());
    Counters delta;
    delta.read_chunk_calls = after.read_chunk_calls - before.read_chunk_calls;
    delta.read_chunks = after.read_chunks - before.read_chunks;
    delta.long_calls = after.long_calls - before.long_calls;
    return delta;
  }
  std::unique_ptr<PlacementServer> server_;
  std::shared_ptr<protobuf::Channel> channel_;
};

// Two values below the threshold that together do not fit inline: without
// the option the whole call is one position-zero chunk (RFC 8166 §3.5.3);
// with it the forced value is a read chunk of its own and the rest of the
// call goes inline.
TEST_P(DdpOptionTest, Rfc8166_3_4_5_DdpAlwaysMakesASmallValueAReadChunk) {
  rpcrdma_test::Placed request;
  request.set_forced(BlobOctets(kDefaultBulkThreshold * 3 / 4, 1));
  request.set_plain(BlobOctets(kDefaultBulkThreshold * 3 / 4, 2));
  const Counters delta = EchoAndCount(request);
  EXPECT_EQ(delta.read_chunk_calls, 1u);
  EXPECT_EQ(delta.read_chunks, 1u);
  EXPECT_EQ(delta.long_calls, 0u);
}

TEST_P(DdpOptionTest, Rfc8166_3_5_3_DdpNeverKeepsALargeValueInTheMessage) {
  rpcrdma_test::Placed request;
  request.set_forbidden(BlobOctets(1 << 20, 3));
  const Counters delta = EchoAndCount(request);
  EXPECT_EQ(delta.read_chunk_calls, 0u);
  EXPECT_EQ(delta.long_calls, 1u);
}

// The field without the option, for contrast: the threshold decides.
TEST_P(DdpOptionTest, Rfc8166_3_4_5_PlainFieldAboveThresholdIsAReadChunk) {
  rpcrdma_test::Placed request;
  request.set_plain(BlobOctets(1 << 20, 4));
  const Counters delta = EchoAndCount(request);
  EXPECT_EQ(delta.read_chunk_calls, 1u);
  EXPECT_EQ(delta.long_calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(SoftFabric, DdpOptionTest,
                         ::testing::Values("unix", "tcp"));

TEST(DdpOptionExtractTest, OptionOverridesTheThresholdEitherWay) {
  rpcrdma_test::Placed message;
  message.set_forced("x");
  message.set_forbidden(BlobOctets(10000, 5));
  message.set_plain(BlobOctets(10000, 6));
  std::vector<protobuf::runtime::BulkValue> bulk =
      protobuf::runtime::ExtractBulkFields(message, kDefaultBulkThreshold);
  ASSERT_EQ(bulk.size(), 2u);
  EXPECT_EQ(bulk[0].path[0].field_number, 1u);
  EXPECT_EQ(bulk[0].value, "x");
  EXPECT_EQ(bulk[1].path[0].field_number, 3u);
  EXPECT_EQ(message.forbidden().size(), 10000u);
}

}  // namespace
}  // namespace rpcrdma::test
