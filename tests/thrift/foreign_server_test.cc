// A Channel pointed at a plain Thrift server (TSimpleServer over
// TServerSocket, the server a port may still run before it moves to the
// bridge): the connect fails fast, well within its connect timeout, saying
// the peer is not an rpcrdma server, whatever the Thrift server does with
// the soft fabric's connect frame.
#include <netinet/in.h>
#include <sys/socket.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TSimpleServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {
namespace {

using apache::thrift::server::TServerEventHandler;
using apache::thrift::server::TSimpleServer;
using std::chrono::seconds;
using std::chrono::steady_clock;

// Tells the test the server's port once it listens.
class Listening : public TServerEventHandler {
 public:
  explicit Listening(
      std::shared_ptr<apache::thrift::transport::TServerSocket> socket)
      : socket_(std::move(socket)) {}
  void preServe() override {
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    getsockname(socket_->getSocketFD(), reinterpret_cast<sockaddr*>(&a), &len);
    port_.set_value(ntohs(a.sin_port));
  }
  std::future<int> port() { return port_.get_future(); }

 private:
  std::shared_ptr<apache::thrift::transport::TServerSocket> socket_;
  std::promise<int> port_;
};

TEST(ForeignThriftServer, ChannelToAPlainThriftServerFailsFastSayingSo) {
  auto socket = std::make_shared<apache::thrift::transport::TServerSocket>(
      "127.0.0.1", 0);
  auto server = std::make_shared<TSimpleServer>(
      std::make_shared<StoreProcessor>(std::make_shared<StoreHandler>()),
      socket,
      std::make_shared<apache::thrift::transport::TBufferedTransportFactory>(),
      std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>());
  auto listening = std::make_shared<Listening>(socket);
  std::future<int> port = listening->port();
  server->setServerEventHandler(listening);
  std::thread serving([&server] { server->serve(); });
  ASSERT_EQ(port.wait_for(seconds(20)), std::future_status::ready);
  const std::string uri = absl::StrCat("soft+tcp://127.0.0.1:", port.get());

  // The connect timeout is far above the bound of the handshake's answer
  // (timeouts.handshake_answer_ms, 5 s by default): failing within it is
  // the foreign server being noticed.
  config::TransportConfig config;
  config.mutable_timeouts()->set_connect_ms(30000);
  const auto start = steady_clock::now();
  auto channel = Channel::Create(uri, config);
  const auto took = steady_clock::now() - start;
  server->stop();
  serving.join();

  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kUnavailable)
      << channel.status();
  EXPECT_TRUE(absl::StrContains(channel.status().message(),
                                absl::StrCat("connect to ", uri)))
      << channel.status();
  EXPECT_TRUE(
      absl::StrContains(channel.status().message(), "is it an rpcrdma server?"))
      << channel.status();
  EXPECT_LT(took, seconds(20)) << channel.status();
}

}  // namespace
}  // namespace rpcrdma::test
