// Bulk `bytes` fields (protobuf/README.md, "Bulk fields"): every size
// around the threshold and up to 16 MiB, in every place a field can sit,
// arrives intact, and above the threshold travels as its own read chunk
// (RFC 8166 §3.4.5) instead of inside the message.
#include <cstddef>
#include <memory>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "protobuf/runtime/bulk_fields.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/test_schemes.h"

namespace rpcrdma::test {

namespace runtime = protobuf::runtime;
using protobuf::Channel;
using protobuf::ClientContext;
using protobuf::kDefaultBulkThreshold;
using protobuf::Status;

namespace {

enum class Place {
  kTop,
  kNested,
  kRepeated,
  kRepeatedNested,
  kMap,
  kMapOfMessages,
  kOneof,
  kOptional
};

std::string Octets(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131) >> 3);
  return s;
}

void Put(rpcrdma_test::EchoRequest& r, Place place, std::string value) {
  switch (place) {
    case Place::kTop:
      r.set_payload(std::move(value));
      break;
    case Place::kNested:
      r.mutable_inner()->mutable_blob()->set_data(std::move(value));
      break;
    case Place::kRepeated:
      r.add_many("first");
      r.add_many(std::move(value));
      break;
    case Place::kRepeatedNested:
      r.add_inners();
      r.add_inners()->add_chunks(std::move(value));
      break;
    case Place::kMap:
      (*r.mutable_blobs())["a"] = "x";
      (*r.mutable_blobs())["b"] = std::move(value);
      (*r.mutable_blobs())["c"] = "z";
      break;
    case Place::kMapOfMessages:
      (*r.mutable_by_id())[-5].set_payload("low");
      (*r.mutable_by_id())[9].set_payload(std::move(value));
      break;
    case Place::kOneof:
      r.set_chosen_bytes(std::move(value));
      break;
    case Place::kOptional:
      r.set_maybe(std::move(value));
      break;
  }
}

const std::string& Get(const rpcrdma_test::EchoRequest& r, Place place) {
  switch (place) {
    case Place::kTop:
      return r.payload();
    case Place::kNested:
      return r.inner().blob().data();
    case Place::kRepeated:
      return r.many(1);
    case Place::kRepeatedNested:
      return r.inners(1).chunks(0);
    case Place::kMap:
      return r.blobs().at("b");
    case Place::kMapOfMessages:
      return r.by_id().at(9).payload();
    case Place::kOneof:
      return r.chosen_bytes();
    case Place::kOptional:
      return r.maybe();
  }
  return r.payload();
}

std::string PlaceName(Place place) {
  static const char* const kPlaces[] = {
      "Top", "Nested",        "Repeated", "RepeatedNested",
      "Map", "MapOfMessages", "Oneof",    "Optional"};
  return kPlaces[static_cast<int>(place)];
}

constexpr size_t kT = kDefaultBulkThreshold;

class BulkTest
    : public ::testing::TestWithParam<std::tuple<std::string, Place, size_t>> {
 protected:
  void SetUp() override {
    server_ = StartTestServer(TestUri(std::get<0>(GetParam())));
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::shared_ptr<Channel>> channel =
        Channel::Create(server_->server->uri(), TestChannelOptions());
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = *channel;
  }
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
};

TEST_P(BulkTest, Rfc8166_3_4_5_ArrivesIntactAndAboveThresholdAsReadChunk) {
  const auto& [scheme, place, size] = GetParam();
  const std::string octets = Octets(size);
  rpcrdma_test::EchoRequest request;
  request.set_text("rest of the message");
  Put(request, place, octets);
  rpcrdma_test::rdma::Echo::Stub stub(channel_);
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  const Counters before = channel_->transport().counters();
  Status s = stub.Echo(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s;
  const Counters after = channel_->transport().counters();
  EXPECT_EQ(Get(response, place), octets);
  EXPECT_EQ(response.text(), "rest of the message");
  // The caller's request is whole again.
  EXPECT_EQ(Get(request, place), octets);
  // Above the threshold the value is its own chunk: an RDMA_MSG call with
  // a read chunk; below, it is inside the message (inline, or the whole
  // call as one position-zero chunk, RFC 8166 §3.5.3).
  const uint64_t chunk_calls = after.read_chunk_calls - before.read_chunk_calls;
  EXPECT_EQ(chunk_calls, size >= kT ? 1u : 0u) << "size " << size;
}

INSTANTIATE_TEST_SUITE_P(
    Transports, BulkTest,
    ::testing::Combine(::testing::ValuesIn(TestSchemes()),
                       ::testing::Values(Place::kTop, Place::kNested,
                                         Place::kRepeated,
                                         Place::kRepeatedNested, Place::kMap,
                                         Place::kMapOfMessages, Place::kOneof,
                                         Place::kOptional),
                       ::testing::Values(size_t{0}, kT - 1, kT, kT + 1,
                                         size_t{1} << 20, size_t{16} << 20)),
    [](const auto& param_info) {
      return std::get<0>(param_info.param) + "_" +
             PlaceName(std::get<1>(param_info.param)) + "_" +
             std::to_string(std::get<2>(param_info.param));
    });

// The paths name the same field on both sides whatever a map's order.
TEST(BulkFieldsTest, ExtractThenRestoreGivesTheSameMessage) {
  rpcrdma_test::EchoRequest r;
  for (int i = 0; i < 20; ++i) {
    (*r.mutable_blobs())["key" + std::to_string(i)] = Octets(5000 + i);
    (*r.mutable_by_id())[i * 7 - 50].add_chunks(Octets(6000 + i));
  }
  const rpcrdma_test::EchoRequest original = r;
  std::vector<runtime::BulkValue> bulk = runtime::ExtractBulkFields(r, kT);
  EXPECT_EQ(bulk.size(), 40u);
  // Through the wire's order: a fresh parse of what remains.
  rpcrdma_test::EchoRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(r.SerializeAsString()));
  runtime::BulkFieldRestorer restorer(parsed);
  for (runtime::BulkValue& b : bulk) {
    ASSERT_TRUE(restorer.Restore(b).ok());
  }
  // Each map's key order once, not once per value that goes into it.
  EXPECT_EQ(restorer.key_orders_computed(), 2u);
  EXPECT_EQ(parsed.SerializeAsString().size(),
            original.SerializeAsString().size());
  for (const auto& [key, value] : original.blobs()) {
    EXPECT_EQ(parsed.blobs().at(key), value) << key;
  }
  for (const auto& [id, inner] : original.by_id()) {
    EXPECT_EQ(parsed.by_id().at(id).chunks(0), inner.chunks(0)) << id;
  }
}

}  // namespace
}  // namespace rpcrdma::test
