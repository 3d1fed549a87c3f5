// A minimal HTTP/1.1 client over a plain TCP socket, for the tests of the
// Prometheus exporter: connections from a chosen loopback source address
// (to stand for several peers) and GET requests with bounded waits.
#ifndef RPCRDMA_TESTS_API_HTTP_CLIENT_H_
#define RPCRDMA_TESTS_API_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace rpcrdma::test {

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A TCP connection from `source` (an IPv4 loopback address) to
// 127.0.0.1:port; its fd() is -1 on failure.
inline Socket ConnectFrom(const char* source, uint16_t port) {
  Socket s(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s.fd(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(s.fd(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    return Socket(-1);
  }
  return s;
}

// Sends GET `path` (Connection: close) over `s` and reads the response
// until the server closes; "" when a write fails or no octet comes within
// `quiet`.
inline std::string Get(
    const Socket& s, const std::string& path = "/metrics",
    std::chrono::milliseconds quiet = std::chrono::seconds(5)) {
  const std::string request = "GET " + path +
                              " HTTP/1.1\r\nHost: localhost\r\n"
                              "Connection: close\r\n\r\n";
  if (write(s.fd(), request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    return "";
  }
  std::string response;
  char buffer[4096];
  while (true) {
    pollfd p{s.fd(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(quiet.count())) != 1) return "";
    const ssize_t n = read(s.fd(), buffer, sizeof buffer);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  return response;
}

// The status line of `response` ("HTTP/1.1 200 OK").
inline std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

// The body of a 200 response, or "" for any other.
inline std::string OkBody(const std::string& response) {
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) {
    return "";
  }
  return response.substr(body + 4);
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_API_HTTP_CLIENT_H_
