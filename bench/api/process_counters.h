// What a call costs the process beyond time, for the API benchmark:
// system calls (every thread of the process, both sides of a call when
// client and server share it), context switches and heap allocations.
#ifndef RPCRDMA_BENCH_API_PROCESS_COUNTERS_H_
#define RPCRDMA_BENCH_API_PROCESS_COUNTERS_H_

#include <cstdint>
#include <vector>

#include "tests/testing/heap_allocations.h"

namespace rpcrdma::bench {

// Heap allocations made by the process so far; -1 when not counted.
using ::rpcrdma::test::HeapAllocations;

class ProcessCounters {
 public:
  struct Delta {
    // -1: not available on this machine (no perf tracepoints).
    double syscalls = -1;
    double context_switches = 0;
    double allocations = -1;
  };

  // Opens a system-call counter on every thread of the process now (a
  // thread started later is not counted) and reads the others.
  void Start();
  // What happened since Start(), divided by `operations`.
  Delta Stop(uint64_t operations);

 private:
  uint64_t ReadSyscalls() const;
  std::vector<int> counters_;  // perf event descriptors, one per thread
  uint64_t syscalls_ = 0;
  int64_t switches_ = 0;
  int64_t allocations_ = 0;
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_PROCESS_COUNTERS_H_
