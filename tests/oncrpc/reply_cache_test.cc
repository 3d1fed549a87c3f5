// The adapter's duplicate request cache (svc_rdma_enablecache): what it
// keeps, for how long, and how calls are told apart.
#include "oncrpc/adapter/reply_cache.h"

#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace rpcrdma::oncrpc {
namespace {

CallIdentity Call(uint32_t xid) {
  CallIdentity c;
  c.client = "client";
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

TEST(CallIdentity, LateArgumentOctetsDoNotCount) {
  const sockaddr_in a = Loopback(1000);
  std::vector<uint8_t> args(1000, 5), tail_differs = args;
  tail_differs[900] = 6;
  EXPECT_EQ(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args),
            IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, tail_differs));
  std::vector<uint8_t> head_differs = args;
  head_differs[10] = 6;
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, head_differs));
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(1, SpanOf(a), 9, 1, 1, 3, args));
  sockaddr_in other = a;
  other.sin_addr.s_addr = htonl(0x7f000002);
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(1, SpanOf(other), 9, 1, 1, 2, args));
}

// Linux's nfsd keys on the whole sockaddr: every local client is
// 127.0.0.1, and only the port tells them apart. A client that reconnects
// from the port it had is the same client, whatever its connection.
TEST(CallIdentity, TheClientsPortCountsItsConnectionDoesNot) {
  const std::vector<uint8_t> args(300, 5);
  EXPECT_FALSE(IdentifyCall(1, SpanOf(Loopback(1000)), 9, 1, 1, 2, args) ==
               IdentifyCall(2, SpanOf(Loopback(2000)), 9, 1, 1, 2, args));
  EXPECT_EQ(IdentifyCall(1, SpanOf(Loopback(1000)), 9, 1, 1, 2, args),
            IdentifyCall(2, SpanOf(Loopback(1000)), 9, 1, 1, 2, args));
  sockaddr_in6 a{}, b{};
  a.sin6_family = b.sin6_family = AF_INET6;
  a.sin6_addr = b.sin6_addr = in6addr_loopback;
  a.sin6_port = htons(1000);
  b.sin6_port = htons(2000);
  EXPECT_FALSE(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args) ==
               IdentifyCall(2, SpanOf(b), 9, 1, 1, 2, args));
  EXPECT_EQ(IdentifyCall(1, SpanOf(a), 9, 1, 1, 2, args),
            IdentifyCall(2, SpanOf(a), 9, 1, 1, 2, args));
}

// Unix-domain clients have no name (each looks like the server), and a
// client whose address is unknown has none either: each connection is a
// client of its own.
TEST(CallIdentity, ClientsWithoutAnAddressAreTheirConnections) {
  const std::vector<uint8_t> args(300, 5);
  sockaddr_un unnamed{};
  unnamed.sun_family = AF_UNIX;
  EXPECT_FALSE(IdentifyCall(1, SpanOf(unnamed), 9, 1, 1, 2, args) ==
               IdentifyCall(2, SpanOf(unnamed), 9, 1, 1, 2, args));
  EXPECT_EQ(IdentifyCall(1, SpanOf(unnamed), 9, 1, 1, 2, args),
            IdentifyCall(1, SpanOf(unnamed), 9, 1, 1, 2, args));
  EXPECT_FALSE(IdentifyCall(1, {}, 9, 1, 1, 2, args) ==
               IdentifyCall(2, {}, 9, 1, 1, 2, args));
  EXPECT_EQ(IdentifyCall(3, {}, 9, 1, 1, 2, args),
            IdentifyCall(3, {}, 9, 1, 1, 2, args));
}

}  // namespace
}  // namespace rpcrdma::oncrpc
