// The public API's value types: strong identifiers (rpcrdma/ids.h) that
// compare, hash, print and do not mix with one another or with integers.
#include <sstream>
#include <string>
#include <type_traits>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash_testing.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/ids.h"

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

}  // namespace
}  // namespace rpcrdma
