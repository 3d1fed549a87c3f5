// How the bridge behaves where sockets would: the concurrent
// client with 64 calls in flight on one connection, oneway calls that
// return at once and never hold a credit (RFC 8166 §3.3.1), TConfiguration
// limits on both sides, stop() while calls are processed, a lost peer, and
// multiplexed services.
#include <thrift/TApplicationException.h>
#include <thrift/async/TConcurrentClientSyncInfo.h>
#include <thrift/processor/TMultiplexedProcessor.h>
#include <thrift/protocol/TMultiplexedProtocol.h>
#include <thrift/protocol/TProtocolException.h>
#include <thrift/transport/TTransportException.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {

using thrift::TRdmaServer;
using thrift::TRdmaServerSocket;
using thrift::TRdmaSocket;

namespace {

using apache::thrift::TConfiguration;
using apache::thrift::transport::TTransportException;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const Setup kRdmaBinary{ServerKind::kRdma, ProtocolKind::kBinary,
                        Wrapper::kPlain, Fabric::kUnix};

// TConcurrentClientSyncInfo: 64 threads share one connection; TRdmaServer
// processes the connection's calls at once, so all 64 are in the handler
// together, which only happens when all 64 are in flight.
TEST(ConcurrentClient, SixtyFourCallsInFlightOnOneConnection) {
  auto socket = std::make_shared<TRdmaServerSocket>(ServerUri(Fabric::kUnix));
  auto handler = std::make_shared<StoreHandler>();
  auto big = std::make_shared<TRdmaServer>(
      std::make_shared<StoreProcessor>(handler), socket,
      ProtocolFactory(ProtocolKind::kBinary), 64);
  std::thread serving([&] { big->serve(); });
  for (int i = 0; i < 200 && socket->uri().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_FALSE(socket->uri().empty());

  auto rdma = std::make_shared<TRdmaSocket>(socket->uri());
  auto protocol = MakeProtocol(ProtocolKind::kBinary, rdma);
  StoreConcurrentClient client(
      protocol,
      std::make_shared<apache::thrift::async::TConcurrentClientSyncInfo>());
  rdma->open();
  client.ping();  // the server's credit grant (RFC 8166 §3.3.1)
  constexpr int kCalls = 64;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (client.slow(300, 1000 + i) != 1000 + i) ++wrong;
        // Binaries too, answered in whatever order.
        std::string echoed;
        const std::string data = Pattern(5000 + i * 100, uint8_t(i));
        client.echo(echoed, data);
        if (echoed != data) ++wrong;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(handler->slow_peak(), kCalls);
  // 64 calls of 300 ms one after the other would take 19 s.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_GE(rdma->counters().peak_calls_outstanding, uint32_t{kCalls});
  rdma->close();
  big->stop();
  serving.join();
}

// Oneway calls return before the handler ran (Thrift's own test client
// asks for under 200 ms while the server sleeps), are answered by the
// server on receipt so that none holds a credit, and still run.
TEST(Oneway, ReturnsAtOnceAndNeverHoldsACredit) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  const Clock::time_point start = Clock::now();
  client->store->note("slow", 1000, "");
  EXPECT_LT(Clock::now() - start, milliseconds(200));
  // Many more than the 128 credits of the grant, with large attachments
  // (read chunks) among them.
  constexpr int kNotes = 400;
  for (int i = 0; i < kNotes; ++i) {
    client->store->note("n", 0, i % 50 == 0 ? Pattern(100000, 1) : "x");
  }
  EXPECT_LT(Clock::now() - start, milliseconds(900));
  client->store->ping();
  EXPECT_TRUE(server->handler().WaitForNotes(kNotes + 1));
  EXPECT_EQ(client->store->notes(), kNotes + 1);
  const Counters c = client->socket->counters();
  EXPECT_EQ(c.calls, c.replies);
  EXPECT_LE(c.peak_calls_outstanding, c.credits_granted);
}

// A processor that writes no reply to a call (as a oneway call whose
// header the bridge could not read gets): the server answers
// THRIFT_NO_REPLY, which frees the call's credit, and the client finds
// nothing to read for it; the connection goes on.
class SilentOnPing : public apache::thrift::TProcessor {
 public:
  bool process(std::shared_ptr<apache::thrift::protocol::TProtocol> in,
               std::shared_ptr<apache::thrift::protocol::TProtocol> out,
               void* /*context*/) override {
    std::string name;
    apache::thrift::protocol::TMessageType type;
    int32_t seqid = 0;
    in->readMessageBegin(name, type, seqid);
    in->skip(apache::thrift::protocol::T_STRUCT);
    in->readMessageEnd();
    in->getTransport()->readEnd();
    if (name == "ping") return true;  // no reply
    Store_notes_result result;        // anything else: notes() = 42
    result.success = 42;
    result.__isset.success = true;
    out->writeMessageBegin(name, apache::thrift::protocol::T_REPLY, seqid);
    result.write(out.get());
    out->writeMessageEnd();
    out->getTransport()->writeEnd();
    out->getTransport()->flush();
    return true;
  }
};

TEST(NoReply, ACallAnsweredWithNothingFailsAloneAndFreesItsCredit) {
  for (ServerKind kind : {ServerKind::kSimple, ServerKind::kRdma}) {
    const test::Setup setup{kind, ProtocolKind::kBinary, Wrapper::kPlain,
                            Fabric::kUnix};
    std::unique_ptr<TestServer> server =
        TestServer::Start(setup, std::make_shared<SilentOnPing>());
    std::unique_ptr<TestClient> client =
        TestClient::Connect(setup, server->uri());
    EXPECT_EQ(client->store->notes(), 42);
    try {
      client->store->ping();
      ADD_FAILURE() << "a call without a reply returned";
    } catch (const TTransportException& e) {
      EXPECT_EQ(e.getType(), TTransportException::END_OF_FILE) << e.what();
    }
    EXPECT_EQ(client->store->notes(), 42);
    const Counters c = client->socket->counters();
    EXPECT_EQ(c.calls, 3u);
    EXPECT_EQ(c.replies, 3u);
  }
}

// TConfiguration limits are honoured on both sides: a message over the
// MaxMessageSize fails cleanly with a TTransportException naming it, and
// the connection goes on.
TEST(Limits, MessagesOverTheMaxMessageSizeFailCleanly) {
  auto small = std::make_shared<TConfiguration>(1 << 20);
  std::unique_ptr<TestServer> server =
      TestServer::Start(kRdmaBinary, nullptr, {}, small);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  std::string echoed;
  // The server refuses a call over its limit before any handler runs.
  try {
    client->store->echo(echoed, Pattern(2 << 20, 1));
    ADD_FAILURE() << "a 2 MiB call passed a 1 MiB MaxMessageSize";
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::CORRUPTED_DATA);
    EXPECT_NE(std::string(e.what()).find("MaxMessageSize"), std::string::npos)
        << e.what();
  }
  client->store->echo(echoed, Pattern(1000, 2));
  EXPECT_EQ(echoed, Pattern(1000, 2));
  // A oneway call lending its attachment waits for the server's receipt,
  // which names the refusal too.
  EXPECT_THROW(client->store->note("big", 0, Pattern(2 << 20, 4)),
               TTransportException);
  // With the transport taking larger calls, the bridge itself refuses it,
  // after the RDMA Reads, naming the limit.
  config::TransportConfig roomy;
  roomy.mutable_limits()->set_max_call_size(8 << 20);
  std::unique_ptr<TestServer> refusing =
      TestServer::Start(kRdmaBinary, nullptr, roomy, small);
  std::unique_ptr<TestClient> refused =
      TestClient::Connect(kRdmaBinary, refusing->uri());
  try {
    refused->store->echo(echoed, Pattern(2 << 20, 1));
    ADD_FAILURE() << "a 2 MiB call passed a 1 MiB MaxMessageSize";
  } catch (const TTransportException& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the MaxMessageSize of "
                                         "1048576"),
              std::string::npos)
        << e.what();
  }
  refused->store->ping();

  // A client with a small limit neither sends nor accepts more.
  std::unique_ptr<TestServer> large = TestServer::Start(kRdmaBinary);
  std::unique_ptr<TestClient> limited =
      TestClient::Connect(kRdmaBinary, large->uri(), {}, small);
  EXPECT_THROW(limited->store->echo(echoed, Pattern(2 << 20, 3)),
               TTransportException);
  std::vector<std::string> made;
  try {
    limited->store->make(made, {3 << 20}, 1);
    ADD_FAILURE() << "a 3 MiB reply passed a 1 MiB MaxMessageSize";
  } catch (const TTransportException& e) {
    EXPECT_NE(std::string(e.what()).find("MaxMessageSize"), std::string::npos)
        << e.what();
  }
  limited->store->make(made, {1000}, 1);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0], std::string(1000, 1));
}

