// The Prometheus exporter from an installed rpcrdma: a Server registered
// with an exporter listening on a loopback port that the exporter picks,
// scraped over HTTP. Exits 0 when /metrics shows the Server's series.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpcrdma/config.h>
#include <rpcrdma/prometheus.h>
#include <rpcrdma/server.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>

int main() {
  rpcrdma::config::TransportConfig config;
  auto server = rpcrdma::Server::Create(
      "soft+unix://@rpcrdma-prometheus-consumer-" + std::to_string(getpid()),
      config, [](rpcrdma::IncomingCall, rpcrdma::Responder) {});
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto exporter = rpcrdma::PrometheusExporter::Create("0");
  if (!exporter.ok()) {
    std::fprintf(stderr, "exporter: %s\n",
                 exporter.status().ToString().c_str());
    return 1;
  }
  if (!(*exporter)->Register(**server, {{"service", "consumer"}}).ok()) {
    return 1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons((*exporter)->port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
      write(fd, request.data(), request.size()) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) {
      response.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  (*exporter)->Unregister(**server);
  const std::string expected =
      "rpcrdma_calls_total{service=\"consumer\",role=\"server\"} 0";
  if (response.find(expected) == std::string::npos) {
    std::fprintf(stderr, "no '%s' in:\n%s\n", expected.c_str(),
                 response.c_str());
    return 1;
  }
  std::printf("prometheus consumer: ok\n");
  return 0;
}
