// Sanitizer builds: the allocator is the sanitizer's, and not counted.
#include "bench/api/process_counters.h"

namespace rpcrdma::bench {
int64_t HeapAllocations() { return -1; }
}  // namespace rpcrdma::bench
