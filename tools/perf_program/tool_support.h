// What rpcrdma-ping and rpcrdma-perf share besides their RPC program: the
// command line, latency summaries and how a connection's settled
// parameters are shown.
#ifndef RPCRDMA_TOOLS_PERF_PROGRAM_TOOL_SUPPORT_H_
#define RPCRDMA_TOOLS_PERF_PROGRAM_TOOL_SUPPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/types.h"
#include "tools/flags/set_flags.h"

namespace rpcrdma::tools {

// Exit statuses of both tools.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // no connection, or a call failed
constexpr int kExitUsage = 2;

// The configuration in the text-format file `path`, or the defaults when
// `path` is empty.
absl::StatusOr<config::TransportConfig> LoadConfig(const std::string& path);

// Bounds `config`'s connect timeout (timeouts.connect_ms, 60 s by default)
// by a tool's --timeout, rounded up to whole milliseconds: a user who asks
// for 2 s expects no wait longer than that, connecting included. A shorter
// connect_ms from the file stays.
void BoundConnect(std::chrono::nanoseconds timeout,
                  config::TransportConfig& config);

// Round-trip times in nanoseconds, summarised. Percentiles are exact (the
// sample at rank ceil(q * count)).
struct LatencySummary {
  uint64_t count = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double avg_ns = 0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p99_ns = 0;
  int64_t p999_ns = 0;
};
// Sorts `samples_ns`.
LatencySummary Summarize(std::vector<int64_t>& samples_ns);
// Microseconds with three decimals, for JSON and text alike.
double Microseconds(double nanoseconds);
nlohmann::json LatencyJson(const LatencySummary& summary);

// What the connection settled (RFC 8797 private data, inline thresholds,
// remote invalidation, protocol version), as indented text lines and as
// JSON.
std::string ConnectionInfoText(const ConnectionInfo& info);
nlohmann::json ConnectionInfoJson(const ConnectionInfo& info);

}  // namespace rpcrdma::tools

#endif  // RPCRDMA_TOOLS_PERF_PROGRAM_TOOL_SUPPORT_H_
