// An optional Prometheus exporter for Channels and Servers, in its own
// library (CMake target rpcrdma::prometheus, built when prometheus-cpp is
// installed; Debian: prometheus-cpp-dev). It serves the text exposition
// format over HTTP at /metrics, reading Channel::metrics() and
// Server::metrics() when scraped: nothing is copied per call.
//
// Exposed series (label `role` is "channel" or "server", plus the labels
// given to Register; histograms also carry `connection`, as in
// rpcrdma/metrics.h):
//   rpcrdma_<counter>_total          counter, one per monotonic field of
//                                    Counters (calls, replies, errors_sent...)
//   rpcrdma_credits_granted          gauge
//   rpcrdma_peak_calls_outstanding   gauge
//   rpcrdma_connections              gauge: live connections
//   rpcrdma_call_rtt_seconds         histogram per connection
//   rpcrdma_reply_time_seconds       histogram per connection
//
// Lifetime: a registered Channel or Server must be unregistered (or the
// exporter destroyed) before it is destroyed.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_PROMETHEUS_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_PROMETHEUS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"

namespace rpcrdma {

class PrometheusExporter {
 public:
  using Labels = std::map<std::string, std::string>;

  // Listens on `bind_address`, "HOST:PORT" ("127.0.0.1:0" picks a port;
  // see port()). UNAVAILABLE when it cannot listen there.
  static absl::StatusOr<std::unique_ptr<PrometheusExporter>> Create(
      const std::string& bind_address);
  // Without an HTTP listener: for applications that serve Scrape() (or
  // push it) themselves.
  static std::unique_ptr<PrometheusExporter> CreateWithoutListener();

  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;
  ~PrometheusExporter();

  // Adds the Channel's or Server's series with `labels` (names must match
  // [a-zA-Z_][a-zA-Z0-9_]* and may not be `role`, `connection` or `le`).
  // INVALID_ARGUMENT for a bad label name, ALREADY_EXISTS when registered.
  absl::Status Register(const Channel& channel, Labels labels = {});
  absl::Status Register(const Server& server, Labels labels = {});
  void Unregister(const Channel& channel);
  void Unregister(const Server& server);

  // The TCP port of the listener (0 without one).
  uint16_t port() const;
  // What a scrape of /metrics returns now.
  std::string Scrape() const;

 private:
  struct Impl;
  explicit PrometheusExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_PROMETHEUS_H_
