// Hostile peers against the Thrift bridge's servers: a raw client (a
// Channel of the public API sending octets a test builds) whose calls carry
// Thrift messages no Thrift client would write. Whatever such a call
// makes a server do, it ends that call or its connection, never the
// process, and the server goes on answering other clients.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "bridge/config_defaults.h"
#include "bridge/listener.h"
#include "bridge/server_transports.h"
#include "bridge/wire/thrift_xdr.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"
#include "tests/api/process_stats.h"
#include "tests/testing/sanitizer.h"
#include "tests/thrift/harness.h"
#include "tests/thrift/raw_binary_protocol.h"

namespace rpcrdma::test {

namespace internal = thrift::internal;
namespace wire = thrift::wire;
using thrift::TRdmaServer;
using thrift::TRdmaServerSocket;
using thrift::TRdmaSocket;
using thrift::TRdmaSocketOptions;

namespace {

using Clock = std::chrono::steady_clock;

// A raw client of the bridge program: THRIFT_CALL and friends built here.
class RawClient {
 public:
  static std::unique_ptr<RawClient> Connect(const std::string& uri) {
    absl::StatusOr<std::unique_ptr<Channel>> channel =
        Channel::Create(uri, config::TransportConfig{});
    if (!channel.ok()) {
      ADD_FAILURE() << channel.status();
      return nullptr;
    }
    auto client = std::make_unique<RawClient>();
    client->channel = *std::move(channel);
    return client;
  }

  // Sends `rpc` (a complete RPC call message) and waits at most a minute:
  // a loaded machine is slow, but a wedged server never answers.
  absl::StatusOr<Reply> Send(std::vector<uint8_t> rpc,
                             uint32_t max_reply = 64 * 1024) {
    CallRequest request;
    request.xdr = std::move(rpc);
    request.max_reply_size = max_reply;
    request.deadline = Clock::now() + std::chrono::seconds(60);
    return channel->BlockingCall(std::move(request));
  }

  // THRIFT_CALL carrying `thrift` as the message's leading octets and
  // accepting a reduced reply of `max_reply` octets.
  absl::StatusOr<Reply> Call(absl::Span<const uint8_t> thrift,
                             uint32_t max_reply = 64 * 1024) {
    std::vector<uint8_t> rpc =
        wire::CallHeader(next_xid++, wire::Procedure::kCall);
    wire::XdrWriter(rpc).Uint32(max_reply);
    wire::OutgoingMessage message;
    message.leading = thrift;
    std::vector<uint32_t> positions;
    wire::EncodeMessage(message, rpc, positions);
    return Send(std::move(rpc));
  }

  // The thrift_status of a THRIFT_CALL's reply; nullopt when the call
  // failed or was not answered SUCCESS.
  std::optional<wire::Status> StatusOf(const absl::StatusOr<Reply>& reply) {
    if (!reply.ok()) return std::nullopt;
    absl::StatusOr<size_t> results =
        wire::DecodeReplyHeader(reply->xdr.span(), next_xid - 1);
    if (!results.ok()) return std::nullopt;
    wire::XdrReader in(reply->xdr.span().subspan(*results));
    absl::StatusOr<uint32_t> status = in.Uint32("status");
    if (!status.ok()) return std::nullopt;
    return static_cast<wire::Status>(*status);
  }

