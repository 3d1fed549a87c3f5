// The pool behind rpcrdma::Buffer: size classes, reuse of released memory,
// and the bound on what it keeps (label `engine`, with the engine that
// makes Buffers).
#include "plugin/memory/buffer_cache.h"

#include <vector>

#include "gtest/gtest.h"
#include "rpcrdma/buffer.h"

namespace rpcrdma::memory_internal {
namespace {

TEST(BufferCache, ClassesWasteAtMostAQuarter) {
  EXPECT_EQ(CapacityFor(1), kSmallestClass);
  EXPECT_EQ(CapacityFor(64), 64u);
  EXPECT_EQ(CapacityFor(65), 80u);  // 64 + 16
  EXPECT_EQ(CapacityFor(1u << 20), 1u << 20);
  EXPECT_EQ(CapacityFor((1u << 20) + 1), (1u << 20) + (1u << 18));
  EXPECT_EQ(CapacityFor((16u << 20) + 4096), (20u << 20));
  for (size_t size = 1; size < (1u << 22); size = size * 3 / 2 + 7) {
    const size_t capacity = CapacityFor(size);
    EXPECT_GE(capacity, size);
    EXPECT_LE(capacity, size + size / 4 + kSmallestClass) << size;
  }
  // Beyond the largest class a buffer is its own size, and not pooled.
  EXPECT_EQ(CapacityFor(kLargestClass + 1), kLargestClass + 1);
}

TEST(BufferCache, ReleasedMemoryIsReused) {
  const uint8_t* first;
  {
    Buffer a(100000);
    first = a.data();
  }
  Buffer b(99000);  // the same class
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(b.size(), 99000u);
}

TEST(BufferCache, KeepsAtMostItsBound) {
  {
    std::vector<Buffer> many;
    for (int i = 0; i < 8; ++i) many.emplace_back(size_t{32} << 20);
  }  // 256 MiB released
  EXPECT_LE(RetainedBytes(), kRetainedBytes);
  {
    Buffer huge(kLargestClass + 1);  // never pooled
    huge[0] = 1;
  }
  EXPECT_LE(RetainedBytes(), kRetainedBytes);
}

TEST(BufferCache, ReleaseRetainedBuffersEmptiesIt) {
  { Buffer a(4096); }
  EXPECT_GT(RetainedBytes(), 0u);
  ReleaseRetainedBuffers();
  EXPECT_EQ(RetainedBytes(), 0u);
}

TEST(BufferCache, MovesAndCopiesKeepTheirOctets) {
  Buffer a = Buffer::CopyOf(std::vector<uint8_t>{1, 2, 3});
  Buffer b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b, (std::vector<uint8_t>{1, 2, 3}));
  Buffer c = b;
  EXPECT_EQ(c, b);
  EXPECT_NE(c.data(), b.data());
  c.Truncate(1);
  EXPECT_EQ(c, (std::vector<uint8_t>{1}));
  a = std::move(c);
  EXPECT_EQ(a, (std::vector<uint8_t>{1}));
}

}  // namespace
}  // namespace rpcrdma::memory_internal
