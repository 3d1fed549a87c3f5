// Heap allocations per call in steady state through the ONC RPC adapter:
// after a warm-up, rpcgen's NULL stub on the adapter's CLIENT, served by
// rpcgen's dispatcher on the adapter's SVCXPRT over soft+unix, client and
// server in this one process counted together, allocates only the two
// streams the public API takes by value: the call's (CallRequest::xdr)
// and the reply's (HandlerReply::xdr). Nothing of the adapter's own (its
// queue of calls, a copy of the call for a second try, its result
// buffers). A count, not a time (label `oncrpc`, as the adapter's other
// tests).
#include <rpc/rpc.h>

#include <cstdint>
#include <cstdio>

#include "gtest/gtest.h"
#include "tests/oncrpc/adapter_fixture.h"
#include "tests/testing/heap_allocations.h"

namespace rpcrdma::test {
namespace {

constexpr int kWarmUpCalls = 300;
constexpr int kCountedCalls = 1000;
// The two streams, and the rare allocation that is not the call's.
constexpr double kMostPerCall = 2.01;

class AllocationFreeCallsTest : public AdapterTest {};

TEST_P(AllocationFreeCallsTest, NullCallAllocatesOnlyTheTwoStreams) {
  CLIENT* c = client();
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < kWarmUpCalls; ++i) {
    ASSERT_EQ(testproc_null_1(nullptr, nullptr, c), RPC_SUCCESS);
  }
  const int64_t before = HeapAllocations();
  if (before < 0) GTEST_SKIP() << "heap allocations are not counted here";
  for (int i = 0; i < kCountedCalls; ++i) {
    ASSERT_EQ(testproc_null_1(nullptr, nullptr, c), RPC_SUCCESS);
  }
  const double per_call =
      static_cast<double>(HeapAllocations() - before) / kCountedCalls;
  std::printf("ONC RPC null call: %.3f heap allocations per call\n", per_call);
  EXPECT_LE(per_call, kMostPerCall);
}

INSTANTIATE_TEST_SUITE_P(SoftUnix, AllocationFreeCallsTest,
                         ::testing::Values("soft+unix"), SchemeName);

}  // namespace
}  // namespace rpcrdma::test
