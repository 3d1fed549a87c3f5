// How programs are served: by libtirpc's svc_run beside its own TCP
// transport, on the adapter's threads, with the caller's address, and the
// backchannel (RFC 8167) in both directions through the same API.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/oncrpc/adapter_fixture.h"

namespace rpcrdma::test {

using oncrpc::AdapterConfig;
using oncrpc::ServerOf;

namespace {

// A hand-written program the tests serve beside testprog.
constexpr rpcprog_t kInfoProgram = 0x20008168;
constexpr rpcvers_t kInfoVersion = 1;
constexpr rpcproc_t kCallerFamily = 1;  // void -> u_int (sa_family)
constexpr rpcproc_t kConnection = 2;    // void -> u_quad (svc_rdma_connection)
constexpr rpcproc_t kCallMeBack = 3;    // blob -> u_quad (hash of the echo)
constexpr rpcproc_t kKeepCallback = 4;  // void -> void
constexpr rpcproc_t kIncrement = 5;     // u_int (sleep ms) -> u_int (count)

// How many times kIncrement ran: not idempotent.
std::atomic<u_int> increments{0};

// The client's callback program (served on its backchannel).
constexpr rpcprog_t kCallbackProgram = 0x20008169;
constexpr rpcproc_t kCallbackEcho = 1;  // blob -> blob

// A callback CLIENT the server keeps after kKeepCallback was answered.
std::mutex kept_mu;
CLIENT* kept_callback = nullptr;

void InfoDispatch(svc_req* request, SVCXPRT* xprt) {
  switch (request->rq_proc) {
    case kCallerFamily: {
      const netbuf* caller = svc_getrpccaller(xprt);
      u_int family = caller->len == 0
                         ? 0
                         : static_cast<const sockaddr*>(caller->buf)->sa_family;
      svc_sendreply(xprt, AsXdrProc(&xdr_u_int),
                    reinterpret_cast<caddr_t>(&family));
      return;
    }
    case kConnection: {
      u_quad_t connection = svc_rdma_connection(request);
      svc_sendreply(xprt, AsXdrProc(&xdr_u_quad_t),
                    reinterpret_cast<caddr_t>(&connection));
      return;
    }
    case kCallMeBack: {
      blob argument{};
      if (!svc_getargs(xprt, AsXdrProc(&xdr_blob),
                       reinterpret_cast<caddr_t>(&argument))) {
        svcerr_decode(xprt);
        return;
      }
      // While serving the call, call its client back on its connection.
      CLIENT* back = clnt_rdma_callback_create(
          xprt, svc_rdma_connection(request), kCallbackProgram, 1);
      blob echoed{};
      timeval timeout{10, 0};
      u_quad_t hash = 0;
      if (back != nullptr &&
          clnt_call(back, kCallbackEcho, AsXdrProc(&xdr_blob),
                    reinterpret_cast<caddr_t>(&argument), AsXdrProc(&xdr_blob),
                    reinterpret_cast<caddr_t>(&echoed),
                    timeout) == RPC_SUCCESS) {
        hash = Fnv1a(0, reinterpret_cast<const uint8_t*>(echoed.blob_val),
                     echoed.blob_len);
        xdr_free(AsXdrProc(&xdr_blob), &echoed);
      }
      if (back != nullptr) clnt_destroy(back);
      svc_sendreply(xprt, AsXdrProc(&xdr_u_quad_t),
                    reinterpret_cast<caddr_t>(&hash));
      svc_freeargs(xprt, AsXdrProc(&xdr_blob),
                   reinterpret_cast<caddr_t>(&argument));
      return;
    }
    case kIncrement: {
      u_int sleep_ms = 0;
      if (!svc_getargs(xprt, AsXdrProc(&xdr_u_int),
                       reinterpret_cast<caddr_t>(&sleep_ms))) {
        svcerr_decode(xprt);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      u_int count = ++increments;
      svc_sendreply(xprt, AsXdrProc(&xdr_u_int),
                    reinterpret_cast<caddr_t>(&count));
      return;
    }
    case kKeepCallback: {
      std::lock_guard<std::mutex> lock(kept_mu);
      kept_callback = clnt_rdma_callback_create(
          xprt, svc_rdma_connection(request), kCallbackProgram, 1);
      svc_sendreply(xprt, AsXdrProc(&xdr_void), nullptr);
      return;
    }
    default:
      svcerr_noproc(xprt);
  }
}

std::atomic<int> callbacks_served{0};

void CallbackDispatch(svc_req* request, SVCXPRT* xprt) {
  if (request->rq_proc != kCallbackEcho) {
    svcerr_noproc(xprt);
    return;
  }
  blob argument{};
  if (!svc_getargs(xprt, AsXdrProc(&xdr_blob),
                   reinterpret_cast<caddr_t>(&argument))) {
    svcerr_decode(xprt);
    return;
  }
  ++callbacks_served;
  svc_sendreply(xprt, AsXdrProc(&xdr_blob),
                reinterpret_cast<caddr_t>(&argument));
  svc_freeargs(xprt, AsXdrProc(&xdr_blob),
               reinterpret_cast<caddr_t>(&argument));
}

class AdapterServiceTest : public AdapterTest {
 protected:
  void SetUp() override {
    AdapterTest::SetUp();
    ASSERT_TRUE(
        svc_reg(xprt_, kInfoProgram, kInfoVersion, InfoDispatch, nullptr));
  }
  void TearDown() override {
    svc_unreg(kInfoProgram, kInfoVersion);
    AdapterTest::TearDown();
  }
};

TEST_P(AdapterServiceTest, CallerAddressIsTheClientsOfTheCall) {
  CLIENT* info = Connect(TestConfig(), kInfoVersion, kInfoProgram);
  ASSERT_NE(info, nullptr);
  u_int family = 0;
  timeval timeout{5, 0};
  ASSERT_EQ(clnt_call(info, kCallerFamily, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_u_int), reinterpret_cast<caddr_t>(&family),
                      timeout),
            RPC_SUCCESS);
  EXPECT_EQ(family, GetParam() == "soft+tcp" ? u_int{AF_INET} : AF_UNIX);
  u_quad_t first = 0, second = 0;
  ASSERT_EQ(clnt_call(info, kConnection, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_u_quad_t),
                      reinterpret_cast<caddr_t>(&first), timeout),
            RPC_SUCCESS);
  CLIENT* other = Connect(TestConfig(), kInfoVersion, kInfoProgram);
  ASSERT_EQ(clnt_call(other, kConnection, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_u_quad_t),
                      reinterpret_cast<caddr_t>(&second), timeout),
            RPC_SUCCESS);
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, second);  // each connection its own
  clnt_destroy(other);
  clnt_destroy(info);
}

