// The exporter's /status page: what the registered Channels and Servers
// report through the public API, read once per request into a snapshot
// and rendered as one self-contained HTML page (inline CSS, server-drawn
// SVG charts, nothing fetched from elsewhere) or as JSON for scripts.
// The JSON shape is documented in docs/debugging.md ("A status page").
#ifndef RPCRDMA_PLUGIN_PROMETHEUS_STATUS_PAGE_H_
#define RPCRDMA_PLUGIN_PROMETHEUS_STATUS_PAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rpcrdma/metrics.h"
#include "rpcrdma/types.h"

namespace rpcrdma::prometheus_internal {

struct StatusConnection {
  ConnectionMetrics metrics;
  // What the connection settled; none when it went away between reading
  // the metrics and reading this.
  std::optional<ConnectionInfo> settled;
};

struct StatusSource {
  bool is_channel = false;
  // The labels given to Register, in name order.
  std::vector<std::pair<std::string, std::string>> labels;
  // A Server's URI; none for a Channel (the API does not report it).
  std::optional<std::string> uri;
  // A Channel: connected(); a Server: listening, always true.
  bool connected = true;
  Counters counters;
  std::vector<StatusConnection> connections;
};

// Calls less replies. The API reports no count of calls in flight: this
// is those plus calls that ended without a reply (failed, cancelled, lost
// with their connection). Never below zero, although a reader may see
// `replies` a moment ahead of `calls`.
inline uint64_t UnansweredCalls(const Counters& c) {
  return c.calls > c.replies ? c.calls - c.replies : 0;
}

// The JSON of /status?format=json.
std::string RenderStatusJson(const std::vector<StatusSource>& sources);
// The HTML of /status.
std::string RenderStatusHtml(const std::vector<StatusSource>& sources);

}  // namespace rpcrdma::prometheus_internal

#endif  // RPCRDMA_PLUGIN_PROMETHEUS_STATUS_PAGE_H_
