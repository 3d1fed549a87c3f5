// Exhaustion and wedging: connection limit, handshake and idle
// timeouts, descriptor exhaustion, and a Channel whose peer swallows calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "tests/hostile/hostile_peer.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {
namespace {

using ::testing::HasSubstr;

int serial = 0;
std::string NewUri() {
  return absl::StrCat("soft+unix://@rpcrdma-hostile-limits-",
                      ::rpcrdma::test::ProcessTag(), "-", ++serial);
}

// Answers every call at once, except XIDs in `swallow`, which it keeps
// unanswered (a peer that swallows calls).
class Echo {
 public:
  Server::Handler Handler() {
    return [this](IncomingCall call, Responder r) {
      std::lock_guard<std::mutex> lock(mu_);
      if (call.xid >= 0xDEAD0000u) {
        swallowed_.push_back(std::move(r));
        return;
      }
      HandlerReply reply;
      for (uint32_t w : {call.xid, 1u, 0u, 0u, 0u, 0u})
        AppendWord(reply.xdr, w);
      EXPECT_TRUE(r.Send(std::move(reply)).ok());
    };
  }
  ~Echo() {
    std::lock_guard<std::mutex> lock(mu_);
    swallowed_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<Responder> swallowed_;
};

CallRequest Call(uint32_t xid, bool retry = false) {
  CallRequest req;
  req.xdr = RpcCall(xid);
  req.max_reply_size = 64;
  req.retry_on_reconnect = retry;
  return req;
}

absl::StatusOr<Reply> Wait(std::future<absl::StatusOr<Reply>>& f) {
  if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    return absl::DeadlineExceededError("test: no completion within 10 s");
  }
  return f.get();
}

// limits.max_connections: the next connect is rejected with RFC 8797
// private data and a reason the client names; nothing is kept for it.
TEST(HostileLimits, ConnectionLimitRejectsWithAReason) {
  Echo echo;
  config::TransportConfig config;
  config.mutable_limits()->set_max_connections(2);
  auto server = Server::Create(NewUri(), config, echo.Handler());
  ASSERT_TRUE(server.ok()) << server.status();
  auto a = Channel::Create((*server)->uri(), {});
  auto b = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(a.ok() && b.ok());
  const size_t fds = OpenDescriptors();
  auto c = Channel::Create((*server)->uri(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(c.status().message(), HasSubstr("connection limit reached (2)"));
  EXPECT_EQ((*server)->counters().connections_rejected, 1u);
  EXPECT_EQ((*server)->connections(), 2u);
  EXPECT_TRUE(WaitFor([&] { return OpenDescriptors() <= fds; }));
  // The reject carried this side's RFC 8797 private data too.
  std::optional<fabric::ConnectionEvent> failure;
  EXPECT_EQ(RawPeer::Connect(FabricAddress((*server)->uri()), {}, &failure),
            nullptr);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->type, fabric::ConnectionEventType::kRejected);
  ASSERT_GE(failure->private_data.size(), 8u);
  EXPECT_EQ(LoadBigEndian32(failure->private_data.data()),
            0xF6AB0E18u);  // RFC 8797 magic
  // A freed slot is usable again.
  a->reset();
  EXPECT_TRUE(WaitFor([&] { return (*server)->connections() == 1; }));
  EXPECT_TRUE(Channel::Create((*server)->uri(), {}).ok());
}

// timeouts.handshake_ms: a socket that never sends its connect request is
// closed (the Server used to keep it forever).
TEST(HostileLimits, HandshakeTimeoutClosesASilentSocket) {
  Echo echo;
  config::TransportConfig config;
  config.mutable_timeouts()->set_handshake_ms(200);
  const std::string uri = NewUri();
  auto server = Server::Create(uri, config, echo.Handler());
  ASSERT_TRUE(server.ok());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = uri.substr(strlen("soft+unix://@"));
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                           name.size())),
            0);
  const Clock::time_point begin = Clock::now();
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0);  // closed by the Server
  EXPECT_GE(Clock::now() - begin, milliseconds(150));
  close(fd);
  // The listener closes the socket first and reports the timeout to the
  // Server's loop after, so the count may trail the close briefly.
  const Clock::time_point counted_by = Clock::now() + std::chrono::seconds(5);
  while ((*server)->counters().handshake_timeouts == 0 &&
         Clock::now() < counted_by) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ((*server)->counters().handshake_timeouts, 1u);
}

