// An optional Prometheus exporter for Channels and Servers, in its own
// library: librpcrdma_prometheus.so.1 (CMake: find_package(rpcrdma
// COMPONENTS prometheus), target rpcrdma::prometheus; pkg-config:
// rpcrdma-prometheus; Debian: librpcrdma-prometheus1). It serves the text
// exposition format over HTTP at /metrics, reading Channel::metrics() and
// Server::metrics() when scraped: nothing is copied per call. Beside it,
// /status is a page for people: each registered Channel and Server with
// its labels, each connection's settled parameters (connection_info()),
// counters and latency histograms drawn as charts; /status?format=json
// gives the same to scripts.
//
// The listener is safe to leave open to the hosts it serves: it listens on
// loopback unless told otherwise, one event-driven thread serves every
// connection (an idle or slow client never holds up a scrape), and
// connections are bounded in all and per peer address and closed when
// quiet (PrometheusExporterOptions).
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

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"

namespace rpcrdma {

struct PrometheusExporterOptions {
  // "PORT", "HOST:PORT" or "[IPV6]:PORT" (HOST an address or a name). A
  // bare port listens on 127.0.0.1 only: serving other hosts is the
  // operator's choice ("0.0.0.0:9100", "[::]:9100"). Port 0 picks a free
  // one (see PrometheusExporter::port()).
  std::string listen_address = "127.0.0.1:9100";
  // Connections open at once; a connection beyond either bound is closed
  // as soon as it is accepted.
  unsigned max_connections = 128;
  unsigned max_connections_per_address = 16;
  // A connection quiet for this long (no request, or a request not
  // finished) is closed.
  std::chrono::seconds idle_timeout{10};
};

class PrometheusExporter {
 public:
  using Labels = std::map<std::string, std::string>;

  // Listens on `listen_address` with the other options at their defaults.
  // INVALID_ARGUMENT for a malformed address, UNAVAILABLE when it cannot
  // listen there (the port in use, an address not of this host).
  static absl::StatusOr<std::unique_ptr<PrometheusExporter>> Create(
      const std::string& listen_address);
  static absl::StatusOr<std::unique_ptr<PrometheusExporter>> Create(
      const PrometheusExporterOptions& options);
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
  // What /status returns now: a self-contained HTML page (inline CSS and
  // SVG charts, nothing fetched from elsewhere), and what
  // /status?format=json returns (docs/debugging.md gives its shape).
  std::string StatusPage() const;
  std::string StatusJson() const;

 private:
  struct Impl;
  explicit PrometheusExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_PROMETHEUS_H_
