// The pool behind rpcrdma::Buffer (rpcrdma/buffer.h), a process-wide cache
// of released buffers in size classes a quarter of a power of two apart
// (at most a quarter wasted), from 64 octets to 64 MiB, holding at most
// kRetainedBytes. A call's reassembly buffer and a reply's buffer then
// come back with their pages in place instead of being faulted in anew for
// every call, which cost more than moving the data.
#ifndef RPCRDMA_PLUGIN_MEMORY_BUFFER_CACHE_H_
#define RPCRDMA_PLUGIN_MEMORY_BUFFER_CACHE_H_

#include <cstddef>

namespace rpcrdma::memory_internal {

inline constexpr size_t kSmallestClass = 64;
inline constexpr size_t kLargestClass = size_t{64} << 20;
inline constexpr size_t kRetainedBytes = size_t{64} << 20;
// Buffers kept per size class.
inline constexpr size_t kRetainedPerClass = 64;

// The capacity a buffer of `size` octets gets: its class, or `size` itself
// beyond the largest class (such buffers are not pooled).
size_t CapacityFor(size_t size);
// Octets the pool holds now (for tests).
size_t RetainedBytes();
// Frees every buffer the pool holds (tests measuring memory, as they call
// malloc_trim).
void ReleaseRetainedBuffers();
// A class unused this long gives its buffers back, so that a burst of large
// calls does not keep its memory for the life of the process.
inline constexpr int kIdleClassSeconds = 5;

}  // namespace rpcrdma::memory_internal

#endif  // RPCRDMA_PLUGIN_MEMORY_BUFFER_CACHE_H_
