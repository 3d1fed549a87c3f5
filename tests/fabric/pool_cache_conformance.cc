// Pre-registered buffer pools and the registration cache, on every
// provider: both sit on Endpoint::Register, and the data must travel
// through them exactly as through any registration.
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "plugin/fabric/registered_slot_pool.h"
#include "plugin/fabric/registration_cache.h"
#include "tests/fabric/fabric_conformance.h"

namespace rpcrdma::test {

using fabric::kRemoteWrite;
using fabric::LocalBuffer;
using fabric::RegisteredSlotPool;
using fabric::RegistrationCache;
using fabric::RemoteRegion;
using fabric::WorkStatus;

namespace {

TEST_P(FabricConformanceTest, RegisteredSlotsCarrySendsAndReceives) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  constexpr size_t kSize = 1024;
  constexpr size_t kCount = 8;
  auto rx = RegisteredSlotPool::Create(*server.endpoint, kSize, kCount);
  auto tx = RegisteredSlotPool::Create(*client.endpoint, kSize, kCount);
  ASSERT_TRUE(rx.ok()) << rx.status();
  ASSERT_TRUE(tx.ok()) << tx.status();
  std::vector<uint32_t> rx_slots, tx_slots;
  for (size_t i = 0; i < kCount; ++i) {
    rx_slots.push_back(*(*rx)->Acquire());
    tx_slots.push_back(*(*tx)->Acquire());
  }
  EXPECT_FALSE((*rx)->Acquire().has_value()) << "pool of 8 gave a ninth";
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(
        server.endpoint->PostReceive(i, (*rx)->Buffer(rx_slots[i])).ok());
  }
  for (size_t i = 0; i < kCount; ++i) {
    FillPattern((*tx)->Memory(tx_slots[i]), static_cast<uint32_t>(i + 1));
    const LocalBuffer gather = (*tx)->Buffer(tx_slots[i], 100 + i);
    ASSERT_TRUE(client.endpoint->PostSend(100 + i, {&gather, 1}).ok());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        return client.completions.size() == kCount &&
               server.completions.size() == kCount;
      },
      {&client, &server}));
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(server.completions[i].status, WorkStatus::kSuccess);
    ASSERT_EQ(server.completions[i].byte_length, 100 + i);
    EXPECT_EQ(std::memcmp((*rx)->Memory(rx_slots[i]).data(),
                          (*tx)->Memory(tx_slots[i]).data(), 100 + i),
              0)
        << "slot " << i;
  }
  (*rx)->Release(rx_slots[3]);
  EXPECT_EQ((*rx)->available(), 1u);
  EXPECT_EQ((*rx)->Acquire(), std::optional<uint32_t>(rx_slots[3]));
}

TEST_P(FabricConformanceTest, RegistrationCacheReusesCoversAndEvicts) {
  Side client, server;
  ASSERT_NO_FATAL_FAILURE(Connect(client, server));
  // Two separate page-aligned 64 KiB areas inside one allocation.
  std::vector<uint8_t> memory(3 * 65536);
  uint8_t* base = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(memory.data()) + 4095) & ~uintptr_t{4095});
  absl::Span<uint8_t> first(base, 65536);
  absl::Span<uint8_t> second(base + 65536 + 4096, 32768);

  RegistrationCache cache(*client.endpoint, /*max_bytes=*/65536);
  {
    auto a = cache.Acquire(first.subspan(100, 1000));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(cache.stats().misses, 1u);
    // Inside the same pages: a hit on the same registration.
    auto b = cache.Acquire(first.subspan(200, 500));
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(b->buffer().registration, a->buffer().registration);
    EXPECT_EQ(b->buffer().offset - a->buffer().offset, 100u);
    // Leased entries are never evicted, even over the budget.
    auto c = cache.Acquire(first);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(cache.Forget(first).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  // All idle now; the budget keeps at most 64 KiB registered.
  EXPECT_LE(cache.stats().registered_bytes, 65536u);

  // Data really moves through a cached registration: RDMA Write from it.
  FillPattern(second, 77);
  auto lease = cache.Acquire(second);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_GE(cache.stats().evictions, 1u);
  Memory target = Register(server, second.size());
  const RemoteRegion window =
      Bind(server, target.Slice(0, second.size()), kRemoteWrite, 1);
  const LocalBuffer source = lease->buffer();
  ASSERT_TRUE(client.endpoint->PostRdmaWrite(2, {&source, 1}, window).ok());
  EXPECT_EQ(WaitCompletion(client, 2, {&server}), WorkStatus::kSuccess);
  EXPECT_EQ(std::memcmp(target.bytes.data(), second.data(), second.size()), 0);
}

}  // namespace
}  // namespace rpcrdma::test
