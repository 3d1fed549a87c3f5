// The replies an SVCXPRT keeps for a second try when they did not fit
// what their call offered (RFC 8166 §4.5.2 ERR_CHUNK): the store's bounds
// on its own, then under a client that never fetches what it made the
// server keep.
#include "oncrpc/adapter/kept_replies.h"

#include <rpc/rpc.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "oncrpc/adapter/rdma_transport.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/oncrpc/svc_rdma.h"
#include "tests/oncrpc/adapter_fixture.h"
#include "tests/oncrpc/bigresult_server.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::oncrpc {
namespace {

using Clock = KeptReplies::Clock;

CallIdentity Call(uint32_t xid, uint64_t connection = 1) {
  CallIdentity c;
  c.connection = connection;
  c.xid = xid;
  c.program = 1;
  c.procedure = 2;
  return c;
}

std::shared_ptr<CachedReply> ReplyOf(size_t octets) {
  auto r = std::make_shared<CachedReply>();
  r->xdr.assign(octets, 1);
  return r;
}

KeptReplies::Bounds Bounds(
    size_t entries, size_t bytes,
    std::chrono::seconds age = std::chrono::seconds(30)) {
  KeptReplies::Bounds b;
  b.max_entries = entries;
  b.max_bytes = bytes;
  b.max_age = age;
  return b;
}

TEST(KeptReplies, Rfc8166_4_5_2_ATakenReplyIsForgotten) {
  KeptReplies kept;
  ASSERT_TRUE(kept.Keep(Call(1), ReplyOf(10)));
  EXPECT_EQ(kept.Take(Call(2)), nullptr);
  CallIdentity other_procedure = Call(1);
  other_procedure.procedure = 3;
  EXPECT_EQ(kept.Take(other_procedure), nullptr);
  EXPECT_EQ(kept.Take(Call(1, /*connection=*/2)), nullptr);
  EXPECT_NE(kept.Take(Call(1)), nullptr);
  EXPECT_EQ(kept.Take(Call(1)), nullptr);
  EXPECT_EQ(kept.entries(), 0u);
  EXPECT_EQ(kept.bytes(), 0u);
}

TEST(KeptReplies, Rfc8166_4_5_2_TheOldestGoFirstBeyondTheEntries) {
  KeptReplies kept(Bounds(/*entries=*/3, /*bytes=*/1000));
  for (uint32_t xid = 1; xid <= 5; ++xid) {
    ASSERT_TRUE(kept.Keep(Call(xid), ReplyOf(10)));
  }
  EXPECT_EQ(kept.entries(), 3u);
  EXPECT_EQ(kept.Take(Call(2)), nullptr);
  EXPECT_NE(kept.Take(Call(3)), nullptr);
}

TEST(KeptReplies, Rfc8166_4_5_2_TheOldestGoFirstBeyondTheOctets) {
  KeptReplies kept(Bounds(/*entries=*/100, /*bytes=*/100));
  ASSERT_TRUE(kept.Keep(Call(1), ReplyOf(60)));
  ASSERT_TRUE(kept.Keep(Call(2), ReplyOf(60)));
  EXPECT_EQ(kept.entries(), 1u);
  EXPECT_EQ(kept.bytes(), 60u);
  EXPECT_EQ(kept.Take(Call(1)), nullptr);
  // One reply over the bound is not kept at all.
  EXPECT_FALSE(kept.Keep(Call(3), ReplyOf(101)));
  EXPECT_EQ(kept.bytes(), 60u);
}

TEST(KeptReplies, Rfc8166_4_5_2_AReplyNotFetchedInTimeIsForgotten) {
  KeptReplies kept(Bounds(10, 1000, std::chrono::seconds(5)));
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(kept.Keep(Call(1), ReplyOf(10), start));
  ASSERT_TRUE(kept.Keep(Call(2), ReplyOf(10), start + std::chrono::seconds(4)));
  EXPECT_EQ(kept.Take(Call(1), start + std::chrono::seconds(6)), nullptr);
  EXPECT_EQ(kept.entries(), 1u);
  EXPECT_NE(kept.Take(Call(2), start + std::chrono::seconds(6)), nullptr);
}

TEST(KeptReplies, Rfc8166_4_5_2_AClosedConnectionTakesItsRepliesAlong) {
  KeptReplies kept;
  ASSERT_TRUE(kept.Keep(Call(1, 7), ReplyOf(10)));
  ASSERT_TRUE(kept.Keep(Call(2, 8), ReplyOf(10)));
  kept.Closed(7);
  EXPECT_EQ(kept.entries(), 1u);
  EXPECT_EQ(kept.bytes(), 10u);
  EXPECT_NE(kept.Take(Call(2, 8)), nullptr);
}

TEST(KeptReplies, Rfc8166_4_5_2_TheSameCallIsKeptOnce) {
  KeptReplies kept;
  ASSERT_TRUE(kept.Keep(Call(1), ReplyOf(10)));
  ASSERT_TRUE(kept.Keep(Call(1), ReplyOf(20)));
  EXPECT_EQ(kept.entries(), 1u);
  EXPECT_EQ(kept.bytes(), 20u);
}

// A client that makes the server keep reply after reply (calls whose
// results exceed the reply chunk they offer) and never fetches one.
class KeptRepliesHostileTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<SVCXPRT*> xprt =
        CreateServerTransport(test::ListenUri(GetParam()), AdapterConfig{});
    ASSERT_TRUE(xprt.ok()) << xprt.status();
    xprt_ = *xprt;
    ASSERT_TRUE(svc_reg(xprt_, BIGRESULT, BIGRESULT_V1, bigresult_1, nullptr));
    ASSERT_TRUE(svc_rdma_run_threads(xprt_, 2));
  }
  void TearDown() override {
    if (xprt_ == nullptr) return;
    svc_unreg(BIGRESULT, BIGRESULT_V1);
    svc_destroy(xprt_);
  }
  KeptReplies& kept() { return RdmaTransport::Of(xprt_)->kept_replies(); }

  SVCXPRT* xprt_ = nullptr;
};