TEST_P(AdapterServiceTest, Rfc8167_ServerCallsTheClientBackWhileServing) {
  AdapterConfig config = TestConfig();
  config.backchannel = true;
  CLIENT* info = Connect(config, kInfoVersion, kInfoProgram);
  ASSERT_NE(info, nullptr);
  SVCXPRT* backchannel = svc_rdma_backchannel(info);
  ASSERT_NE(backchannel, nullptr);
  EXPECT_EQ(svc_rdma_backchannel(client()), nullptr);  // not configured
  ASSERT_TRUE(
      svc_reg(backchannel, kCallbackProgram, 1, CallbackDispatch, nullptr));
  ASSERT_TRUE(svc_rdma_run_threads(backchannel, 2));
  const int before = callbacks_served.load();
  for (size_t n : {size_t{0}, size_t{100}, size_t{900}}) {
    std::vector<uint8_t> data(n);
    FillPattern(n, data.data(), n);
    blob in{static_cast<u_int>(n), reinterpret_cast<char*>(data.data())};
    u_quad_t hash = 0;
    timeval timeout{10, 0};
    ASSERT_EQ(
        clnt_call(info, kCallMeBack, AsXdrProc(&xdr_blob),
                  reinterpret_cast<caddr_t>(&in), AsXdrProc(&xdr_u_quad_t),
                  reinterpret_cast<caddr_t>(&hash), timeout),
        RPC_SUCCESS)
        << rdma_oncrpc_error();
    EXPECT_EQ(hash, Fnv1a(0, data.data(), n)) << n;
  }
  EXPECT_EQ(callbacks_served.load(), before + 3);
  EXPECT_EQ(ServerOf(xprt_)->counters().backward_calls, 3u);
  svc_unreg(kCallbackProgram, 1);
  clnt_destroy(info);
}

