#include "tools/perf_program/tool_support.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/config.h"

namespace rpcrdma::tools {

absl::StatusOr<config::TransportConfig> LoadConfig(const std::string& path) {
  if (path.empty()) return config::TransportConfig();
  return LoadConfigFile(path);
}

void BoundConnect(std::chrono::nanoseconds timeout,
                  config::TransportConfig& config) {
  // The range config.proto allows: 1 ms to one day.
  constexpr int64_t kMaxMs = 86'400'000;
  const int64_t ms = std::clamp<int64_t>(
      std::chrono::ceil<std::chrono::milliseconds>(timeout).count(), 1, kMaxMs);
  config::Timeouts& timeouts = *config.mutable_timeouts();
  if (!timeouts.has_connect_ms() || timeouts.connect_ms() > ms) {
    timeouts.set_connect_ms(ms);
  }
}

LatencySummary Summarize(std::vector<int64_t>& samples_ns) {
  LatencySummary summary;
  if (samples_ns.empty()) return summary;
  std::sort(samples_ns.begin(), samples_ns.end());
  const size_t n = samples_ns.size();
  auto at_quantile = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    rank = std::clamp<size_t>(rank, 1, n);
    return samples_ns[rank - 1];
  };
  summary.count = n;
  summary.min_ns = samples_ns.front();
  summary.max_ns = samples_ns.back();
  summary.avg_ns = std::accumulate(samples_ns.begin(), samples_ns.end(), 0.0) /
                   static_cast<double>(n);
  summary.p50_ns = at_quantile(0.50);
  summary.p90_ns = at_quantile(0.90);
  summary.p99_ns = at_quantile(0.99);
  summary.p999_ns = at_quantile(0.999);
  return summary;
}

double Microseconds(double nanoseconds) {
  return std::round(nanoseconds) / 1000.0;
}

nlohmann::json LatencyJson(const LatencySummary& summary) {
  return {
      {"count", summary.count},
      {"min_us", Microseconds(static_cast<double>(summary.min_ns))},
      {"avg_us", Microseconds(summary.avg_ns)},
      {"max_us", Microseconds(static_cast<double>(summary.max_ns))},
      {"p50_us", Microseconds(static_cast<double>(summary.p50_ns))},
      {"p90_us", Microseconds(static_cast<double>(summary.p90_ns))},
      {"p99_us", Microseconds(static_cast<double>(summary.p99_ns))},
      {"p99_9_us", Microseconds(static_cast<double>(summary.p999_ns))},
  };
}

std::string ConnectionInfoText(const ConnectionInfo& info) {
  std::string text = absl::StrFormat("  RPC-over-RDMA version %u (offered %u)",
                                     info.version, info.offered_version);
  if (info.peer_version_high != 0) {
    absl::StrAppendFormat(&text, ", peer speaks %u..%u (ERR_VERS)",
                          info.peer_version_low, info.peer_version_high);
  }
  absl::StrAppendFormat(
      &text, "\n  inline thresholds (RFC 8797 §4.2): send %u, receive %u\n",
      info.send_threshold, info.receive_threshold);
  if (info.peer_private_data) {
    absl::StrAppendFormat(
        &text,
        "  peer private data (RFC 8797 §4): send size %u, receive size %u, "
        "R %s\n",
        info.peer_send_size, info.peer_receive_size,
        info.peer_remote_invalidation ? "set" : "clear");
  } else {
    absl::StrAppend(&text,
                    "  peer private data (RFC 8797 §4): none, thresholds "
                    "default to 1024 (§5.1)\n");
  }
  absl::StrAppendFormat(&text, "  remote invalidation (RFC 8797 §4.1): %s\n",
                        info.remote_invalidation ? "on" : "off");
  return text;
}

nlohmann::json ConnectionInfoJson(const ConnectionInfo& info) {
  nlohmann::json j = {
      {"version", info.version},
      {"offered_version", info.offered_version},
      {"send_threshold", info.send_threshold},
      {"receive_threshold", info.receive_threshold},
      {"remote_invalidation", info.remote_invalidation},
      {"peer_private_data", info.peer_private_data},
  };
  if (info.peer_private_data) {
    j["peer_send_size"] = info.peer_send_size;
    j["peer_receive_size"] = info.peer_receive_size;
    j["peer_remote_invalidation"] = info.peer_remote_invalidation;
  }
  if (info.peer_version_high != 0) {
    j["peer_version_low"] = info.peer_version_low;
    j["peer_version_high"] = info.peer_version_high;
  }
  return j;
}

}  // namespace rpcrdma::tools