// BIGRESULT_GET of `size` octets (RFC 5531 §9 call_body, AUTH_NONE).
std::vector<uint8_t> GetCall(uint32_t xid, uint32_t size) {
  std::vector<uint8_t> call;
  for (uint32_t word :
       {xid, uint32_t{CALL}, uint32_t{RPC_MSG_VERSION}, uint32_t{BIGRESULT},
        uint32_t{BIGRESULT_V1}, uint32_t{BIGRESULT_GET}, uint32_t{AUTH_NONE},
        0u, uint32_t{AUTH_NONE}, 0u, size}) {
    test::AppendWord(call, word);
  }
  return call;
}

TEST_P(KeptRepliesHostileTest,
       Rfc8166_4_5_2_RepliesNeverFetchedStayWithinTheBounds) {
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create(svc_rdma_uri(xprt_), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  const KeptReplies::Bounds bounds;
  // More calls than the store keeps entries, and more octets than it
  // keeps: each 1 MiB result is kept, none fetched.
  const uint32_t calls = static_cast<uint32_t>(bounds.max_entries) + 16;
  for (uint32_t xid = 1; xid <= calls; ++xid) {
    CallRequest request;
    request.xdr = GetCall(xid, 1u << 20);
    request.max_reply_size = 4096;
    absl::StatusOr<Reply> reply = (*channel)->BlockingCall(std::move(request));
    ASSERT_FALSE(reply.ok()) << xid;
    EXPECT_NE(reply.status().message().find("ERR_CHUNK"), std::string::npos)
        << reply.status();
    EXPECT_LE(kept().entries(), bounds.max_entries);
    EXPECT_LE(kept().bytes(), bounds.max_bytes);
  }
  EXPECT_GT(kept().entries(), 0u);
  // Gone with the connection.
  channel->reset();
  for (int i = 0; i < 3000 && kept().entries() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(kept().entries(), 0u);
  EXPECT_EQ(kept().bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, KeptRepliesHostileTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         test::SchemeName);

}  // namespace
}  // namespace rpcrdma::oncrpc