// timeouts.idle_ms on a Server: a peer that connects and goes silent is
// closed; one whose call the handler still holds is not.
TEST(HostileLimits, IdleTimeoutClosesASilentConnectionOnly) {
  Echo echo;
  config::TransportConfig config;
  config.mutable_timeouts()->set_idle_ms(200);
  auto server = Server::Create(NewUri(), config, echo.Handler());
  ASSERT_TRUE(server.ok());
  auto silent = RawPeer::Connect(FabricAddress((*server)->uri()));
  ASSERT_NE(silent, nullptr);
  auto busy = RawPeer::Connect(FabricAddress((*server)->uri()));
  ASSERT_NE(busy, nullptr);
  busy->Send(Message(0xDEAD0001u, kRdmaMsg, {}, RpcCall(0xDEAD0001u)));
  EXPECT_TRUE(silent->WaitDisconnected());
  EXPECT_FALSE(busy->WaitDisconnected(milliseconds(500)));
  EXPECT_EQ((*server)->counters().idle_closes, 1u);
}

// timeouts.idle_ms on a Channel: it disconnects when idle and the next
// call brings the connection back.
TEST(HostileLimits, IdleChannelDisconnectsAndComesBackForTheNextCall) {
  Echo echo;
  auto server = Server::Create(NewUri(), {}, echo.Handler());
  ASSERT_TRUE(server.ok());
  config::TransportConfig config;
  config.mutable_timeouts()->set_idle_ms(200);
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok());
  auto f = (*channel)->Call(Call(1));
  ASSERT_TRUE(Wait(f).ok());
  EXPECT_TRUE(WaitFor([&] { return !(*channel)->connected(); }));
  EXPECT_EQ((*channel)->counters().idle_closes, 1u);
  auto g = (*channel)->Call(Call(2));  // no retry_on_reconnect needed
  absl::StatusOr<Reply> r = Wait(g);
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*channel)->counters().reconnects, 1u);
}

// Defect 2, the wedge: with a grant of one until the first reply, one
// call the peer swallows used to hold the only credit forever; every later
// call failed DEADLINE_EXCEEDED while connected() stayed true. Now the
// Channel disconnects, reconnects and re-sends what may be retried.
TEST(HostileLimits, Rfc8166_3_3_1_ChannelRecoversFromASwallowedCall) {
  Echo echo;
  auto server = Server::Create(NewUri(), {}, echo.Handler());
  ASSERT_TRUE(server.ok());
  config::TransportConfig config;
  config.mutable_timeouts()->set_reconnect_backoff_initial_ms(10);
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok());
  CallRequest swallowed = Call(0xDEAD0002u);
  swallowed.deadline = Clock::now() + milliseconds(100);
  auto f = (*channel)->Call(std::move(swallowed));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kDeadlineExceeded);
  auto g = (*channel)->Call(Call(3, /*retry=*/true));
  absl::StatusOr<Reply> r = Wait(g);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(LoadBigEndian32(r->xdr.data()), 3u);
  const Counters c = (*channel)->counters();
  EXPECT_EQ(c.abandoned_call_disconnects, 1u);
  EXPECT_EQ(c.reconnects, 1u);
  EXPECT_TRUE((*channel)->connected());
  auto h = (*channel)->Call(Call(4));
  EXPECT_TRUE(Wait(h).ok());
}

