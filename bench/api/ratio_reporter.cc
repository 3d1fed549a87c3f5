#include "bench/api/ratio_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <ostream>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace rpcrdma::bench {
namespace {

double Min(std::vector<double> v) {
  return *std::min_element(v.begin(), v.end());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Duration(double ns) {
  if (ns >= 1e6) return absl::StrFormat("%.2f ms", ns / 1e6);
  if (ns >= 1e3) return absl::StrFormat("%.2f us", ns / 1e3);
  return absl::StrFormat("%.0f ns", ns);
}

double Nanoseconds(const benchmark::BenchmarkReporter::Run& run) {
  return run.GetAdjustedRealTime() /
         benchmark::GetTimeUnitMultiplier(run.time_unit) * 1e9;
}

}  // namespace

RatioReporter::RatioReporter(
    std::map<std::string, std::vector<std::string>> baselines)
    // Colour only on a terminal: a file or a pipe gets plain text.
    : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_Defaults : OO_Tabular),
      baselines_(std::move(baselines)) {}

RatioReporter::Row* RatioReporter::Find(const std::string& group,
                                        const std::string& name) {
  for (Row& row : rows_) {
    if (row.group == group && row.name == name) return &row;
  }
  return nullptr;
}

void RatioReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
    const std::string& function = run.run_name.function_name;
    const size_t slash = function.find('/');
    if (slash == std::string::npos) continue;
    const std::string family = function.substr(0, slash);
    const std::string name = function.substr(slash + 1);
    const std::string group =
        run.run_name.args.empty() ? family : family + "/" + run.run_name.args;
    Row* row = Find(group, name);
    if (row == nullptr) {
      rows_.push_back(Row{family,
                          group,
                          name,
                          run.family_index,
                          run.per_family_instance_index,
                          {}});
      row = &rows_.back();
    }
    row->times.push_back(Nanoseconds(run));
  }
  ConsoleReporter::ReportRuns(runs);
}

void RatioReporter::Finalize() {
  std::ostream& out = GetOutputStream();
  out << "\nReal time per iteration over the repetitions, and its ratio to "
         "each baseline's same statistic in this run (min, median):\n";
  // Random interleaving reports rows in any order: put them back in the
  // order they were registered, a group's rows together.
  std::map<std::string, int64_t> family_order;
  for (const Row& row : rows_) {
    auto [at, added] = family_order.emplace(row.family, row.family_index);
    if (!added) at->second = std::min(at->second, row.family_index);
  }
  std::sort(rows_.begin(), rows_.end(), [&](const Row& a, const Row& b) {
    return std::tuple(family_order[a.family], a.instance_index,
                      a.family_index) <
           std::tuple(family_order[b.family], b.instance_index, b.family_index);
  });
  std::string group;
  for (const Row& row : rows_) {
    if (row.group != group) {
      group = row.group;
      out << "\n" << group << "\n";
    }
    std::string line = absl::StrFormat(
        "  %-34s n=%-3d min %-10s median %-10s", row.name, row.times.size(),
        Duration(Min(row.times)), Duration(Median(row.times)));
    auto baselines = baselines_.find(row.family);
    if (baselines != baselines_.end()) {
      for (const std::string& name : baselines->second) {
        const Row* base = Find(row.group, name);
        if (base == nullptr || base == &row) continue;
        absl::StrAppendFormat(&line, "  x%s %.2f, %.2f", name,
                              Min(row.times) / Min(base->times),
                              Median(row.times) / Median(base->times));
      }
    }
    absl::StripTrailingAsciiWhitespace(&line);
    out << line << "\n";
  }
  ConsoleReporter::Finalize();
}

}  // namespace rpcrdma::bench