// The recursion limit is the protocol's: a struct nested deeper than 64
// fails on the server as with sockets (the server drops the connection),
// the client sees a TTransportException, and the server serves on.
TEST(Limits, RecursionDepthIsHonoured) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  Nest deep;
  Nest* n = &deep;
  for (int i = 0; i < 80; ++i) {
    n->__set_child(std::make_shared<Nest>());
    n = n->child.get();
  }
  // The client's own protocol refuses to write it.
  EXPECT_THROW(client->store->depth(deep), apache::thrift::TException);
  // Sent by a client with a higher limit, the server's protocol refuses it.
  auto deeper = std::make_shared<TConfiguration>(256 << 20, 256 << 20, 200);
  std::unique_ptr<TestClient> daring =
      TestClient::Connect(kRdmaBinary, server->uri(), {}, deeper);
  EXPECT_THROW(daring->store->depth(deep), TTransportException);
  std::unique_ptr<TestClient> next =
      TestClient::Connect(kRdmaBinary, server->uri());
  EXPECT_EQ(next->store->depth(Nest()), 1);
}

// The server's transport limit (limits.max_call_size) is RDMA_ERROR
// ERR_CHUNK (RFC 8166 §4.5.2), a TTransportException naming it.
TEST(Limits, Rfc8166_4_5_2_CallsOverTheServersMaxCallSizeFail) {
  config::TransportConfig transport;
  transport.mutable_limits()->set_max_call_size(1 << 20);
  std::unique_ptr<TestServer> server =
      TestServer::Start(kRdmaBinary, nullptr, transport);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  std::string echoed;
  try {
    client->store->echo(echoed, Pattern(2 << 20, 1));
    ADD_FAILURE() << "a 2 MiB call passed a 1 MiB max_call_size";
  } catch (const TTransportException& e) {
    EXPECT_NE(std::string(e.what()).find("ERR_CHUNK"), std::string::npos)
        << e.what();
  }
  client->store->echo(echoed, "small");
  EXPECT_EQ(echoed, "small");
}

