// A console reporter for benchmarks compared in one run: after Google
// Benchmark's own rows it prints, per row, the minimum and median real time
// over its repetitions, and the ratio of each to the same statistic of the
// baselines of its group (a row's time divided by the baseline's: below 1
// is faster). Only ratios between rows of one run are meaningful; a
// machine's speed moves them all alike.
#ifndef RPCRDMA_BENCH_API_RATIO_REPORTER_H_
#define RPCRDMA_BENCH_API_RATIO_REPORTER_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rpcrdma::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // A group is a benchmark name's first component plus its arguments
  // ("NullCall", "Echo/1048576"); `baselines` maps a first component to
  // the rows (the rest of the name) every row of its groups is compared
  // with.
  explicit RatioReporter(
      std::map<std::string, std::vector<std::string>> baselines);

  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  struct Row {
    std::string family;          // "NullCall"
    std::string group;           // "NullCall" or "Echo/1048576"
    std::string name;            // "thrift_buffered"
    int64_t family_index = 0;    // registration order of the benchmark
    int64_t instance_index = 0;  // which of its arguments
    std::vector<double> times;   // real time per iteration, one per repetition
  };
  Row* Find(const std::string& group, const std::string& name);

  std::map<std::string, std::vector<std::string>> baselines_;
  std::vector<Row> rows_;  // in the order they were first reported
};

}  // namespace rpcrdma::bench

#endif  // RPCRDMA_BENCH_API_RATIO_REPORTER_H_
