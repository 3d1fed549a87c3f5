// Bulk binaries: binaries of every size from 0 to 64 MiB, around
// every threshold the bridge has (the 4096-octet inline threshold and bulk
// threshold, the inline budget of a message, powers of two of the write
// chunks a method learns, 16 MiB), both ways, one binary or several in a
// message, over soft+unix and soft+tcp. Arguments travel as read chunks
// (RFC 8166 §3.4.5) and results in write chunks (§3.4.7): the counters
// say so.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
#ifdef RPCRDMA_THRIFT_TEST_VERBS
// The VM has little memory and an emulated CPU: up to 16 MiB there.
constexpr size_t kLargest = 16 * kMiB + 1;
#else
constexpr size_t kLargest = 64 * kMiB;
#endif

std::vector<size_t> EverySize() {
  std::vector<size_t> sizes = {0, 1, 3, 4, 5};
  for (size_t around : {size_t{1024}, size_t{3584}, size_t{4096}, size_t{8192},
                        size_t{65536}, kMiB, 16 * kMiB}) {
    sizes.push_back(around - 1);
    sizes.push_back(around);
    sizes.push_back(around + 1);
  }
  if (kLargest > 16 * kMiB + 1) sizes.push_back(kLargest);
  return sizes;
}

class Bulk : public ::testing::TestWithParam<Setup> {};

TEST_P(Bulk, EchoesEverySizeFromZeroTo64MiB) {
  std::unique_ptr<TestServer> server = TestServer::Start(GetParam());
  std::unique_ptr<TestClient> client =
      TestClient::Connect(GetParam(), server->uri());
  for (size_t size : EverySize()) {
    const std::string data = Pattern(size, static_cast<uint8_t>(size * 7));
    std::string echoed;
    client->store->echo(echoed, data);
    ASSERT_EQ(echoed.size(), size);
    ASSERT_TRUE(echoed == data) << size;
  }
  const Counters c = client->socket->counters();
  // Arguments of 4096 octets and more went as read chunks; the large
  // replies first through THRIFT_FETCH, then in write chunks offered
  // from what echo learned.
  EXPECT_GE(c.read_chunk_calls, 10u);
  EXPECT_GE(c.write_chunks, 5u);
  EXPECT_EQ(c.long_calls, 0u);
}

TEST_P(Bulk, SeveralBinariesInOneMessageBothWays) {
  std::unique_ptr<TestServer> server = TestServer::Start(GetParam());
  std::unique_ptr<TestClient> client =
      TestClient::Connect(GetParam(), server->uri());
  // More binaries than a transport header has segments for: the last item
  // gathers the rest (bridge/README.md).
  std::vector<std::string> blobs;
  std::vector<int64_t> expected;
  for (size_t i = 0; i < 12; ++i) {
    blobs.push_back(Pattern((i % 3 == 0) ? 100 : 200000 + i, uint8_t(i)));
    expected.push_back(static_cast<int64_t>(blobs.back().size()));
  }
  std::vector<int64_t> sizes;
  client->store->sizes(sizes, blobs);
  EXPECT_EQ(sizes, expected);

  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> made;
    const std::vector<int32_t> wanted = {0, 5000, 3 << 20, 12, 70000, 1 << 20};
    client->store->make(made, wanted, 0x5a);
    ASSERT_EQ(made.size(), wanted.size());
    for (size_t i = 0; i < wanted.size(); ++i) {
      EXPECT_EQ(made[i], std::string(static_cast<size_t>(wanted[i]), 0x5a));
    }
  }
  // A struct full of binaries, nested.
  const Everything value = FullValue(3 << 20);
  Everything back;
  client->store->roundTrip(back, value);
  EXPECT_TRUE(back == value);
}

std::vector<Setup> BulkSetups() {
  std::vector<Setup> all;
  for (Fabric f : TestFabrics()) {
    all.push_back(
        {ServerKind::kRdma, ProtocolKind::kBinary, Wrapper::kPlain, f});
    all.push_back(
        {ServerKind::kSimple, ProtocolKind::kCompact, Wrapper::kPlain, f});
  }
#ifndef RPCRDMA_THRIFT_TEST_VERBS
  all.push_back({ServerKind::kThreaded, ProtocolKind::kBinary,
                 Wrapper::kBuffered, TestFabrics().front()});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Thrift, Bulk, ::testing::ValuesIn(BulkSetups()),
                         SetupName);

// Framed and header transports carry a whole message as one write: it
// becomes one bulk item, up to 64 MiB.
class BulkWrapped : public ::testing::TestWithParam<Setup> {};

TEST_P(BulkWrapped, EchoesUpTo64MiB) {
  std::unique_ptr<TestServer> server = TestServer::Start(GetParam());
  std::unique_ptr<TestClient> client =
      TestClient::Connect(GetParam(), server->uri());
  for (size_t size : {size_t{0}, size_t{4097}, kMiB + 1, kLargest}) {
    const std::string data = Pattern(size, 3);
    std::string echoed;
    client->store->echo(echoed, data);
    ASSERT_TRUE(echoed == data) << size;
  }
}

std::vector<Setup> WrappedSetups() {
  std::vector<Setup> all = {{ServerKind::kRdma, ProtocolKind::kBinary,
                             Wrapper::kFramed, TestFabrics().front()},
                            {ServerKind::kThreadPool, ProtocolKind::kHeader,
                             Wrapper::kPlain, TestFabrics().front()}};
#ifndef RPCRDMA_THRIFT_TEST_VERBS
  all.push_back({ServerKind::kRdma, ProtocolKind::kJson, Wrapper::kPlain,
                 TestFabrics().back()});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Thrift, BulkWrapped,
                         ::testing::ValuesIn(WrappedSetups()), SetupName);

}  // namespace
}  // namespace rpcrdma::test