// timeouts.abandoned_call_ms: with credits to spare an abandoned call does
// not block anything at first, but is not kept forever.
TEST(HostileLimits, AbandonedCallOlderThanTheBoundEndsTheConnection) {
  Echo echo;
  auto server = Server::Create(NewUri(), {}, echo.Handler());
  ASSERT_TRUE(server.ok());
  config::TransportConfig config;
  config.mutable_timeouts()->set_abandoned_call_ms(300);
  config.mutable_timeouts()->set_reconnect_backoff_initial_ms(10);
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok());
  auto prime = (*channel)->Call(Call(5));  // the grant rises past one
  ASSERT_TRUE(Wait(prime).ok());
  CallRequest swallowed = Call(0xDEAD0003u);
  swallowed.deadline = Clock::now() + milliseconds(50);
  auto f = (*channel)->Call(std::move(swallowed));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kDeadlineExceeded);
  auto g = (*channel)->Call(Call(6));
  EXPECT_TRUE(Wait(g).ok());  // a credit was free: no disconnect yet
  EXPECT_EQ((*channel)->counters().abandoned_call_disconnects, 0u);
  EXPECT_TRUE(WaitFor(
      [&] { return (*channel)->counters().abandoned_call_disconnects == 1; }));
  EXPECT_TRUE(WaitFor([&] { return (*channel)->counters().reconnects == 1; }));
}

// Defect 5: at EMFILE the Server loop spun (1.5 s of CPU in 3 s) and
// stopped accepting. Run in a child process with a low RLIMIT_NOFILE.
TEST(HostileLimits, DescriptorExhaustionNeitherSpinsNorStopsAccepting) {
  // A sanitizer runtime opens descriptors for its own checks (UBSan's vptr
  // check reports a false "invalid vptr" when it cannot), so it cannot run
  // with the table full; the plain build runs this test.
  if (kUnderSanitizer) GTEST_SKIP() << "needs free descriptors (sanitizer)";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    auto check = [&failures](bool ok, const char* what) {
      if (!ok) {
        fprintf(stderr, "child: %s\n", what);
        ++failures;
      }
    };
    Echo echo;
    auto server = Server::Create(NewUri(), {}, echo.Handler());
    if (!server.ok()) _exit(2);
    const std::string uri = (*server)->uri();
    const std::string name = uri.substr(strlen("soft+unix://@"));
    rlimit limit{OpenDescriptors() + 16, OpenDescriptors() + 16};
    setrlimit(RLIMIT_NOFILE, &limit);
    // Raw sockets fill the table; the Server's accepts then fail.
    std::vector<int> sockets;
    while (true) {
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::memcpy(addr.sun_path + 1, name.data(), name.size());
      connect(fd, reinterpret_cast<sockaddr*>(&addr),
              static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                     name.size()));
      sockets.push_back(fd);
    }
    check(WaitFor([&] { return (*server)->counters().accept_errors > 0; }),
          "no accept error counted");
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    poll(nullptr, 0, 1000);
    getrusage(RUSAGE_SELF, &after);
    auto cpu_us = [](const rusage& u) {
      return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000L +
             u.ru_utime.tv_usec + u.ru_stime.tv_usec;
    };
    const long spent = cpu_us(after) - cpu_us(before);
    fprintf(stderr, "child: %ld us of CPU in 1 s at EMFILE\n", spent);
    check(spent < 200000, "the Server loop spins at EMFILE");
    for (int fd : sockets) close(fd);
    // Descriptors are back: a client is accepted again.
    std::unique_ptr<Channel> channel;
    WaitFor([&] {
      auto c = Channel::Create(uri, {});
      if (c.ok()) channel = std::move(*c);
      return channel != nullptr;
    });
    check(channel != nullptr, "no client accepted after descriptors freed");
    if (channel != nullptr) {
      auto f = channel->Call(Call(7));
      check(Wait(f).ok(), "call after recovery failed");
    }
    _exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace rpcrdma::test
