// Counts the heap allocations of the whole process, for the tests and
// benchmarks that hold the library to "no allocation per call". A program
// gets the counter by linking rpcrdma_heap_allocations (never the library
// itself): it stands in for glibc's malloc family, which operator new
// calls, so that every allocation on every thread is counted, the
// library's, the C++ runtime's and Abseil's alike.
#ifndef RPCRDMA_TESTS_TESTING_HEAP_ALLOCATIONS_H_
#define RPCRDMA_TESTS_TESTING_HEAP_ALLOCATIONS_H_

#include <cstdint>

namespace rpcrdma::test {

// Heap allocations made by the process so far (malloc, calloc, realloc,
// the aligned forms), except those of threads inside a NotCounted scope;
// -1 when not counted (a sanitizer build, whose allocator must not be
// wrapped).
int64_t HeapAllocations();

// While one lives, the allocations of its thread are not counted: what a
// test's own code allocates (the request it builds, its handler's reply
// stream, which the API takes by value) is the caller's cost, not the
// transport's.
class NotCounted {
 public:
  NotCounted();
  ~NotCounted();
  NotCounted(const NotCounted&) = delete;
  NotCounted& operator=(const NotCounted&) = delete;

 private:
  // Read only where the counter exists (not in sanitizer builds).
  [[maybe_unused]] bool was_counted_;
};

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_HEAP_ALLOCATIONS_H_
