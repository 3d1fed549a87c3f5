// Counts the process's heap allocations by standing in for glibc's malloc
// family (operator new calls malloc). Linked only where no sanitizer
// replaces the allocator (tests/testing/CMakeLists.txt).
#include "tests/testing/heap_allocations.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {
std::atomic<int64_t> allocations{0};
// Zero-initialised and in the executable: reading it allocates nothing.
thread_local bool uncounted = false;
void Count() {
  if (!uncounted) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}

namespace rpcrdma::test {

int64_t HeapAllocations() {
  return allocations.load(std::memory_order_relaxed);
}

NotCounted::NotCounted() : was_counted_(!uncounted) { uncounted = true; }
NotCounted::~NotCounted() {
  if (was_counted_) uncounted = false;
}

}  // namespace rpcrdma::test
