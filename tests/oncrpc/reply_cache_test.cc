// The adapter's duplicate request cache (svc_rdma_enablecache): what it
// keeps, for how long, and how calls are told apart.
#include "oncrpc/adapter/reply_cache.h"

#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace rpcrdma::oncrpc {
namespace {

CallIdentity Call(uint32_t xid, uint64_t connection = 1,
                  std::string address = "client") {
  CallIdentity c;
  c.connection = connection;
  c.address = std::move(address);
  c.xid = xid;
  c.program = 1;
  return c;
}

// For calls that are not parked: a waiter that must never be made.
ReplyCache::Waiter NoWaiter() {
  ADD_FAILURE() << "a call that is not a duplicate was parked";
  return nullptr;
}
const auto kNoWaiter = &NoWaiter;

std::shared_ptr<CachedReply> ReplyOf(size_t octets) {
  auto r = std::make_shared<CachedReply>();
  r->xdr.assign(octets, 1);
  return r;
}

TEST(ReplyCache, KeepsTheNewestEntriesItHasRoomFor) {
  ReplyCache cache(/*max_entries=*/2, /*max_bytes=*/1000);
  for (uint32_t xid : {1u, 2u, 3u}) {
    ASSERT_TRUE(cache.Begin(Call(xid), kNoWaiter).execute);
    cache.Complete(Call(xid), ReplyOf(10));
  }
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_TRUE(cache.Begin(Call(1), kNoWaiter).execute);  // evicted: runs again
  EXPECT_NE(cache.Begin(Call(3), kNoWaiter).reply, nullptr);
  EXPECT_EQ(cache.hits(), 1u);
}

TEST(ReplyCache, BoundsTheOctetsItKeeps) {
  ReplyCache cache(/*max_entries=*/100, /*max_bytes=*/100);
  ASSERT_TRUE(cache.Begin(Call(1), kNoWaiter).execute);
  cache.Complete(Call(1), ReplyOf(60));
  ASSERT_TRUE(cache.Begin(Call(2), kNoWaiter).execute);
  cache.Complete(Call(2), ReplyOf(60));  // the first goes
  EXPECT_TRUE(cache.Begin(Call(1), kNoWaiter).execute);
  EXPECT_NE(cache.Begin(Call(2), kNoWaiter).reply, nullptr);
  // A reply larger than the whole cache is not kept at all.
  ASSERT_TRUE(cache.Begin(Call(3), kNoWaiter).execute);
  cache.Complete(Call(3), ReplyOf(101));
  EXPECT_TRUE(cache.Begin(Call(3), kNoWaiter).execute);
}

TEST(ReplyCache, CallsInProgressAreNeverEvicted) {
  ReplyCache cache(/*max_entries=*/1, /*max_bytes=*/1000);
  ASSERT_TRUE(cache.Begin(Call(1), kNoWaiter).execute);
  ASSERT_TRUE(cache.Begin(Call(2), kNoWaiter).execute);
  size_t answered = 0;
  auto counting = [&] {
    return ReplyCache::Waiter([&](std::shared_ptr<const CachedReply> reply) {
      answered += reply->bytes();
    });
  };
  const ReplyCache::Lookup parked = cache.Begin(Call(1), counting);
  EXPECT_FALSE(parked.execute);
  EXPECT_EQ(parked.reply, nullptr);
  std::vector<ReplyCache::Waiter> waiting = cache.Complete(Call(1), ReplyOf(5));
  ASSERT_EQ(waiting.size(), 1u);
  waiting[0](ReplyOf(5));
  EXPECT_EQ(answered, 5u);
  // Abandoned calls are forgotten, and so are their duplicates.
  (void)cache.Begin(Call(2), counting);
  EXPECT_EQ(cache.Abandon(Call(2)).size(), 1u);
  EXPECT_TRUE(cache.Begin(Call(2), kNoWaiter).execute);
}

TEST(ReplyCache, OnlyTheProceduresNamedWhenSomeAre) {
  ReplyCache cache(10, 1000);
  EXPECT_TRUE(cache.Caches(7, 1, 3));
  const uint32_t procedures[] = {2, 3};
  cache.Only(7, 1, procedures);
  EXPECT_TRUE(cache.Caches(7, 1, 3));
  EXPECT_FALSE(cache.Caches(7, 1, 4));
  EXPECT_FALSE(cache.Caches(7, 2, 3));
}

template <typename T>
absl::Span<const uint8_t> SpanOf(const T& address) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&address),
                             sizeof address);
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000001);
  a.sin_port = htons(port);
  return a;
}

TEST(CallIdentity, EveryArgumentOctetCounts) {
  const sockaddr_in a = Loopback(1000);
  std::vector<uint8_t> args(1000, 5), tail_differs = args;
  tail_differs[900] = 6;
  EXPECT_EQ(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args),
            IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args));
  // Past the 256 octets nfsd's checksum covers.
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, tail_differs));
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(1, SpanOf(a), 9, 1, 1, 3, args));
}

