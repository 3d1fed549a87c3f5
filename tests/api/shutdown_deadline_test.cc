// Shutdown's deadline (channel.h, server.h), against a provider that never
// completes what was posted: the soft fabric holding back every completion
// (SoftFabricOptions::completion_delay_polls), so that a connection never
// drains. Shutdown then returns DEADLINE_EXCEEDED at its deadline instead
// of the destructor's fixed wait, and the endpoint is released.
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "plugin/fabric/fabric_factory_testing.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"

namespace rpcrdma::test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kDeadline{300};

fabric::SoftFabricOptions NeverCompletes() {
  fabric::SoftFabricOptions options;
  options.completion_delay_polls = std::numeric_limits<uint32_t>::max();
  return options;
}

class ShutdownDeadlineTest : public ::testing::Test {
 protected:
  void TearDown() override { fabric::SetSoftFabricOptionsForTesting({}); }

  static std::unique_ptr<Server> MakeServer() {
    auto server = Server::Create("soft+tcp://127.0.0.1:0", {},
                                 [](IncomingCall, Responder) {});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  }
  static std::unique_ptr<Channel> MakeChannel(const Server& server) {
    auto channel = Channel::Create(server.uri(), {});
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? std::move(*channel) : nullptr;
  }
  // A Server whose fabric never completes what it posts, and a Channel
  // connected to it: the Server's connection never drains.
  static void ConnectToAServerThatNeverDrains(
      std::unique_ptr<Server>& server, std::unique_ptr<Channel>& channel) {
    fabric::SetSoftFabricOptionsForTesting(NeverCompletes());
    server = MakeServer();
    ASSERT_NE(server, nullptr);
    fabric::SetSoftFabricOptionsForTesting({});
    channel = MakeChannel(*server);
    ASSERT_NE(channel, nullptr);
    // The accept is the listener's; the connection exists once it is seen.
    const Clock::time_point until = Clock::now() + std::chrono::seconds(20);
    while (server->connections() == 0 && Clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_EQ(server->connections(), 1u);
  }
};

TEST_F(ShutdownDeadlineTest, AChannelThatNeverDrainsEndsAtItsShutdownDeadline) {
  std::unique_ptr<Server> server = MakeServer();
  ASSERT_NE(server, nullptr);
  fabric::SetSoftFabricOptionsForTesting(NeverCompletes());
  std::unique_ptr<Channel> channel = MakeChannel(*server);
  ASSERT_NE(channel, nullptr);
  fabric::SetSoftFabricOptionsForTesting({});

  const Clock::time_point start = Clock::now();
  absl::Status drained = channel->Shutdown(DeadlineIn(kDeadline));
  const Clock::duration waited = Clock::now() - start;
  EXPECT_EQ(drained.code(), absl::StatusCode::kDeadlineExceeded) << drained;
  EXPECT_NE(drained.message().find("had not drained"), absl::string_view::npos)
      << drained;
  EXPECT_GE(waited, kDeadline);
  // Not the destructor's fixed wait: well before it would have ended.
  EXPECT_LT(waited, Channel::kShutdownDrain / 2);
  EXPECT_TRUE(channel->Shutdown().ok()) << "a second Shutdown has no work";
  const Clock::time_point destroyed = Clock::now();
  channel.reset();
  EXPECT_LT(Clock::now() - destroyed, Channel::kShutdownDrain / 2);
}

TEST_F(ShutdownDeadlineTest,
       AServerWhoseConnectionNeverDrainsEndsAtItsDeadline) {
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
  ASSERT_NO_FATAL_FAILURE(ConnectToAServerThatNeverDrains(server, channel));

  const Clock::time_point start = Clock::now();
  absl::Status drained = server->Shutdown(DeadlineIn(kDeadline));
  const Clock::duration waited = Clock::now() - start;
  EXPECT_EQ(drained.code(), absl::StatusCode::kDeadlineExceeded) << drained;
  EXPECT_NE(drained.message().find("1 connection(s) had not drained"),
            absl::string_view::npos)
      << drained;
  EXPECT_GE(waited, kDeadline);
  EXPECT_LT(waited, Server::kShutdownDrain / 2);
  EXPECT_EQ(server->connections(), 0u);
  EXPECT_TRUE(server->Shutdown().ok()) << "a second Shutdown has no work";
}

// While a Server's Shutdown waits for its connections to drain, it no
// longer listens: a client connecting then is refused at once, instead of
// waiting in the listener's backlog for a handshake nobody answers (and
// being told, when the listener finally closed, that the address may not
// be an rpcrdma server).
TEST_F(ShutdownDeadlineTest, AShuttingDownServerRefusesNewClientsAtOnce) {
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
  ASSERT_NO_FATAL_FAILURE(ConnectToAServerThatNeverDrains(server, channel));
  const std::string uri = server->uri();
  constexpr milliseconds kDrainDeadline{4000};
  std::thread shutdown([&] {
    EXPECT_EQ(server->Shutdown(DeadlineIn(kDrainDeadline)).code(),
              absl::StatusCode::kDeadlineExceeded);
  });
  // Shutdown is under way (it stops listening before it waits).
  std::this_thread::sleep_for(milliseconds(200));
  config::TransportConfig config;
  config.mutable_timeouts()->set_connect_ms(2000);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<Channel>> late = Channel::Create(uri, config);
  const Clock::duration waited = Clock::now() - start;
  shutdown.join();
  ASSERT_FALSE(late.ok());
  EXPECT_LT(waited, milliseconds(1000)) << late.status();
  EXPECT_EQ(late.status().message().find("handshake"), absl::string_view::npos)
      << late.status();
}

// The same endpoints drain at once with a provider that completes: OK.
TEST_F(ShutdownDeadlineTest, ShutdownIsOkWhenEverythingDrained) {
  std::unique_ptr<Server> server = MakeServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Channel> channel = MakeChannel(*server);
  ASSERT_NE(channel, nullptr);
  EXPECT_TRUE(channel->Shutdown(DeadlineIn(std::chrono::seconds(20))).ok());
  EXPECT_TRUE(server->Shutdown(DeadlineIn(std::chrono::seconds(20))).ok());
}

}  // namespace
}  // namespace rpcrdma::test
