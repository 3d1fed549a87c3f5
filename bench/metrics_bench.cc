// What the metrics and the log cost the loop thread per call: recording one
// latency sample (a clock read and the lock-free recorder), a log call
// below the threshold, and a scrape-side snapshot.
#include <chrono>

#include "benchmark/benchmark.h"
#include "plugin/api/latency_recorder.h"
#include "plugin/log/logging.h"

namespace rpcrdma {
namespace {

using Clock = std::chrono::steady_clock;

void BM_ClockNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Clock::now());
}
BENCHMARK(BM_ClockNow);

// Per call on the loop thread: the send time is taken, and the round trip
// recorded when the reply arrives.
void BM_RecordCallRtt(benchmark::State& state) {
  api_internal::LatencyRecorder recorder;
  for (auto _ : state) {
    const Clock::time_point sent = Clock::now();
    recorder.Record(Clock::now() - sent);
  }
  benchmark::DoNotOptimize(recorder.Snapshot().count());
}
BENCHMARK(BM_RecordCallRtt);

void BM_RecorderRecordOnly(benchmark::State& state) {
  api_internal::LatencyRecorder recorder;
  int64_t ns = 1;
  for (auto _ : state) {
    recorder.Record(std::chrono::nanoseconds(ns));
    ns = (ns * 7) & 0xFFFFFFF;
  }
  benchmark::DoNotOptimize(recorder.Snapshot().count());
}
BENCHMARK(BM_RecorderRecordOnly);

void BM_Snapshot(benchmark::State& state) {
  api_internal::LatencyRecorder recorder;
  recorder.Record(std::chrono::microseconds(5));
  for (auto _ : state) benchmark::DoNotOptimize(recorder.Snapshot());
}
BENCHMARK(BM_Snapshot);

// A log call whose severity is below the threshold: not formatted.
void BM_LogBelowThreshold(benchmark::State& state) {
  SetMinLogSeverity(LogSeverity::kWarning);
  uint64_t xid = 0;
  for (auto _ : state) {
    RPCRDMA_LOG(kInfo, 1, "call ", ++xid, " done");
  }
  benchmark::DoNotOptimize(xid);
}
BENCHMARK(BM_LogBelowThreshold);

}  // namespace
}  // namespace rpcrdma

BENCHMARK_MAIN();