// stop() while calls are in the handler: they are answered, serve()
// returns, and the clients' next calls fail with a TTransportException.
class StopDuringCalls : public ::testing::TestWithParam<ServerKind> {};

TEST_P(StopDuringCalls, AnswersCallsInProgressThenEnds) {
  const test::Setup setup{GetParam(), ProtocolKind::kBinary, Wrapper::kPlain,
                          Fabric::kUnix};
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(setup, server->uri());
  client->store->ping();
  std::future<int64_t> in_progress = std::async(
      std::launch::async, [&] { return client->store->slow(400, 7); });
  std::this_thread::sleep_for(milliseconds(100));
  const Clock::time_point stop = Clock::now();
  server->Stop();
  EXPECT_LT(Clock::now() - stop, std::chrono::seconds(10));
  EXPECT_EQ(in_progress.get(), 7);
  EXPECT_THROW(client->store->ping(), TTransportException);
  EXPECT_FALSE(client->socket->isOpen());
}

INSTANTIATE_TEST_SUITE_P(Thrift, StopDuringCalls,
                         ::testing::Values(ServerKind::kSimple,
                                           ServerKind::kThreaded,
                                           ServerKind::kThreadPool,
                                           ServerKind::kRdma),
                         [](const ::testing::TestParamInfo<ServerKind>& param) {
                           return Setup{param.param}.Name();
                         });

