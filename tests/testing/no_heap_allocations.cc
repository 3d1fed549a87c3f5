// Sanitizer builds: the allocator is the sanitizer's, and not counted.
#include "tests/testing/heap_allocations.h"

namespace rpcrdma::test {

int64_t HeapAllocations() { return -1; }
NotCounted::NotCounted() : was_counted_(false) {}
NotCounted::~NotCounted() = default;

}  // namespace rpcrdma::test
