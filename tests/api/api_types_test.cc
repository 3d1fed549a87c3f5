// The public API's value types: strong identifiers (rpcrdma/ids.h) that
// compare, hash, print and do not mix with one another or with integers,
// and reply items (rpcrdma/types.h) that are owned or lent, never both.
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash_testing.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/ids.h"
#include "rpcrdma/types.h"

namespace rpcrdma {
namespace {

// What the strong types are for: a connection cannot stand for a call, and
// neither is made from a bare integer without saying so.
static_assert(!std::is_convertible_v<uint64_t, ConnectionId>);
static_assert(!std::is_convertible_v<uint64_t, CallId>);
static_assert(!std::is_convertible_v<ConnectionId, CallId>);
static_assert(!std::is_convertible_v<CallId, ConnectionId>);
static_assert(!std::is_convertible_v<ConnectionId, uint64_t>);
static_assert(std::is_same_v<Channel::CallId, CallId>);

TEST(ApiTypesTest, DefaultIdIsNone) {
  EXPECT_EQ(ConnectionId().value(), 0u);
  EXPECT_EQ(CallId().value(), 0u);
  EXPECT_NE(ConnectionId(1), ConnectionId());
}

TEST(ApiTypesTest, IdsCompareByValue) {
  EXPECT_EQ(ConnectionId(7), ConnectionId(7));
  EXPECT_NE(ConnectionId(7), ConnectionId(8));
  EXPECT_LT(ConnectionId(7), ConnectionId(8));
  EXPECT_GT(CallId(9), CallId(2));
  EXPECT_LE(CallId(2), CallId(2));
}

TEST(ApiTypesTest, IdsHashConsistentlyWithEquality) {
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {ConnectionId(), ConnectionId(1), ConnectionId(2),
       ConnectionId(UINT64_MAX)}));
  absl::flat_hash_map<ConnectionId, int> by_connection;
  by_connection[ConnectionId(3)] = 30;
  by_connection[ConnectionId(4)] = 40;
  EXPECT_EQ(by_connection.at(ConnectionId(3)), 30);
  EXPECT_FALSE(by_connection.contains(ConnectionId(5)));
}

TEST(ApiTypesTest, IdsPrintTheirValue) {
  EXPECT_EQ(absl::StrFormat("conn %d", ConnectionId(42)), "conn 42");
  EXPECT_EQ(absl::StrFormat("%d", CallId(UINT64_MAX)), "18446744073709551615");
  std::ostringstream out;
  out << ConnectionId(5) << "/" << CallId(6);
  EXPECT_EQ(out.str(), "5/6");
}

// A reply item is made owned or lent, by a factory that says which; there
// is no empty item whose fields a user fills in (and could fill in both).
static_assert(!std::is_default_constructible_v<ReplyItem>);

TEST(ApiTypesTest, OwnedReplyItemKeepsTheVectorItWasGiven) {
  std::vector<uint8_t> octets = {1, 2, 3, 4};
  const uint8_t* storage = octets.data();
  const ReplyItem item = ReplyItem::Owned(8, std::move(octets));
  EXPECT_EQ(item.position(), 8u);
  EXPECT_FALSE(item.lent());
  EXPECT_EQ(item.bytes().data(), storage);  // moved in, not copied
  EXPECT_EQ(std::vector<uint8_t>(item.bytes().begin(), item.bytes().end()),
            (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST(ApiTypesTest, BracedReplyItemIsOwned) {
  const std::vector<ReplyItem> items = {{12, {9, 9}}};
  EXPECT_FALSE(items[0].lent());
  EXPECT_EQ(items[0].position(), 12u);
  EXPECT_EQ(items[0].bytes().size(), 2u);
}

TEST(ApiTypesTest, LentReplyItemReadsTheHandlersMemory) {
  const std::vector<uint8_t> handler_memory = {5, 6, 7};
  const ReplyItem item =
      ReplyItem::Lent(4, absl::MakeConstSpan(handler_memory));
  EXPECT_EQ(item.position(), 4u);
  EXPECT_TRUE(item.lent());
  EXPECT_EQ(item.bytes().data(), handler_memory.data());
  EXPECT_EQ(item.bytes().size(), 3u);
}

// An empty lent item is still lent: emptiness no longer decides which
// octets are sent.
TEST(ApiTypesTest, EmptyLentReplyItemIsStillLent) {
  const ReplyItem item = ReplyItem::Lent(0, {});
  EXPECT_TRUE(item.lent());
  EXPECT_TRUE(item.bytes().empty());
}

}  // namespace
}  // namespace rpcrdma
