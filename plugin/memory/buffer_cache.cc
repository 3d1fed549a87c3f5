#include "plugin/memory/buffer_cache.h"

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "rpcrdma/buffer.h"

namespace rpcrdma::memory_internal {
namespace {

// Classes: 64 octets, then four per power of two (2^e, 1.25, 1.5 and
// 1.75 times it) up to kLargestClass.
constexpr int kLowestExponent = 6;    // 64
constexpr int kHighestExponent = 26;  // 64 MiB
constexpr size_t kClasses =
    1 + 4 * static_cast<size_t>(kHighestExponent - kLowestExponent);

struct SizeClass {
  int index = -1;  // -1: beyond the largest class, not pooled
  size_t capacity = 0;
};

SizeClass ClassFor(size_t size) {
  if (size <= kSmallestClass) return {0, kSmallestClass};
  if (size > kLargestClass) return {-1, size};
  const int exponent = static_cast<int>(std::bit_width(size - 1)) - 1;
  const size_t base = size_t{1} << exponent;  // base < size <= 2 * base
  const size_t quarter = base / 4;
  const size_t steps = (size - base + quarter - 1) / quarter;  // 1..4
  return {1 + 4 * (exponent - kLowestExponent) + static_cast<int>(steps) - 1,
          base + steps * quarter};
}

struct Class {
  std::vector<uint8_t*> free;
  size_t capacity = 0;   // of each buffer in `free`
  int64_t last_use = 0;  // seconds on the steady clock
};

struct Pool {
  std::mutex mu;
  std::array<Class, kClasses> classes;
  size_t retained = 0;
  int64_t last_sweep = 0;
};

// Never destroyed: Buffers may be released during static destruction.
Pool& GetPool() {
  static Pool* pool = new Pool;
  return *pool;
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Takes the buffers of `c` out of the pool (pool.mu held) into `out`, to be
// freed once the lock is let go.
void Drain(Pool& pool, Class& c, std::vector<uint8_t*>& out) {
  out.insert(out.end(), c.free.begin(), c.free.end());
  pool.retained -= c.free.size() * c.capacity;
  c.free.clear();
}

// Classes unused for kIdleClassSeconds give their buffers back; looked at
// no more than once a second (pool.mu held).
void SweepIdleClasses(Pool& pool, int64_t now, std::vector<uint8_t*>& out) {
  if (now == pool.last_sweep) return;
  pool.last_sweep = now;
  for (Class& c : pool.classes) {
    if (!c.free.empty() && now - c.last_use >= kIdleClassSeconds) {
      Drain(pool, c, out);
    }
  }
}

void Free(const std::vector<uint8_t*>& buffers) {
  for (uint8_t* data : buffers) delete[] data;
}

}  // namespace

size_t CapacityFor(size_t size) { return ClassFor(size).capacity; }

size_t RetainedBytes() {
  Pool& pool = GetPool();
  std::lock_guard<std::mutex> lock(pool.mu);
  return pool.retained;
}

void ReleaseRetainedBuffers() {
  std::vector<uint8_t*> freed;
  {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    for (Class& c : pool.classes) Drain(pool, c, freed);
  }
  Free(freed);
}

uint8_t* AllocateBuffer(size_t size, size_t& capacity) {
  const SizeClass k = ClassFor(size);
  capacity = k.capacity;
  if (k.index >= 0) {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    Class& c = pool.classes[static_cast<size_t>(k.index)];
    c.last_use = NowSeconds();
    if (!c.free.empty()) {
      uint8_t* data = c.free.back();
      c.free.pop_back();
      pool.retained -= capacity;
      return data;
    }
  }
  return new uint8_t[capacity];
}

void ReleaseBuffer(uint8_t* data, size_t capacity) {
  // A capacity ClassFor gave is its own class.
  const SizeClass k = ClassFor(capacity);
  std::vector<uint8_t*> idle;
  bool kept = false;
  if (k.index >= 0) {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    Class& c = pool.classes[static_cast<size_t>(k.index)];
    const int64_t now = NowSeconds();
    c.last_use = now;
    SweepIdleClasses(pool, now, idle);
    if (pool.retained + capacity <= kRetainedBytes &&
        c.free.size() < kRetainedPerClass) {
      if (c.free.capacity() == 0) c.free.reserve(kRetainedPerClass);
      c.free.push_back(data);
      c.capacity = capacity;
      pool.retained += capacity;
      kept = true;
    }
  }
  Free(idle);
  if (!kept) delete[] data;
}

}  // namespace rpcrdma::memory_internal