TEST_P(AdapterServiceTest, Rfc8167_ACallbackClientOutlivesTheCallThatGaveIt) {
  AdapterConfig config = TestConfig();
  config.backchannel = true;
  CLIENT* info = Connect(config, kInfoVersion, kInfoProgram);
  ASSERT_NE(info, nullptr);
  SVCXPRT* backchannel = svc_rdma_backchannel(info);
  ASSERT_TRUE(
      svc_reg(backchannel, kCallbackProgram, 1, CallbackDispatch, nullptr));
  ASSERT_TRUE(svc_rdma_run_threads(backchannel, 1));
  timeval timeout{10, 0};
  ASSERT_EQ(clnt_call(info, kKeepCallback, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_void), nullptr, timeout),
            RPC_SUCCESS);
  CLIENT* back = nullptr;
  {
    std::lock_guard<std::mutex> lock(kept_mu);
    back = std::exchange(kept_callback, nullptr);
  }
  ASSERT_NE(back, nullptr);
  // Later, from another thread: a notification to the client.
  char text[] = "later";
  blob in{5, text};
  blob out{};
  ASSERT_EQ(clnt_call(back, kCallbackEcho, AsXdrProc(&xdr_blob),
                      reinterpret_cast<caddr_t>(&in), AsXdrProc(&xdr_blob),
                      reinterpret_cast<caddr_t>(&out), timeout),
            RPC_SUCCESS)
      << rdma_oncrpc_error();
  EXPECT_EQ(std::string(out.blob_val, out.blob_len), "later");
  xdr_free(AsXdrProc(&xdr_blob), &out);
  // Once the client is gone, its callbacks cannot be sent.
  svc_unreg(kCallbackProgram, 1);
  clnt_destroy(info);
  for (int i = 0; i < 500 && ServerOf(xprt_)->connections() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ServerOf(xprt_)->connections(), 0u);
  EXPECT_EQ(clnt_call(back, kCallbackEcho, AsXdrProc(&xdr_blob),
                      reinterpret_cast<caddr_t>(&in), AsXdrProc(&xdr_blob),
                      reinterpret_cast<caddr_t>(&out), timeout),
            RPC_CANTSEND);
  clnt_destroy(back);
}

u_int Increment(CLIENT* client, uint32_t xid, u_int sleep_ms = 0) {
  EXPECT_TRUE(clnt_control(client, CLSET_XID, reinterpret_cast<char*>(&xid)));
  u_int count = 0;
  timeval timeout{10, 0};
  EXPECT_EQ(
      clnt_call(client, kIncrement, AsXdrProc(&xdr_u_int),
                reinterpret_cast<caddr_t>(&sleep_ms), AsXdrProc(&xdr_u_int),
                reinterpret_cast<caddr_t>(&count), timeout),
      RPC_SUCCESS)
      << rdma_oncrpc_error();
  return count;
}

// RFC 5531 §9: a retransmission keeps the XID; the cache answers it with
// the first reply instead of running a non-idempotent procedure again.
TEST_P(AdapterServiceTest, ReplyCacheAnswersARetransmissionOnce) {
  ASSERT_TRUE(svc_rdma_enablecache(xprt_, 64, 0));
  EXPECT_FALSE(svc_rdma_enablecache(xprt_, 64, 0));  // once
  const rpcproc_t cached[] = {kIncrement};
  ASSERT_TRUE(
      svc_rdma_cache_only(xprt_, kInfoProgram, kInfoVersion, cached, 1));
  CLIENT* info = Connect(TestConfig(), kInfoVersion, kInfoProgram);
  ASSERT_NE(info, nullptr);
  const u_int before = increments.load();
  EXPECT_EQ(Increment(info, 0x5000), before + 1);
  // The same call again from the same client. (Another client's call with
  // the same XID is another call: hostile_test.cc.)
  EXPECT_EQ(Increment(info, 0x5000), before + 1);
  EXPECT_EQ(increments.load(), before + 1);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 1u);
  // Another XID is another call.
  EXPECT_EQ(Increment(info, 0x5001), before + 2);
  // A procedure not named in cache_only is never answered from the cache.
  u_quad_t connection = 0;
  timeval timeout{5, 0};
  for (int i = 0; i < 2; ++i) {
    uint32_t xid = 0x6000;
    ASSERT_TRUE(clnt_control(info, CLSET_XID, reinterpret_cast<char*>(&xid)));
    ASSERT_EQ(clnt_call(info, kConnection, AsXdrProc(&xdr_void), nullptr,
                        AsXdrProc(&xdr_u_quad_t),
                        reinterpret_cast<caddr_t>(&connection), timeout),
              RPC_SUCCESS);
  }
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 1u);
  clnt_destroy(info);
}

TEST_P(AdapterServiceTest, ConnectionEventsReachTheConfiguration) {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<ServerConnectionEvent> events;
  AdapterConfig config = TestConfig();
  config.on_connection = [&](const ServerConnectionEvent& event) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(event);
    changed.notify_all();
  };
  StopServer();
  StartServer(config, /*threads=*/2);
  ASSERT_TRUE(
      svc_reg(xprt_, kInfoProgram, kInfoVersion, InfoDispatch, nullptr));
  CLIENT* info = Connect(TestConfig(), kInfoVersion, kInfoProgram);
  ASSERT_NE(info, nullptr);
  u_quad_t connection = 0;
  timeval timeout{5, 0};
  ASSERT_EQ(clnt_call(info, kConnection, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_u_quad_t),
                      reinterpret_cast<caddr_t>(&connection), timeout),
            RPC_SUCCESS);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, ServerConnectionEvent::Type::kAccepted);
    EXPECT_EQ(events[0].connection.value(), connection);
  }
  absl::StatusOr<ConnectionInfo> settled =
      ServerOf(xprt_)->connection_info(ConnectionId(connection));
  ASSERT_TRUE(settled.ok()) << settled.status();
  EXPECT_EQ(settled->version, 1u);
  clnt_destroy(info);
  // Woken by the event itself: the wait used to sleep holding `mu`, which
  // the loop thread needs to report it, and could run out on a loaded
  // machine. The bound only keeps a lost event from hanging the test.
  std::unique_lock<std::mutex> lock(mu);
  changed.wait_for(lock, std::chrono::seconds(60),
                   [&] { return events.size() >= 2; });
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].type, ServerConnectionEvent::Type::kClosed);
}

