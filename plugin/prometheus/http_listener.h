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
#include <utility>

#include "absl/status/statusor.h"
#include "rpcrdma/prometheus.h"

struct MHD_Daemon;

namespace rpcrdma::prometheus_internal {

class HttpListener {
 public:
  // What GET answers, each read when requested: /metrics (the text
  // exposition format), /status and /status?format=json.
  struct Pages {
    std::function<std::string()> metrics;
    std::function<std::string()> status_html;
    std::function<std::string()> status_json;
  };

  // INVALID_ARGUMENT for a malformed listen address or limit, UNAVAILABLE
  // when nothing can listen there (the address in use, not local...).
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const PrometheusExporterOptions& options, Pages pages);

  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;
  // Stops the thread and closes every connection; no page is read after.
  ~HttpListener();

  uint16_t port() const { return port_; }

 private:
  explicit HttpListener(Pages pages) : pages_(std::move(pages)) {}

  Pages pages_;
  // libmicrohttpd's latest log line (written on its thread after start).
  std::string last_error_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
};

}  // namespace rpcrdma::prometheus_internal

#endif  // RPCRDMA_PLUGIN_PROMETHEUS_HTTP_LISTENER_H_
