// The exporter's HTTP listener, on GNU libmicrohttpd: one event-driven
// thread (epoll) serves every connection, so an idle or slow client holds
// a connection slot, never a thread, and a scrape is answered while such
// clients wait. Connections are bounded in all and per peer address, and
// closed after a quiet period.
#ifndef RPCRDMA_PLUGIN_PROMETHEUS_HTTP_LISTENER_H_
#define RPCRDMA_PLUGIN_PROMETHEUS_HTTP_LISTENER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rpcrdma/prometheus.h"

struct MHD_Daemon;

namespace rpcrdma::prometheus_internal {

class HttpListener {
 public:
  // What GET /metrics answers: the text exposition format.
  using Scrape = std::function<std::string()>;

  // INVALID_ARGUMENT for a malformed listen address or limit, UNAVAILABLE
  // when nothing can listen there (the address in use, not local...).
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const PrometheusExporterOptions& options, Scrape scrape);

  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;
  // Stops the thread and closes every connection; no Scrape runs after.
  ~HttpListener();

  uint16_t port() const { return port_; }

 private:
  HttpListener(Scrape scrape) : scrape_(std::move(scrape)) {}

  Scrape scrape_;
  // libmicrohttpd's latest log line (written on its thread after start).
  std::string last_error_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
};

}  // namespace rpcrdma::prometheus_internal

#endif  // RPCRDMA_PLUGIN_PROMETHEUS_HTTP_LISTENER_H_