// A TCP listener on loopback that libtirpc's own svc_vc serves.
int ListenTcp(uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(fd, 8) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

CLIENT* ConnectTcp(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return nullptr;
  }
  netbuf server{sizeof address, sizeof address, &address};
  CLIENT* client = clnt_vc_create(fd, &server, TESTPROG, TESTVERS, 0, 0);
  if (client != nullptr) clnt_control(client, CLSET_FD_CLOSE, nullptr);
  return client;
}

TEST_P(AdapterServiceTest, SvcRunServesItBesideLibtirpcsOwnTcp) {
  // A server without dispatch threads of its own: svc_run polls its
  // descriptor with the TCP transport's.
  StopServer();
  StartServer(TestConfig(), /*threads=*/0);
  uint16_t port = 0;
  const int listener = ListenTcp(port);
  ASSERT_GE(listener, 0);
  SVCXPRT* tcp = svc_vc_create(listener, 0, 0);
  ASSERT_NE(tcp, nullptr);
  ASSERT_TRUE(svc_reg(tcp, TESTPROG, TESTVERS, testprog_1, nullptr));
  std::thread loop([] { svc_run(); });

  CLIENT* over_tcp = ConnectTcp(port);
  ASSERT_NE(over_tcp, nullptr);
  for (CLIENT* c : {client(), over_tcp}) {
    std::vector<uint8_t> data(200000);
    FillPattern(3, data.data(), data.size());
    blob in{static_cast<u_int>(data.size()),
            reinterpret_cast<char*>(data.data())};
    blob out{};
    ASSERT_EQ(testproc_echo_1(&in, &out, c), RPC_SUCCESS)
        << rdma_oncrpc_error();
    EXPECT_EQ(std::vector<uint8_t>(out.blob_val, out.blob_val + out.blob_len),
              data);
    xdr_free(AsXdrProc(&xdr_blob), &out);
  }
  EXPECT_EQ(server_counters().calls, 1u);

  // svc_exit ends svc_run once its poll wakes: a call wakes it (and is
  // not answered: svc_exit emptied the poll set).
  svc_exit();
  timeval brief{0, 100000};
  ASSERT_TRUE(
      clnt_control(client(), CLSET_TIMEOUT, reinterpret_cast<char*>(&brief)));
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_TIMEDOUT);
  loop.join();
  clnt_destroy(over_tcp);
  svc_destroy(tcp);
}

// A poll loop of one's own reads the connections while it serves them
// (svc_rdma.h); once svc_rdma_run_threads hands the calls to threads, the
// adapter reads them again, with or without the loop.
TEST_P(AdapterServiceTest, ThreadsTakeOverFromAPollLoop) {
  StopServer();
  StartServer(TestConfig(), /*threads=*/0);
  std::atomic<bool> stop{false};
  std::thread loop([&stop] {
    while (!stop.load()) {
      std::vector<pollfd> fds(svc_pollfd, svc_pollfd + svc_max_pollfd);
      if (poll(fds.data(), fds.size(), 10) > 0) {
        svc_getreq_poll(fds.data(), static_cast<int>(fds.size()));
      }
    }
  });
  std::vector<uint8_t> data(300000);
  FillPattern(5, data.data(), data.size());
  auto echo_matches = [&] {
    blob in{static_cast<u_int>(data.size()),
            reinterpret_cast<char*>(data.data())};
    blob out{};
    const bool ok =
        testproc_echo_1(&in, &out, client()) == RPC_SUCCESS &&
        std::vector<uint8_t>(out.blob_val, out.blob_val + out.blob_len) == data;
    xdr_free(AsXdrProc(&xdr_blob), &out);
    return ok;
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS)
        << rdma_oncrpc_error();
    ASSERT_TRUE(echo_matches()) << rdma_oncrpc_error();
  }
  stop.store(true);
  loop.join();
  ASSERT_TRUE(svc_rdma_run_threads(xprt_, 2));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS)
        << rdma_oncrpc_error();
    ASSERT_TRUE(echo_matches()) << rdma_oncrpc_error();
  }
  EXPECT_EQ(server_counters().calls, 12u);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, AdapterServiceTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         SchemeName);

}  // namespace
}  // namespace rpcrdma::test
