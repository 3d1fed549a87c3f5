// Channel::Create pointed at a listener that is not an rpcrdma server (an
// old TCP service still on the port): the connect fails fast, well within
// its connect timeout, saying what the peer did and what to check. Real
// plain listeners stand in for the foreign servers: one that accepts and
// never answers, one that answers "HTTP/1.1 400 Bad Request" and one that
// accepts and closes, over TCP and Unix-domain sockets.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

enum class Foreign {
  kSilent,   // accepts and never says anything
  kHttp400,  // reads the request and answers an HTTP error, then closes
  kCloses,   // accepts and closes at once, as a Thrift server does on
             // a frame it cannot parse
};

// A plain stream listener on loopback TCP or an abstract Unix-domain name
// that behaves as `kind` towards every connection, on its own thread.
class ForeignListener {
 public:
  ForeignListener(Foreign kind, bool unix_domain) : kind_(kind) {
    if (unix_domain) {
      fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      const std::string name = absl::StrCat(
          "rpcrdma-foreign-peer-test-", getpid(), "-", static_cast<int>(kind));
      std::memcpy(a.sun_path + 1, name.data(), name.size());
      EXPECT_EQ(bind(fd_, reinterpret_cast<const sockaddr*>(&a),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                            1 + name.size())),
                0);
      uri_ = absl::StrCat("soft+unix://@", name);
    } else {
      fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof(a)), 0);
      socklen_t len = sizeof(a);
      EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
      uri_ = absl::StrCat("soft+tcp://127.0.0.1:", ntohs(a.sin_port));
    }
    EXPECT_EQ(listen(fd_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ForeignListener() {
    stop_ = true;
    thread_.join();
    for (int c : held_) close(c);
    close(fd_);
  }
  const std::string& uri() const { return uri_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      switch (kind_) {
        case Foreign::kSilent:
          held_.push_back(c);  // open, and silent, until the test ends
          break;
        case Foreign::kHttp400: {
          char request[512];
          (void)read(c, request, sizeof(request));
          const std::string answer =
              "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
              "Connection: close\r\n\r\n";
          (void)write(c, answer.data(), answer.size());
          shutdown(c, SHUT_WR);
          held_.push_back(c);  // closed at the end: no reset races the data
          break;
        }
        case Foreign::kCloses:
          close(c);
          break;
      }
    }
  }

  Foreign kind_;
  int fd_ = -1;
  std::string uri_;
  std::vector<int> held_;  // only the serving thread, until it is joined
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A connect timeout far above what any case may take: failing within it is
// the foreign peer being noticed, not the timeout.
config::TransportConfig LongConnectTimeout() {
  config::TransportConfig c;
  c.mutable_timeouts()->set_connect_ms(20000);
  return c;
}

struct Outcome {
  absl::Status status;
  steady_clock::duration took;
};

Outcome CreateChannel(const std::string& uri,
                      const config::TransportConfig& config) {
  const auto start = steady_clock::now();
  auto channel = Channel::Create(uri, config);
  return {channel.ok() ? absl::OkStatus() : channel.status(),
          steady_clock::now() - start};
}

void ExpectParts(const absl::Status& status,
                 std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) {
    EXPECT_TRUE(absl::StrContains(status.message(), p))
        << "\"" << p << "\" not in: " << status;
  }
}

class ForeignPeerTest : public ::testing::TestWithParam<bool> {};

TEST_P(ForeignPeerTest, SilentListenerFailsAfterTheHandshakeAnswerBound) {
  ForeignListener peer(Foreign::kSilent, GetParam());
  config::TransportConfig config = LongConnectTimeout();
  config.mutable_timeouts()->set_handshake_answer_ms(300);
  const Outcome o = CreateChannel(peer.uri(), config);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  ExpectParts(o.status,
              {absl::StrCat("connect to ", peer.uri()),
               "no rpcrdma handshake answer came within 300 ms of the "
               "connection (the peer sent nothing)",
               "is it an rpcrdma server?"});
  // Not the connect timeout: the bound of the answer ended it.
  EXPECT_LT(o.took, seconds(15));
}

TEST_P(ForeignPeerTest, HttpAnswerIsNotTheHandshake) {
  ForeignListener peer(Foreign::kHttp400, GetParam());
  const Outcome o = CreateChannel(peer.uri(), LongConnectTimeout());
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  ExpectParts(o.status, {absl::StrCat("connect to ", peer.uri()),
                         "the peer sent bytes that are not the rpcrdma "
                         "handshake (its first octets: \"HTTP/1.1 400 Bad "
                         "Request",
                         "is it an rpcrdma server?"});
  EXPECT_LT(o.took, seconds(15));
}

TEST_P(ForeignPeerTest, ListenerThatClosesIsNamed) {
  ForeignListener peer(Foreign::kCloses, GetParam());
  const Outcome o = CreateChannel(peer.uri(), LongConnectTimeout());
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  ExpectParts(o.status, {absl::StrCat("connect to ", peer.uri()),
                         "the peer closed the connection during the rpcrdma "
                         "handshake: is it an rpcrdma server? (a Thrift or "
                         "other non-rpcrdma server listening there"});
  EXPECT_LT(o.took, seconds(15));
}

// The default bound is a few seconds, far below the connect timeout.
TEST(ForeignPeerDefaults, SilentListenerFailsWithinTheDefaultBound) {
  ForeignListener peer(Foreign::kSilent, /*unix_domain=*/false);
  const Outcome o = CreateChannel(peer.uri(), LongConnectTimeout());
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  ExpectParts(o.status, {"no rpcrdma handshake answer came within 5000 ms"});
  EXPECT_LT(o.took, seconds(15));
}

INSTANTIATE_TEST_SUITE_P(Sockets, ForeignPeerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& unix_domain) {
                           return unix_domain.param ? "Unix" : "Tcp";
                         });

}  // namespace
}  // namespace rpcrdma