  std::unique_ptr<Channel> channel;
  uint32_t next_xid = 1;
};

// The server still answers a well-behaved client.
void ExpectServes(const Setup& setup, const std::string& uri) {
  std::unique_ptr<TestClient> client = TestClient::Connect(setup, uri);
  std::string out;
  client->store->echo(out, "still here");
  EXPECT_EQ(out, "still here");
}

// The binary protocol, unwrapped, over soft+unix (a function: inside a
// test, gtest's Test::Setup hides the harness's Setup).
Setup PlainSetup(ServerKind server) {
  return Setup{server, ProtocolKind::kBinary, Wrapper::kPlain, Fabric::kUnix};
}

class HostileCall : public ::testing::TestWithParam<ServerKind> {
 protected:
  auto setup() const { return PlainSetup(GetParam()); }
};

// A list<binary> header claiming 2^31-1 elements: Thrift 0.17's own check
// (element count times minimum size, multiplied in int) overflows and lets
// it through, and the generated code's vector::resize throws
// std::bad_alloc. The call's connection ends; the process and the server
// go on.
//
// Whether the check overflows depends on the compiler that instantiated
// Thrift's protocol templates (the overflow is undefined behaviour: GCC
// multiplies in 32 bits and gets -4, clang widens first and refuses), and
// no transport can see it: the count is one of the four-octet reads a
// protocol makes, and the allocation follows in the generated code, which
// the bridge does not run. TRdmaServer (the bridge's) and
// TThreadPoolServer (its worker catches everything) end the connection;
// TThreadedServer lets the exception end the process (TConnectedClient
// catches only Thrift's exceptions), over TServerSocket as over the
// bridge, so it is not run against this call.
//
// Under the sanitizers the overflow itself is reported (UBSan halts on it)
// and the allocation is one AddressSanitizer refuses: there
// StdExceptionEndsTheConnectionNotTheProcess covers the same path.
TEST_P(HostileCall, ProcessingFailureEndsTheCallNotTheProcess) {
  if (GetParam() == ServerKind::kThreaded) {
    GTEST_SKIP() << "TThreadedServer ends the process on a processor's "
                    "std::bad_alloc whatever its transport";
  }
  if (kUnderSanitizer) {
    GTEST_SKIP() << "Thrift's own size check overflows (undefined "
                    "behaviour) before the allocation this call causes";
  }
  std::unique_ptr<TestServer> server = TestServer::Start(setup());
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  const std::vector<uint8_t> call =
      ListHeaderCall("sizes", kTypeString, 0x7fffffffu);
  absl::StatusOr<Reply> reply = raw->Call(call);
  // No THRIFT_OK reply can come from a message that does not decode; the
  // call ends with its connection (or an error reply), not by deadline.
  EXPECT_NE(reply.status().code(), absl::StatusCode::kDeadlineExceeded)
      << reply.status();
  ExpectServes(setup(), server->uri());
}

// A processor that fails with an exception that is not Thrift's, as the
// generated code does with std::bad_alloc when a container header claims
// more elements than memory holds (whether Thrift 0.17's size check lets
// 2^31-1 through depends on how libthrift was compiled: it multiplies in
// int, and the overflow is undefined behaviour). TRdmaServer ends the
// connection. Thrift's own servers let such an exception end the process
// (TConnectedClient catches only Thrift's), over sockets as over the
// bridge: there the bridge's part is that no message makes the generated
// code allocate more than the message can hold (below).
class BadAllocProcessor : public apache::thrift::TProcessor {
 public:
  bool process(std::shared_ptr<apache::thrift::protocol::TProtocol> in,
               std::shared_ptr<apache::thrift::protocol::TProtocol> /*out*/,
               void* /*context*/) override {
    std::string name;
    apache::thrift::protocol::TMessageType type;
    int32_t seqid = 0;
    in->readMessageBegin(name, type, seqid);
    throw std::bad_alloc();
  }
};

TEST(ProcessingFailure, StdExceptionEndsTheConnectionNotTheProcess) {
  const auto rdma = PlainSetup(ServerKind::kRdma);
  std::unique_ptr<TestServer> failing =
      TestServer::Start(rdma, std::make_shared<BadAllocProcessor>());
  for (int i = 0; i < 2; ++i) {
    // The failing server ends each connection and goes on accepting.
    std::unique_ptr<TestClient> client =
        TestClient::Connect(rdma, failing->uri());
    EXPECT_ANY_THROW(client->store->ping());
  }
  // The process lives on: another server of it answers.
  std::unique_ptr<TestServer> server = TestServer::Start(rdma);
  ExpectServes(rdma, server->uri());
}

// An application's protocol factory that fails for every call.
class FailingProtocolFactory
    : public apache::thrift::protocol::TProtocolFactory {
 public:
  std::shared_ptr<apache::thrift::protocol::TProtocol> getProtocol(
      std::shared_ptr<apache::thrift::transport::TTransport> /*trans*/)
      override {
    throw std::runtime_error("no protocol for this call");
  }
};

// TRdmaServer runs the application's factories for each call on its
// workers: their failures end the connection too, not the process.
TEST(ProcessingFailure, FailingFactoryEndsTheConnectionNotTheProcess) {
  const auto rdma = PlainSetup(ServerKind::kRdma);
  auto socket = std::make_shared<TRdmaServerSocket>(ServerUri(Fabric::kUnix));
  auto server = std::make_shared<TRdmaServer>(
      std::make_shared<StoreProcessor>(std::make_shared<StoreHandler>()),
      socket, std::make_shared<FailingProtocolFactory>(), 2);
  std::thread serving([server] { server->serve(); });
  const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
  while (socket->uri().empty() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(socket->uri().empty()) << "the server did not listen";
  {
    std::unique_ptr<TestClient> client =
        TestClient::Connect(rdma, socket->uri());
    client->socket->setRecvTimeout(30000);
    EXPECT_ANY_THROW(client->store->ping());
  }
  server->stop();
  serving.join();
  // The process lives on: another server of it answers.
  std::unique_ptr<TestServer> other = TestServer::Start(rdma);
  ExpectServes(rdma, other->uri());
}

// Whatever fails inside a connection's transport reaches Thrift's servers
// as a TTransportException, the one kind TConnectedClient catches (here
// the transport's close callback, TRdmaServerSocket's bookkeeping, fails
// with a std::runtime_error).
TEST(ProcessingFailure, TransportFailuresReachThriftAsTransportExceptions) {
  auto state = std::make_shared<internal::ConnectionState>(
      ConnectionId(1), "peer", std::weak_ptr<internal::Listener>());
  internal::ConnectionTransport transport(
      state, internal::ResponderLimits{},
      std::make_shared<apache::thrift::TConfiguration>(),
      [] { throw std::runtime_error("the close callback failed"); });
  try {
    transport.close();
    ADD_FAILURE() << "close() returned";
  } catch (const apache::thrift::transport::TTransportException& e) {
    EXPECT_EQ(e.getType(),
              apache::thrift::transport::TTransportException::INTERNAL_ERROR)
        << e.what();
    EXPECT_TRUE(absl::StrContains(e.what(), "the close callback failed"))
        << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a non-Thrift exception escaped: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Thrift, HostileCall,
                         ::testing::Values(ServerKind::kRdma,
                                           ServerKind::kThreaded,
                                           ServerKind::kThreadPool),
                         [](const ::testing::TestParamInfo<ServerKind>& p) {
                           switch (p.param) {
                             case ServerKind::kRdma:
                               return std::string("TRdmaServer");
                             case ServerKind::kThreaded:
                               return std::string("TThreadedServer");
                             case ServerKind::kThreadPool:
                               return std::string("TThreadPoolServer");
                             case ServerKind::kSimple:
                               break;
                           }
                           return std::string("TSimpleServer");
                         });

// ---- Tiny messages, huge allocations ----------------------------------------

// Peak resident size of this process (VmHWM), after resetting it to the
// current resident size (/proc/self/clear_refs "5"); 0 when the peak
// cannot be reset or read.
bool ResetPeakResident() {
  int fd = open("/proc/self/clear_refs", O_WRONLY);
  if (fd < 0) return false;
  const bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}
uint64_t PeakResident() {
  const long kib = ProcValue("/proc/self/status", "VmHWM:");
  return kib > 0 ? static_cast<uint64_t>(kib) * 1024 : 0;
}
uint64_t CurrentResident() {
  const long kib = ProcValue("/proc/self/status", "VmRSS:");
  return kib > 0 ? static_cast<uint64_t>(kib) * 1024 : 0;
}

// Sends `call` to `server` and expects it refused without the allocation
// its claimed length asks for, then the server still serving. The server
// runs in this process: what the call made it allocate shows in the peak
// resident size (a few MB of noise from other threads and the allocator).
void ExpectRefusedUnallocated(const Setup& setup, const TestServer& server,
                              RawClient& raw,
                              const std::vector<uint8_t>& call) {
  const bool measured = ResetPeakResident();
  const uint64_t before = CurrentResident();
  absl::StatusOr<Reply> reply = raw.Call(call);
  const uint64_t peak = PeakResident();
  EXPECT_NE(reply.status().code(), absl::StatusCode::kDeadlineExceeded)
      << reply.status();
  // An answer, if any, is an error: the call was not processed.
  EXPECT_NE(raw.StatusOf(reply), wire::Status::kOk);
  if (!kUnderSanitizer && measured && before != 0 && peak != 0) {
    // Resident counters are synchronised lazily: the peak may read a few
    // pages below the sample taken after the reset.
    const uint64_t growth = peak > before ? peak - before : 0;
    ::testing::Test::RecordProperty("resident_growth_octets",
                                    std::to_string(growth));
    EXPECT_LT(growth, uint64_t{32} << 20)
        << "before " << before << " peak " << peak;
  }
  ExpectServes(setup, server.uri());
}

// A 26-octet call whose list<i32> header claims 25 million elements (100
// MB, under the server's MaxMessageSize): the server knows the message's
// real size and refuses it before allocating for it (100 MB before the
// fix).
TEST_P(HostileCall, ContainerLargerThanItsMessageIsRefusedUnallocated) {
  std::unique_ptr<TestServer> server = TestServer::Start(setup());
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  ExpectRefusedUnallocated(setup(), *server, *raw,
                           ListHeaderCall("make", kTypeI32, 25'000'000u));
}

// A strict TBinaryProtocol call of Store.echo whose binary claims `claimed`
// octets and carries none.
std::vector<uint8_t> EchoClaimCall(uint32_t claimed) {
  std::vector<uint8_t> out;
  PutCallHeader(out, "echo");
  PutU8(out, kTypeString);
  PutU16(out, 1);
  PutU32(out, claimed);
  return out;
}

// A 23-octet call whose binary claims 96 MiB (under the MaxMessageSize):
// TBinaryProtocol allocates a string's claimed length when the transport
// cannot lend it, before reading a single octet of it. The server's
// transport refuses a claim longer than the rest of the message, so the
// call ends its connection without that allocation, under every server.
TEST_P(HostileCall, StringLongerThanItsMessageIsRefusedUnallocated) {
  std::unique_ptr<TestServer> server = TestServer::Start(setup());
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  // Before the fix the server allocated and zeroed the 96 MiB, then
  // failed reading them.
  ExpectRefusedUnallocated(setup(), *server, *raw, EchoClaimCall(96u << 20));
}

// ---- Deferred replies -------------------------------------------------------

const Setup kRdmaBinary{ServerKind::kRdma, ProtocolKind::kBinary,
                        Wrapper::kPlain, Fabric::kUnix};

// Calls whose replies are kept for a THRIFT_FETCH that never comes, as
// many as TRdmaServer has workers (the harness's four): the workers go on
// serving other clients.
TEST(DeferredReplies, UnfetchedRepliesHoldNoWorker) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  const std::vector<uint8_t> call = EchoCall(100);
  for (int i = 0; i < 4; ++i) {
    // max_reply 0: no reply fits, every one is kept (THRIFT_DEFERRED).
    absl::StatusOr<Reply> reply = raw->Call(call, /*max_reply=*/0);
    ASSERT_EQ(raw->StatusOf(reply), wire::Status::kDeferred) << reply.status();
  }
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  // Generous: a wedged server never answers, a loaded machine does.
  client->socket->setRecvTimeout(30000);
  std::string out;
  EXPECT_NO_THROW(client->store->echo(out, "served"));
  EXPECT_EQ(out, "served");
}

// Kept replies have a bound per connection: beyond it a call whose reply
// does not fit is refused rather than kept.
TEST(DeferredReplies, KeptRepliesAreBoundedPerConnection) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  // 48 replies of 2 MiB: more octets than a connection keeps.
  const std::vector<uint8_t> call = EchoCall(2 << 20);
  int deferred = 0, refused = 0;
  for (int i = 0; i < 48; ++i) {
    absl::StatusOr<Reply> reply = raw->Call(call, /*max_reply=*/0);
    std::optional<wire::Status> status = raw->StatusOf(reply);
    ASSERT_TRUE(status.has_value()) << i << ": " << reply.status();
    if (*status == wire::Status::kDeferred) ++deferred;
    if (*status == wire::Status::kRefused) ++refused;
  }
  EXPECT_GT(deferred, 0);
  EXPECT_LT(deferred, 48);
  EXPECT_EQ(deferred + refused, 48);
  ExpectServes(kRdmaBinary, server->uri());
}

// ---- Oneway floods ----------------------------------------------------------

// Store.note that waits until the test opens the gate.
class GatedHandler : public StoreHandler {
 public:
  void note(const std::string& what, int32_t millis,
            const std::string& attachment) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return open_; });
    }
    StoreHandler::note(what, millis, attachment);
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// RFC 8166 §3.3.1: a oneway answered on receipt returns its credit before
// it is processed. Such acknowledged but unprocessed oneways are bounded
// per connection; beyond the bound the client waits for processing.
TEST(OnewayFlood, Rfc8166_3_3_1_AcknowledgedOnewaysAreBounded) {
  auto handler = std::make_shared<GatedHandler>();
  std::unique_ptr<TestServer> server =
      TestServer::Start(kRdmaBinary, std::make_shared<StoreProcessor>(handler));
  std::unique_ptr<TestClient> client =
      TestClient::Connect(kRdmaBinary, server->uri());
  constexpr int kNotes = 64;
  const std::string attachment(1 << 20, 'n');
  std::atomic<int> sent{0};
  std::thread sender([&] {
    for (int i = 0; i < kNotes; ++i) {
      client->store->note("flood", 0, attachment);
      ++sent;
    }
  });
  // Without a bound all 64 MiB are acknowledged at once; with it the
  // sender stops well short while the handler is held. Waiting the whole
  // time is what a bounded server makes this test do.
  const Clock::time_point until = Clock::now() + std::chrono::seconds(10);
  while (sent.load() < kNotes && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int acknowledged = sent.load();
  handler->Open();
  sender.join();
  EXPECT_LT(acknowledged, kNotes / 2);
  EXPECT_TRUE(handler->WaitForNotes(kNotes));
}

// ---- Server timeouts --------------------------------------------------------

// A server keeps the transport's idle disconnect and handshake limit
// (RDMA has no keepalives: a silent peer would otherwise hold a
// TThreadPoolServer's thread for ever); a client keeps TSocket's
// behaviour, no idle disconnect; what the user sets stays.
TEST(ServerDefaults, ServersKeepTheTransportsIdleAndHandshakeLimits) {
  apache::thrift::TConfiguration limits;
  const config::TransportConfig server =
      internal::ServerTransportConfig(config::TransportConfig{}, limits);
  EXPECT_FALSE(server.timeouts().has_idle_ms()) << server.timeouts().idle_ms();
  EXPECT_FALSE(server.timeouts().has_handshake_ms());
  config::TransportConfig set;
  set.mutable_timeouts()->set_idle_ms(1234);
  EXPECT_EQ(internal::ServerTransportConfig(set, limits).timeouts().idle_ms(),
            1234);
  EXPECT_EQ(internal::ClientTransportConfig(config::TransportConfig{})
                .timeouts()
                .idle_ms(),
            0);
}

// TRdmaServerSocket's receive timeout, as TServerSocket's: a connection
// that sends no call ends, freeing the TThreadPoolServer thread serving it.
TEST(ServerTimeouts, SilentConnectionEndsAfterTheRecvTimeout) {
  const auto setup = PlainSetup(ServerKind::kThreadPool);
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  server->socket().setRecvTimeout(300);
  std::unique_ptr<RawClient> silent = RawClient::Connect(server->uri());
  ASSERT_NE(silent, nullptr);
  const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
  while (silent->channel->connected() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(silent->channel->connected());
  ExpectServes(setup, server->uri());
}

// Accept timeouts make Thrift's servers accept again, as with
// TServerSocket.
TEST(ServerTimeouts, AcceptTimeoutKeepsTheServerServing) {
  const auto setup = PlainSetup(ServerKind::kThreaded);
  std::unique_ptr<TestServer> server = TestServer::Start(setup);
  server->socket().setAcceptTimeout(20);
  ExpectServes(setup, server->uri());  // ends the accept without a limit
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ExpectServes(setup, server->uri());
}

// ---- The client side --------------------------------------------------------

// A client's receive timeout holds whether it was set before open() or
// the socket was reopened since (as TSocket's does).
TEST(ClientTimeouts, RecvTimeoutSetBeforeOpenHoldsAcrossReopen) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  auto socket = std::make_shared<TRdmaSocket>(server->uri());
  socket->setRecvTimeout(300);
  auto protocol = MakeProtocol(ProtocolKind::kBinary, socket);
  StoreClient store(protocol);
  socket->open();
  try {
    store.slow(5000, 1);
    ADD_FAILURE() << "a 5 s call returned under a 300 ms receive timeout";
  } catch (const apache::thrift::transport::TTransportException& e) {
    EXPECT_EQ(e.getType(),
              apache::thrift::transport::TTransportException::TIMED_OUT)
        << e.what();
  }
  socket->close();
  socket->open();
  try {
    store.slow(5000, 2);
    ADD_FAILURE() << "the receive timeout did not survive a reopen";
  } catch (const apache::thrift::transport::TTransportException& e) {
    EXPECT_EQ(e.getType(),
              apache::thrift::transport::TTransportException::TIMED_OUT)
        << e.what();
  }
  socket->close();
}

// A hostile server: every THRIFT_CALL is answered THRIFT_DEFERRED with a
// bulk item of 2^31-1 octets; what the client offered is recorded.
class DeferringServer {
 public:
  DeferringServer() {
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::Create(ServerUri(Fabric::kUnix), config::TransportConfig{},
                       [this](IncomingCall call, Responder responder) {
                         Serve(std::move(call), std::move(responder));
                       });
    if (!server.ok()) {
      ADD_FAILURE() << server.status();
      return;
    }
    server_ = *std::move(server);
  }
  std::string uri() const { return server_->uri(); }
  std::vector<std::vector<uint64_t>> offered() {
    std::lock_guard<std::mutex> lock(mu_);
    return offered_;
  }
  std::vector<bool> discards() {
    std::lock_guard<std::mutex> lock(mu_);
    return discards_;
  }

 private:
  void Serve(IncomingCall call, Responder responder) {
    absl::StatusOr<wire::DecodedCallHeader> header =
        wire::DecodeCallHeader(call.message.span());
    if (!header.ok()) return;
    std::vector<uint8_t> reply = wire::ReplyHeader(call.xid);
    wire::XdrWriter w(reply);
    if (header->procedure == static_cast<uint32_t>(wire::Procedure::kFetch)) {
      absl::StatusOr<wire::FetchArgs> args = wire::DecodeFetchArgs(
          call.message.span().subspan(header->body_offset));
      {
        std::lock_guard<std::mutex> lock(mu_);
        discards_.push_back(args.ok() && args->discard);
      }
      w.Uint32(static_cast<uint32_t>(wire::Status::kNoReply));
    } else {
      {
        std::lock_guard<std::mutex> lock(mu_);
        offered_.push_back(call.write_chunk_capacities);
      }
      w.Uint32(static_cast<uint32_t>(wire::Status::kDeferred));
      wire::Deferred deferred;
      deferred.ticket = 7;
      deferred.reduced_size = 100;
      deferred.bulk_sizes = {0x7fffffffu};
      wire::EncodeDeferred(deferred, reply);
    }
    (void)responder.Send(HandlerReply(std::move(reply)));
  }

  std::mutex mu_;
  std::vector<std::vector<uint64_t>> offered_;
  std::vector<bool> discards_;
  std::unique_ptr<Server> server_;
};

// A deferred reply over the client's MaxMessageSize is discarded, and its
// sizes are not learnt: the method's later calls offer no 2 GiB chunk.
TEST(ClientLearning, SizesOverTheMaxMessageSizeAreNeverLearnt) {
  DeferringServer server;
  auto limits = std::make_shared<apache::thrift::TConfiguration>();
  auto socket = std::make_shared<TRdmaSocket>(
      server.uri(), config::TransportConfig{}, TRdmaSocketOptions{}, limits);
  socket->setRecvTimeout(30000);
  auto protocol = MakeProtocol(ProtocolKind::kBinary, socket);
  StoreClient store(protocol);
  socket->open();
  for (int i = 0; i < 2; ++i) {
    std::string out;
    EXPECT_ANY_THROW(store.echo(out, "x"));
    if (!socket->isOpen()) socket->open();
  }
  const std::vector<bool> discards = server.discards();
  ASSERT_FALSE(discards.empty());
  for (bool d : discards) EXPECT_TRUE(d);
  const std::vector<std::vector<uint64_t>> offered = server.offered();
  ASSERT_EQ(offered.size(), 2u);
  for (const std::vector<uint64_t>& call : offered) {
    for (uint64_t chunk : call) {
      EXPECT_LE(chunk, static_cast<uint64_t>(limits->getMaxMessageSize()));
    }
  }
}

// ---- RFC 5531 answers -------------------------------------------------------

// An RPC call of the bridge program with the given rpcvers, credential and
// verifier, procedure NULL.
std::vector<uint8_t> NullCall(uint32_t xid, uint32_t rpcvers,
                              uint32_t cred_flavor,
                              const std::vector<uint8_t>& cred_body,
                              uint32_t verf_flavor = 0) {
  std::vector<uint8_t> out;
  // Appending to a vector, the writes cannot fail.
  XdrWriter call(&out);
  (void)call.WriteUint32("xid", xid);
  (void)call.WriteUint32("mtype", 0);  // CALL
  (void)call.WriteUint32("rpcvers", rpcvers);
  (void)call.WriteUint32("prog", 0x20007468u);
  (void)call.WriteUint32("vers", 1);
  (void)call.WriteUint32("proc", 0);
  (void)call.WriteUint32("cred.flavor", cred_flavor);
  (void)call.WriteVarOpaque("cred.body", cred_body);
  (void)call.WriteUint32("verf.flavor", verf_flavor);
  (void)call.WriteVarOpaque("verf.body", {});
  return out;
}

std::vector<uint32_t> Words(const Reply& reply) {
  std::vector<uint32_t> words;
  absl::Span<const uint8_t> x = reply.xdr.span();
  for (size_t i = 0; i + 4 <= x.size(); i += 4) {
    words.push_back(LoadBigEndian32(x.data() + i));
  }
  return words;
}

std::vector<uint8_t> AuthSysBody(uint32_t gids) {
  // RFC 5531 Appendix A authsys_parms, written item by item: AuthSys()
  // refuses more than 16 gids, and the tests send more.
  std::vector<uint8_t> body;
  XdrWriter parms(&body);
  (void)parms.WriteUint32("stamp", 1);
  (void)parms.WriteString("machinename", "host");
  (void)parms.WriteUint32("uid", 1000);
  (void)parms.WriteUint32("gid", 1000);
  (void)parms.WriteUint32("gids.length", gids);
  for (uint32_t i = 0; i < gids; ++i) (void)parms.WriteUint32("gid", 100 + i);
  return body;
}

TEST(Rfc5531Answers, Rfc5531_9_OtherRpcVersionIsRpcMismatch) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  absl::StatusOr<Reply> reply = raw->Send(NullCall(10, 3, 0, {}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  // xid, REPLY, MSG_DENIED, RPC_MISMATCH, low 2, high 2.
  EXPECT_EQ(Words(*reply), (std::vector<uint32_t>{10, 1, 1, 0, 2, 2}));
}

TEST(Rfc5531Answers, Rfc5531_9_CredentialsTheBridgeDoesNotServeAreAuthError) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  // RPCSEC_GSS (6) and an unassigned flavor: AUTH_ERROR AUTH_BADCRED.
  for (uint32_t flavor : {6u, 12345u}) {
    absl::StatusOr<Reply> reply =
        raw->Send(NullCall(20 + flavor, 2, flavor, {1, 2, 3, 4}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(Words(*reply), (std::vector<uint32_t>{20 + flavor, 1, 1, 1, 1}))
        << "flavor " << flavor;
  }
  // Malformed AUTH_SYS: AUTH_BADCRED.
  std::vector<uint8_t> truncated = AuthSysBody(2);
  truncated.resize(truncated.size() - 4);
  for (const std::vector<uint8_t>& body :
       {std::vector<uint8_t>{0, 0, 0, 1}, truncated, AuthSysBody(17)}) {
    absl::StatusOr<Reply> reply = raw->Send(NullCall(30, 2, 1, body));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(Words(*reply), (std::vector<uint32_t>{30, 1, 1, 1, 1}));
  }
  // A verifier of another flavor: AUTH_BADVERF.
  absl::StatusOr<Reply> badverf = raw->Send(NullCall(40, 2, 0, {}, 6));
  ASSERT_TRUE(badverf.ok()) << badverf.status();
  EXPECT_EQ(Words(*badverf), (std::vector<uint32_t>{40, 1, 1, 1, 3}));
  // AUTH_NONE and well-formed AUTH_SYS are served: NULL answers SUCCESS.
  for (const auto& [flavor, body] :
       {std::pair<uint32_t, std::vector<uint8_t>>{0, {}},
        std::pair<uint32_t, std::vector<uint8_t>>{1, AuthSysBody(16)}}) {
    absl::StatusOr<Reply> reply = raw->Send(NullCall(50, 2, flavor, body));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(Words(*reply), (std::vector<uint32_t>{50, 1, 0, 0, 0, 0}))
        << "flavor " << flavor;
  }
}

// bridge/README.md: string name<4096>. A longer name does not decode.
TEST(Rfc5531Answers, Rfc5531_9_MethodNameOverItsBoundIsGarbageArgs) {
  std::unique_ptr<TestServer> server = TestServer::Start(kRdmaBinary);
  std::unique_ptr<RawClient> raw = RawClient::Connect(server->uri());
  ASSERT_NE(raw, nullptr);
  std::vector<uint8_t> rpc = wire::CallHeader(60, wire::Procedure::kCall);
  wire::XdrWriter w(rpc);
  w.Uint32(64 * 1024);
  w.String(std::string(wire::kMaxNameLength + 1, 'n'));
  w.Int32(1);
  w.Uint32(1);
  w.Opaque({});
  w.Uint32(0);
  absl::StatusOr<Reply> reply = raw->Send(std::move(rpc));
  ASSERT_TRUE(reply.ok()) << reply.status();
  // xid, REPLY, MSG_ACCEPTED, verifier AUTH_NONE, GARBAGE_ARGS.
  EXPECT_EQ(Words(*reply), (std::vector<uint32_t>{60, 1, 0, 0, 0, 4}));
}

}  // namespace
}  // namespace rpcrdma::test