// The address without the port: a client that reconnects has a new port.
TEST(CallIdentity, TheAddressIsKeptWithoutItsPort) {
  const std::vector<uint8_t> args(300, 5);
  EXPECT_EQ(IdentifyCall(1, SpanOf(Loopback(1000)), 9, 1, 1, 2, args).address,
            IdentifyCall(2, SpanOf(Loopback(2000)), 9, 1, 1, 2, args).address);
  sockaddr_in other = Loopback(1000);
  other.sin_addr.s_addr = htonl(0x7f000002);
  EXPECT_NE(IdentifyCall(1, SpanOf(Loopback(1000)), 9, 1, 1, 2, args).address,
            IdentifyCall(1, SpanOf(other), 9, 1, 1, 2, args).address);
  sockaddr_in6 a{}, b{};
  a.sin6_family = b.sin6_family = AF_INET6;
  a.sin6_addr = b.sin6_addr = in6addr_loopback;
  a.sin6_port = htons(1000);
  b.sin6_port = htons(2000);
  EXPECT_EQ(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args).address,
            IdentifyCall(2, SpanOf(b), 9, 1, 1, 2, args).address);
  EXPECT_NE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args).address,
            IdentifyCall(1, SpanOf(Loopback(1000)), 9, 1, 1, 2, args).address);
  // A Unix-domain client has no name, nor has an unknown one.
  sockaddr_un unnamed{};
  unnamed.sun_family = AF_UNIX;
  EXPECT_EQ(IdentifyCall(1, SpanOf(unnamed), 9, 1, 1, 2, args).address, "");
  EXPECT_EQ(IdentifyCall(1, {}, 9, 1, 1, 2, args).address, "");
}

// While the connection of an entry is open, only that connection has its
// reply: two clients open at once, at one address, with the same call.
TEST(ReplyCache, AnOpenConnectionsRepliesAreItsOwn) {
  ReplyCache cache(10, 1000);
  cache.Opened(1);
  cache.Opened(2);
  ASSERT_TRUE(cache.Begin(Call(7, 1, ""), kNoWaiter).execute);
  cache.Complete(Call(7, 1, ""), ReplyOf(10));
  EXPECT_TRUE(cache.Begin(Call(7, 2, ""), kNoWaiter).execute);
  cache.Complete(Call(7, 2, ""), ReplyOf(20));
  EXPECT_EQ(cache.Begin(Call(7, 1, ""), kNoWaiter).reply->bytes(), 10u);
  EXPECT_EQ(cache.Begin(Call(7, 2, ""), kNoWaiter).reply->bytes(), 20u);
  EXPECT_EQ(cache.hits(), 2u);
}

// Once the connection has closed, the same call from its address on a new
// connection is its retransmission; from another address it is not.
TEST(ReplyCache, AClosedConnectionsRepliesGoToItsAddress) {
  ReplyCache cache(10, 1000);
  cache.Opened(1);
  ASSERT_TRUE(cache.Begin(Call(7, 1, "a"), kNoWaiter).execute);
  cache.Complete(Call(7, 1, "a"), ReplyOf(10));
  cache.Opened(2);
  EXPECT_TRUE(cache.Begin(Call(7, 2, "b"), kNoWaiter).execute);
  cache.Abandon(Call(7, 2, "b"));
  cache.Closed(1);
  cache.Opened(3);
  const ReplyCache::Lookup again = cache.Begin(Call(7, 3, "a"), kNoWaiter);
  EXPECT_FALSE(again.execute);
  ASSERT_NE(again.reply, nullptr);
  EXPECT_EQ(again.reply->bytes(), 10u);
  EXPECT_TRUE(cache.Begin(Call(7, 2, "b"), kNoWaiter).execute);
}

// A call still running when its connection is lost: its retransmission on
// the new connection waits for its reply.
TEST(ReplyCache, ARetransmissionWaitsForTheCallOfALostConnection) {
  ReplyCache cache(10, 1000);
  cache.Opened(1);
  ASSERT_TRUE(cache.Begin(Call(7, 1, "a"), kNoWaiter).execute);
  cache.Closed(1);
  cache.Opened(2);
  bool answered = false;
  const ReplyCache::Lookup parked = cache.Begin(Call(7, 2, "a"), [&] {
    return ReplyCache::Waiter(
        [&](std::shared_ptr<const CachedReply>) { answered = true; });
  });
  EXPECT_FALSE(parked.execute);
  std::vector<ReplyCache::Waiter> waiting =
      cache.Complete(Call(7, 1, "a"), ReplyOf(5));
  ASSERT_EQ(waiting.size(), 1u);
  waiting[0](ReplyOf(5));
  EXPECT_TRUE(answered);
}

// A call dispatched after its connection closed (its reply goes nowhere)
// repeats what its retransmission on an open connection already ran.
TEST(ReplyCache, ACallOfAClosedConnectionRunsNoSecondTime) {
  ReplyCache cache(10, 1000);
  cache.Opened(1);
  cache.Closed(1);
  cache.Opened(2);
  ASSERT_TRUE(cache.Begin(Call(7, 2, "a"), kNoWaiter).execute);
  cache.Complete(Call(7, 2, "a"), ReplyOf(5));
  EXPECT_FALSE(cache.Begin(Call(7, 1, "a"), kNoWaiter).execute);
  // Another address's call is another call.
  EXPECT_TRUE(cache.Begin(Call(7, 1, "b"), kNoWaiter).execute);
}

}  // namespace
}  // namespace rpcrdma::oncrpc
