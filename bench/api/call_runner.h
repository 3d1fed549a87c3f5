// What the API benchmarks share: waiting for a callback without
// allocating, counting a call's heap allocations, the timed loop of null
// calls followed by a counted pass, and memcpy as the bulk baseline.
#ifndef RPCRDMA_BENCH_API_CALL_RUNNER_H_
#define RPCRDMA_BENCH_API_CALL_RUNNER_H_

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/api/process_counters.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::bench {

inline void SetCounters(benchmark::State& state,
                        const ProcessCounters::Delta& d, double allocations) {
  if (d.syscalls >= 0) state.counters["syscalls"] = d.syscalls;
  state.counters["ctx_switches"] = d.context_switches;
  if (allocations >= 0) state.counters["allocs_per_call"] = allocations;
}

// Waits for one call's completion; reused, so that waiting allocates
// nothing.
class Waiter {
 public:
  Channel::Callback Callback() {
    return [this](absl::StatusOr<Reply> r) {
      std::lock_guard<std::mutex> lock(mu_);
      ok_ = r.ok();
      done_ = true;
      cv_.notify_one();
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    done_ = false;
    return ok_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool ok_ = false;
};

// Counts heap allocations inside each call's window only, so that the
// request the caller builds before the call is not counted.
class AllocationWindows {
 public:
  void Open() { at_ = HeapAllocations(); }
  void Close() {
    if (at_ >= 0) total_ += HeapAllocations() - at_;
  }
  double PerCall(uint64_t calls) const {
    return at_ < 0 ? -1
                   : static_cast<double>(total_) / static_cast<double>(calls);
  }

 private:
  int64_t at_ = 0;
  int64_t total_ = 0;
};

// Times `call` (one round trip, true when it succeeded) over the
// benchmark's iterations, then counts what kCountedCalls more cost in a pass
// of its own: the system-call counters make every system call dearer, which
// would tax the implementations that make more. `call` opens its
// allocation window once its request is built.
inline constexpr int kCountedCalls = 2000;

//
// `server_allocations`, when given, reads the heap allocations of the
// server's process (another one), which get their own counter,
// server_allocs_per_call: all it allocated during the counted pass, its
// handler's reply stream included.
template <typename Call>
void RunNullCalls(benchmark::State& state, Call call,
                  int64_t (*server_allocations)() = nullptr) {
  AllocationWindows untimed;
  for (auto _ : state) {
    if (!call(untimed)) state.SkipWithError("call failed");
  }
  AllocationWindows allocations;
  ProcessCounters counters;
  const int64_t server_before =
      server_allocations != nullptr ? server_allocations() : -1;
  counters.Start();
  for (int i = 0; i < kCountedCalls; ++i) {
    call(allocations);
    allocations.Close();
  }
  SetCounters(state, counters.Stop(kCountedCalls),
              allocations.PerCall(kCountedCalls));
  const int64_t server_after =
      server_allocations != nullptr ? server_allocations() : -1;
  if (server_before >= 0 && server_after >= 0) {
    state.counters["server_allocs_per_call"] =
        static_cast<double>(server_after - server_before) / kCountedCalls;
  }
}

// The same octets copied each way: what an echo of state.range(0) octets
// costs when nothing but the copies is paid.
inline void EchoMemcpy(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> a(size, 0x5A), b(size), c(size);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), size);
    std::memcpy(c.data(), b.data(), size);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_CALL_RUNNER_H_
