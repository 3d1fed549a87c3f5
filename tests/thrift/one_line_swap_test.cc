// The one-line swap: TSocket becomes TRdmaSocket and
// TServerSocket becomes TRdmaServerSocket, nothing else changes. Every
// server type (TSimpleServer, TThreadedServer, TThreadPoolServer,
// TRdmaServer) x protocol (binary, compact, JSON, header) x wrapping
// transport (none, buffered, framed) x soft fabric (Unix, TCP) serves the
// same scenario: every Thrift type, nested and optional fields, binaries
// around the thresholds, declared exceptions, TApplicationException
// (unknown method, a handler's failure), oneway calls and nested structs.
#include <thrift/TApplicationException.h>

#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {
namespace {

using apache::thrift::TApplicationException;
using Clock = std::chrono::steady_clock;

class OneLineSwap : public ::testing::TestWithParam<Setup> {};

TEST_P(OneLineSwap, ServesEveryTypeExceptionsOnewayAndBinaries) {
  const test::Setup setup = GetParam();
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  std::unique_ptr<TestClient> client =
      TestClient::Connect(setup, server->uri());
  StoreClient& store = *client->store;

  store.ping();
  const Everything value = FullValue(70000);
  Everything back;
  store.roundTrip(back, value);
  EXPECT_TRUE(back == value);

  // Around the 4096-octet inline threshold (the default bulk threshold).
  for (size_t size : {0, 1, 4095, 4096, 4097, 300000}) {
    const std::string data = Pattern(size, static_cast<uint8_t>(size));
    std::string echoed;
    store.echo(echoed, data);
    ASSERT_EQ(echoed.size(), size);
    EXPECT_TRUE(echoed == data) << size;
  }

  // Declared exceptions, with their fields.
  try {
    std::string v;
    store.get(v, "missing");
    ADD_FAILURE() << "get(missing) returned";
  } catch (const NotFound& e) {
    EXPECT_EQ(e.key, "missing");
    EXPECT_EQ(e.code, 404);
  }
  EXPECT_THROW(store.put("", "x"), Invalid);
  store.put("k", Pattern(5000, 9));
  std::string got;
  store.get(got, "k");
  EXPECT_TRUE(got == Pattern(5000, 9));

  // A handler's failure and an unknown method are TApplicationException.
  try {
    std::string v;
    store.fail(v, "handler failed on purpose");
    ADD_FAILURE() << "fail() returned";
  } catch (const TApplicationException& e) {
    EXPECT_NE(std::string(e.what()).find("handler failed on purpose"),
              std::string::npos)
        << e.what();
  }
  AdminClient admin(client->protocol);
  try {
    std::string v;
    admin.version(v);
    ADD_FAILURE() << "an unknown method returned";
  } catch (const TApplicationException& e) {
    EXPECT_EQ(e.getType(), TApplicationException::UNKNOWN_METHOD) << e.what();
  }

  // Oneway: back at once, the handler still runs.
  const Clock::time_point start = Clock::now();
  store.note("hello", 300, Pattern(10000, 3));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(250));
  EXPECT_TRUE(server->handler().WaitForNotes(1));
  EXPECT_EQ(server->handler().last_attachment_size(), 10000u);

  Nest nest;
  Nest* n = &nest;
  for (int i = 0; i < 9; ++i) {
    n->__set_child(std::make_shared<Nest>());
    n = n->child.get();
  }
  EXPECT_EQ(store.depth(nest), 10);
  store.ping();
}

std::vector<Setup> EverySetup() {
  std::vector<Setup> all;
  for (ServerKind s : {ServerKind::kSimple, ServerKind::kThreaded,
                       ServerKind::kThreadPool, ServerKind::kRdma}) {
    for (ProtocolKind p : {ProtocolKind::kBinary, ProtocolKind::kCompact,
                           ProtocolKind::kJson, ProtocolKind::kHeader}) {
      for (Wrapper w :
           {Wrapper::kPlain, Wrapper::kBuffered, Wrapper::kFramed}) {
        for (Fabric f : TestFabrics()) {
#ifdef RPCRDMA_THRIFT_TEST_VERBS
          // The VM's run stays short (it emulates its CPU): every server
          // with the binary protocol, every protocol with TRdmaServer,
          // every wrapper with TThreadedServer.
          const bool kept =
              (w == Wrapper::kPlain &&
               (p == ProtocolKind::kBinary || s == ServerKind::kRdma)) ||
              (s == ServerKind::kThreaded && p == ProtocolKind::kBinary);
          if (!kept) continue;
#endif
          all.push_back(Setup{s, p, w, f});
        }
      }
    }
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Thrift, OneLineSwap, ::testing::ValuesIn(EverySetup()),
                         SetupName);

}  // namespace
}  // namespace rpcrdma::test
