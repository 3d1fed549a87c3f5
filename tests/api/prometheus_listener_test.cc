// The exporter's HTTP listener as a hostile or careless client meets it:
// idle and half-sent requests by the hundred, one peer opening more than
// its share, connections left quiet, and where it listens by default.
// Scrapes from another loopback address (127.0.0.2) stand for the
// Prometheus server that must still be answered.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "rpcrdma/prometheus.h"
#include "tests/api/http_client.h"

namespace rpcrdma {
namespace {

using Clock = std::chrono::steady_clock;

using test::ConnectFrom;
using test::Socket;

// Whether the server closed the connection within `within` (reading EOF
// or a reset), without the client having sent anything more.
bool ClosedByServer(const Socket& s, std::chrono::milliseconds within) {
  pollfd p{s.fd(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(within.count())) != 1) return false;
  char c;
  return read(s.fd(), &c, 1) <= 0;
}

// GET /metrics over `s`: the status line, "" when no answer came within
// 5 s.
std::string StatusOfGet(const Socket& s) {
  return test::StatusLine(test::Get(s));
}

std::unique_ptr<PrometheusExporter> Start(PrometheusExporterOptions options) {
  options.listen_address = "127.0.0.1:0";
  auto exporter = PrometheusExporter::Create(options);
  EXPECT_TRUE(exporter.ok()) << exporter.status();
  return exporter.ok() ? *std::move(exporter) : nullptr;
}

TEST(PrometheusListener, IdleAndHalfSentRequestsDoNotDelayAScrape) {
  auto exporter = Start({});
  ASSERT_NE(exporter, nullptr);
  // 200 connections from 127.0.0.1: the first are let in, silent or with a
  // request cut short; the rest are over the per-address bound.
  std::vector<Socket> attackers;
  for (int i = 0; i < 200; ++i) {
    attackers.push_back(ConnectFrom("127.0.0.1", exporter->port()));
    ASSERT_GE(attackers.back().fd(), 0);
    if (i % 2 == 1) {
      ASSERT_EQ(write(attackers.back().fd(), "GET /metrics HTTP/1.1\r\n", 23),
                23);
    }
  }
  for (int scrape = 0; scrape < 5; ++scrape) {
    const auto start = Clock::now();
    Socket prometheus = ConnectFrom("127.0.0.2", exporter->port());
    ASSERT_GE(prometheus.fd(), 0);
    EXPECT_EQ(StatusOfGet(prometheus), "HTTP/1.1 200 OK");
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  }
}

TEST(PrometheusListener, OnePeerGetsNoMoreThanItsShareOfConnections) {
  PrometheusExporterOptions options;
  options.max_connections_per_address = 4;
  auto exporter = Start(options);
  ASSERT_NE(exporter, nullptr);
  std::vector<Socket> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(ConnectFrom("127.0.0.1", exporter->port()));
  }
  // Let the listener accept the four before the fifth arrives.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Socket fifth = ConnectFrom("127.0.0.1", exporter->port());
  ASSERT_GE(fifth.fd(), 0);
  EXPECT_TRUE(ClosedByServer(fifth, std::chrono::seconds(5)));
  for (const Socket& s : held) {
    EXPECT_FALSE(ClosedByServer(s, std::chrono::milliseconds(0)));
  }
  Socket other = ConnectFrom("127.0.0.2", exporter->port());
  EXPECT_EQ(StatusOfGet(other), "HTTP/1.1 200 OK");
}

TEST(PrometheusListener, QuietConnectionsAreClosed) {
  PrometheusExporterOptions options;
  options.idle_timeout = std::chrono::seconds(1);
  auto exporter = Start(options);
  ASSERT_NE(exporter, nullptr);
  Socket silent = ConnectFrom("127.0.0.1", exporter->port());
  Socket half_sent = ConnectFrom("127.0.0.1", exporter->port());
  ASSERT_EQ(write(half_sent.fd(), "GET /met", 8), 8);
  EXPECT_TRUE(ClosedByServer(silent, std::chrono::seconds(5)));
  EXPECT_TRUE(ClosedByServer(half_sent, std::chrono::seconds(5)));
}

TEST(PrometheusListener, OnlyGetOfMetricsIsServed) {
  auto exporter = Start({});
  ASSERT_NE(exporter, nullptr);
  const auto ask = [&](const std::string& request) {
    Socket s = ConnectFrom("127.0.0.1", exporter->port());
    EXPECT_EQ(write(s.fd(), request.data(), request.size()),
              static_cast<ssize_t>(request.size()));
    char buffer[256] = {};
    pollfd p{s.fd(), POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return std::string();
    const ssize_t n = read(s.fd(), buffer, sizeof buffer - 1);
    const std::string response(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    return response.substr(0, response.find("\r\n"));
  };
  EXPECT_EQ(ask("GET /secret HTTP/1.0\r\n\r\n"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(ask("POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"),
            "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(ask("GET /metrics HTTP/1.0\r\n\r\n"), "HTTP/1.1 200 OK");
}

// The local address of the TCP listener on `port`, from /proc/net/tcp
// ("0100007F" is 127.0.0.1), or "" when none listens there.
std::string ListeningAddress(uint16_t port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  const std::string local_port = absl::StrFormat(":%04X ", port);
  while (std::getline(tcp, line)) {
    // "  sl  local_address rem_address   st ..."; st 0A is LISTEN.
    const size_t at = line.find(local_port);
    if (at == std::string::npos || line.find(" 0A ") == std::string::npos) {
      continue;
    }
    const size_t start = line.rfind(' ', at) + 1;
    return line.substr(start, at - start);
  }
  return "";
}

TEST(PrometheusListener, ABarePortListensOnLoopbackOnly) {
  auto exporter = PrometheusExporter::Create("0");
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  EXPECT_EQ(ListeningAddress((*exporter)->port()), "0100007F");
}

TEST(PrometheusListener, Ipv6LiteralsAreAccepted) {
  const int probe = socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6 on this host";
  close(probe);
  auto exporter = PrometheusExporter::Create("[::1]:0");
  if (!exporter.ok() &&
      absl::StrContains(exporter.status().message(), "Cannot assign")) {
    GTEST_SKIP() << "no ::1 on this host: " << exporter.status();
  }
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  Socket s(socket(AF_INET6, SOCK_STREAM, 0));
  sockaddr_in6 to{};
  to.sin6_family = AF_INET6;
  to.sin6_port = htons((*exporter)->port());
  to.sin6_addr = in6addr_loopback;
  ASSERT_EQ(connect(s.fd(), reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  EXPECT_EQ(StatusOfGet(s), "HTTP/1.1 200 OK");
}

}  // namespace
}  // namespace rpcrdma