// The server goes away during a call: the client's call fails with a
// TTransportException naming the cause, the socket is closed, and open()
// connects again once a server listens.
TEST(PeerLoss, ServerGoneMidCallThenReopen) {
  const test::Setup setup = kRdmaBinary;
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  const std::string uri = server->uri();
  std::unique_ptr<TestClient> client = TestClient::Connect(setup, uri);
  client->store->ping();
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    server->socket().close();  // the connection dies with the listener
  });
  try {
    client->store->slow(2000, 1);
    ADD_FAILURE() << "a call outlived its server";
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::END_OF_FILE);
    EXPECT_NE(std::string(e.what()).find("connection lost"), std::string::npos)
        << e.what();
  }
  killer.join();
  EXPECT_FALSE(client->socket->isOpen());
  try {
    client->store->ping();
    ADD_FAILURE() << "a call on a lost connection";
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::NOT_OPEN) << e.what();
  }
  server.reset();
  // A new server on the same address; the client reopens.
  auto socket = std::make_shared<TRdmaServerSocket>(uri);
  TRdmaServer again(
      std::make_shared<StoreProcessor>(std::make_shared<StoreHandler>()),
      socket, ProtocolFactory(ProtocolKind::kBinary), 2);
  std::thread serving([&] { again.serve(); });
  for (int i = 0; i < 200 && socket->uri().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  client->transport->open();
  client->store->ping();
  again.stop();
  serving.join();
}

// The client goes away while the server's handler runs: the reply is
// dropped, the server serves the next client.
TEST(PeerLoss, ClientGoneWhileTheHandlerRuns) {
  for (ServerKind kind : {ServerKind::kSimple, ServerKind::kRdma}) {
    const test::Setup setup{kind, ProtocolKind::kBinary, Wrapper::kPlain,
                            Fabric::kTcp};
    std::unique_ptr<TestServer> server = TestServer::Start(setup);
    {
      std::unique_ptr<TestClient> leaving =
          TestClient::Connect(setup, server->uri());
      leaving->store->send_slow(300, 1);
      std::this_thread::sleep_for(milliseconds(50));
    }
    std::unique_ptr<TestClient> next =
        TestClient::Connect(setup, server->uri());
    EXPECT_EQ(next->store->slow(1, 2), 2);
  }
}

// TMultiplexedProcessor and TMultiplexedProtocol: two services on one
// connection, the message names "Service:method".
class Multiplexed : public ::testing::TestWithParam<Setup> {};

class AdminHandler : public AdminIf {
 public:
  void version(std::string& out) override { out = "bridge-1"; }
  int32_t add(int32_t a, int32_t b) override { return a + b; }
};

TEST_P(Multiplexed, TwoServicesOnOneConnection) {
  const test::Setup setup = GetParam();
  auto processor = std::make_shared<apache::thrift::TMultiplexedProcessor>();
  auto store = std::make_shared<StoreHandler>();
  processor->registerProcessor("Store",
                               std::make_shared<StoreProcessor>(store));
  processor->registerProcessor("Admin", std::make_shared<AdminProcessor>(
                                            std::make_shared<AdminHandler>()));
  std::unique_ptr<TestServer> server = TestServer::Start(setup, processor);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(setup, server->uri());
  StoreClient store_client(
      std::make_shared<apache::thrift::protocol::TMultiplexedProtocol>(
          client->protocol, "Store"));
  AdminClient admin_client(
      std::make_shared<apache::thrift::protocol::TMultiplexedProtocol>(
          client->protocol, "Admin"));
  std::string v;
  admin_client.version(v);
  EXPECT_EQ(v, "bridge-1");
  EXPECT_EQ(admin_client.add(40, 2), 42);
  const std::string data = Pattern(300000, 4);
  std::string echoed;
  store_client.echo(echoed, data);
  EXPECT_EQ(echoed, data);
  store_client.note("n", 0, "");
  EXPECT_TRUE(store->WaitForNotes(1));
  // A service nobody registered.
  AdminClient nobody(
      std::make_shared<apache::thrift::protocol::TMultiplexedProtocol>(
          client->protocol, "Nobody"));
  EXPECT_THROW(nobody.version(v), apache::thrift::TApplicationException);
}

INSTANTIATE_TEST_SUITE_P(
    Thrift, Multiplexed,
    ::testing::Values(Setup{ServerKind::kRdma, ProtocolKind::kBinary,
                            Wrapper::kPlain, Fabric::kUnix},
                      Setup{ServerKind::kThreaded, ProtocolKind::kCompact,
                            Wrapper::kFramed, Fabric::kTcp},
                      Setup{ServerKind::kSimple, ProtocolKind::kJson,
                            Wrapper::kBuffered, Fabric::kUnix},
                      Setup{ServerKind::kThreadPool, ProtocolKind::kHeader,
                            Wrapper::kPlain, Fabric::kTcp}),
    SetupName);

}  // namespace
}  // namespace rpcrdma::test
