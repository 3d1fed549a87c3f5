// Callbacks from the server (RFC 8167 backward calls): a client serves a
// Thrift service of its own on its TRdmaSocket's connection, and a server
// handler calls it through TRdmaConnection, during the call it serves
// (synchronously, and oneway) or after it, with bulk data, under every
// server type and protocol.
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TTransportException.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {

using thrift::TRdmaConnection;
using thrift::TRdmaServer;
using thrift::TRdmaServerSocket;
using thrift::TRdmaSocketOptions;

namespace {

using apache::thrift::transport::TTransportException;

struct WatchingClient {
  std::shared_ptr<WatcherHandler> watcher = std::make_shared<WatcherHandler>();
  std::unique_ptr<TestClient> client;
};

WatchingClient ConnectWatching(const Setup& setup, const std::string& uri) {
  WatchingClient w;
  TRdmaSocketOptions options;
  options.callback_processor = std::make_shared<WatcherProcessor>(w.watcher);
  options.callback_protocol = ProtocolFactory(setup.protocol);
  options.callback_threads = 2;
  w.client = TestClient::Connect(setup, uri, options);
  return w;
}

class Callbacks : public ::testing::TestWithParam<Setup> {};

TEST_P(Callbacks, DuringTheCallAndAfterIt) {
  const test::Setup setup = GetParam();
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  WatchingClient w = ConnectWatching(setup, server->uri());
  // Three synchronous callbacks and a oneway one, within the call.
  EXPECT_EQ(w.client->store->callBack("during", 3, "x", false), 3);
  ASSERT_TRUE(w.watcher->WaitFor(4));
  std::vector<std::string> keys = w.watcher->keys();
  EXPECT_EQ(keys[0], "during");
  EXPECT_EQ(keys[3], "poke:during");
  // Bulk data in callbacks: read chunks from the server's memory.
  const std::string big = Pattern(3 << 20, 9);
  EXPECT_EQ(w.client->store->callBack("big", 2, big, false), 2);
  EXPECT_EQ(w.watcher->bytes(), 3 + 2 * big.size());
  // After the call has been answered, from another thread.
  EXPECT_EQ(w.client->store->callBack("after", 2, "y", true), 0);
  ASSERT_TRUE(w.watcher->WaitFor(4 + 3 + 3));
  keys = w.watcher->keys();
  EXPECT_EQ(keys.back(), "poke:after");
  // Forward calls go on beside them.
  std::string echoed;
  w.client->store->echo(echoed, big);
  EXPECT_TRUE(echoed == big);
  EXPECT_GE(w.client->socket->counters().backward_calls, 9u);
}

std::vector<Setup> CallbackSetups() {
  std::vector<Setup> all;
  for (ServerKind s : {ServerKind::kSimple, ServerKind::kThreaded,
                       ServerKind::kThreadPool, ServerKind::kRdma}) {
    all.push_back(
        {s, ProtocolKind::kBinary, Wrapper::kPlain, TestFabrics().front()});
  }
  for (ProtocolKind p :
       {ProtocolKind::kCompact, ProtocolKind::kJson, ProtocolKind::kHeader}) {
#ifdef RPCRDMA_THRIFT_TEST_VERBS
    if (p == ProtocolKind::kJson) continue;  // slow under the VM's emulation
#endif
    all.push_back(
        {ServerKind::kRdma, p, Wrapper::kPlain, TestFabrics().back()});
  }
  all.push_back({ServerKind::kThreaded, ProtocolKind::kBinary, Wrapper::kFramed,
                 Fabric::kTcp});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Thrift, Callbacks,
                         ::testing::ValuesIn(CallbackSetups()), SetupName);

// Keeps the connection of its last ping.
class RememberingHandler : public StoreHandler {
 public:
  void ping() override { connection_ = TRdmaConnection::current(); }
  std::shared_ptr<TRdmaConnection> connection() const { return connection_; }

 private:
  std::shared_ptr<TRdmaConnection> connection_;
};

const Setup kRdmaBinary{ServerKind::kRdma, ProtocolKind::kBinary,
                        Wrapper::kPlain, TestFabrics().front()};

TEST(CallbacksAfterTheConnection, FailWithNotOpen) {
  auto handler = std::make_shared<RememberingHandler>();
  std::unique_ptr<TestServer> server =
      TestServer::Start(kRdmaBinary, std::make_shared<StoreProcessor>(handler));
  WatchingClient w = ConnectWatching(kRdmaBinary, server->uri());
  w.client->store->ping();
  std::shared_ptr<TRdmaConnection> connection = handler->connection();
  ASSERT_NE(connection, nullptr);
  EXPECT_TRUE(connection->isOpen());
  EXPECT_FALSE(connection->peer().empty());
  EXPECT_EQ(TRdmaConnection::current(), nullptr);  // not serving a call here
  // Any time while the connection lasts, from any thread.
  WatcherClient watcher(
      MakeProtocol(ProtocolKind::kBinary, connection->callbackTransport()));
  EXPECT_EQ(watcher.changed("later", 5, Pattern(100000, 1)), 5);
  w.client.reset();  // the client goes
  for (int i = 0; i < 200 && connection->isOpen(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(connection->isOpen());
  try {
    watcher.changed("gone", 1, "");
    ADD_FAILURE() << "a callback on a closed connection";
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::NOT_OPEN) << e.what();
  }
}

// A processor factory sees the connection's transport: TRdmaConnection::of
// finds the connection behind it.
class ConnectionRecorder : public apache::thrift::TProcessorFactory {
 public:
  std::shared_ptr<apache::thrift::TProcessor> getProcessor(
      const apache::thrift::TConnectionInfo& info) override {
    std::shared_ptr<TRdmaConnection> c = TRdmaConnection::of(info.transport);
    if (c != nullptr) peers.push_back(c->peer());
    return std::make_shared<StoreProcessor>(std::make_shared<StoreHandler>());
  }
  std::vector<std::string> peers;
};

TEST(ProcessorFactory, SeesTheConnection) {
  for (ServerKind kind : {ServerKind::kThreaded, ServerKind::kRdma}) {
    const test::Setup setup{kind, ProtocolKind::kBinary, Wrapper::kBuffered,
                            TestFabrics().back()};
    auto factory = std::make_shared<ConnectionRecorder>();
    auto socket = std::make_shared<TRdmaServerSocket>(ServerUri(setup.fabric));
    std::shared_ptr<apache::thrift::server::TServer> server;
    if (kind == ServerKind::kRdma) {
      auto rdma = std::make_shared<TRdmaServer>(
          factory, socket, ProtocolFactory(ProtocolKind::kBinary), 2);
      rdma->setInputTransportFactory(TransportFactory(Wrapper::kBuffered));
      rdma->setOutputTransportFactory(TransportFactory(Wrapper::kBuffered));
      server = rdma;
    } else {
      server = std::make_shared<apache::thrift::server::TThreadedServer>(
          factory, socket, TransportFactory(Wrapper::kBuffered),
          ProtocolFactory(ProtocolKind::kBinary));
    }
    std::thread serving([&] { server->serve(); });
    for (int i = 0; i < 200 && socket->uri().empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    {
      std::unique_ptr<TestClient> client =
          TestClient::Connect(setup, socket->uri());
      client->store->ping();
    }
    server->stop();
    serving.join();
    ASSERT_EQ(factory->peers.size(), 1u) << setup.Name();
    // The client's address, as a URI of the server's scheme.
    const std::string scheme =
        ServerUri(setup.fabric).substr(0, ServerUri(setup.fabric).find(':'));
    EXPECT_EQ(factory->peers[0].rfind(scheme + "://", 0), 0u)
        << factory->peers[0];
  }
}

}  // namespace
}  // namespace rpcrdma::test
