// Every clnt_stat a CLIENT over the adapter reports, each from the
// condition that gives it over TCP (svcerr_* from the dispatcher, replies
// libtirpc builds) or from the transport (timeouts, connection loss).
#include <rpc/rpc.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "rpcrdma/server.h"
#include "tests/oncrpc/adapter_fixture.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {

using oncrpc::CreateClient;

namespace {

using AdapterErrorTest = AdapterTest;

rpc_err ErrorOf(CLIENT* client) {
  rpc_err error{};
  clnt_geterr(client, &error);
  return error;
}

TEST_P(AdapterErrorTest, UnknownProcedureIsProcUnavail) {
  timeval timeout{5, 0};
  EXPECT_EQ(clnt_call(client(), 99, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_void), nullptr, timeout),
            RPC_PROCUNAVAIL);
}

// rdma_oncrpc_error() speaks of the thread's last failed clnt_call, also
// when the server's reply is the failure (RFC 5531 §9: PROC_UNAVAIL,
// GARBAGE_ARGS...), not of an earlier failure of the transport's.
TEST_P(AdapterErrorTest, ReplyErrorsAreTheLastErrorMessage) {
  char long_name[300];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  char* argument = long_name;
  timeval timeout{5, 0};
  ASSERT_EQ(clnt_call(client(), TESTPROC_NULL, AsXdrProc(&xdr_name),
                      reinterpret_cast<caddr_t>(&argument),
                      AsXdrProc(&xdr_void), nullptr, timeout),
            RPC_CANTENCODEARGS);
  ASSERT_TRUE(absl::StrContains(rdma_oncrpc_error(), "do not encode"));
  EXPECT_EQ(clnt_call(client(), 99, AsXdrProc(&xdr_void), nullptr,
                      AsXdrProc(&xdr_void), nullptr, timeout),
            RPC_PROCUNAVAIL);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "procedure 99"))
      << rdma_oncrpc_error();
  EXPECT_TRUE(
      absl::StrContains(rdma_oncrpc_error(), clnt_sperrno(RPC_PROCUNAVAIL)))
      << rdma_oncrpc_error();
}

TEST_P(AdapterErrorTest, UnknownVersionIsProgVersMismatchWithTheRange) {
  CLIENT* v2 = Connect(TestConfig(), /*version=*/2);
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, v2), RPC_PROGVERSMISMATCH);
  const rpc_err error = ErrorOf(v2);
  EXPECT_EQ(error.re_vers.low, TESTVERS);
  EXPECT_EQ(error.re_vers.high, TESTVERS);
  clnt_destroy(v2);
}

TEST_P(AdapterErrorTest, UnknownProgramIsProgUnavail) {
  CLIENT* other = Connect(TestConfig(), TESTVERS, TESTPROG + 1);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, other), RPC_PROGUNAVAIL);
  clnt_destroy(other);
}

TEST_P(AdapterErrorTest, ArgumentsTheServerCannotDecodeAreCantDecodeArgs) {
  // A length word of 100 and no octets: xdr_blob fails on the server, whose
  // dispatcher answers svcerr_decode (GARBAGE_ARGS).
  u_int length = 100;
  timeval timeout{5, 0};
  EXPECT_EQ(clnt_call(client(), TESTPROC_ECHO, AsXdrProc(&xdr_u_int),
                      reinterpret_cast<caddr_t>(&length), AsXdrProc(&xdr_void),
                      nullptr, timeout),
            RPC_CANTDECODEARGS);
}

TEST_P(AdapterErrorTest, AuthNoneRefusedByAProcedureIsAuthError) {
  u_int uid = 0;
  EXPECT_EQ(testproc_whoami_1(nullptr, &uid, client()), RPC_AUTHERROR);
  EXPECT_EQ(ErrorOf(client()).re_why, AUTH_TOOWEAK);
}

TEST_P(AdapterErrorTest, AuthSysCredentialsReachTheProcedure) {
  CLIENT* c = client();
  c->cl_auth = authunix_create_default();
  u_int uid = 0xffffffff;
  EXPECT_EQ(testproc_whoami_1(nullptr, &uid, c), RPC_SUCCESS)
      << rdma_oncrpc_error();
  EXPECT_EQ(uid, getuid());
  auth_destroy(c->cl_auth);
  c->cl_auth = authnone_create();
}

TEST_P(AdapterErrorTest, ResultsThatDoNotEncodeAreSystemError) {
  name out = nullptr;
  EXPECT_EQ(testproc_badresult_1(nullptr, &out, client()), RPC_SYSTEMERROR);
}

TEST_P(AdapterErrorTest, ArgumentsThatDoNotEncodeAreCantEncodeArgs) {
  char long_name[300];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  char* argument = long_name;
  timeval timeout{5, 0};
  EXPECT_EQ(clnt_call(client(), TESTPROC_NULL, AsXdrProc(&xdr_name),
                      reinterpret_cast<caddr_t>(&argument),
                      AsXdrProc(&xdr_void), nullptr, timeout),
            RPC_CANTENCODEARGS);
}

TEST_P(AdapterErrorTest, ASlowReplyIsTimedOut) {
  timeval short_wait{0, 200000};
  ASSERT_TRUE(clnt_control(client(), CLSET_TIMEOUT,
                           reinterpret_cast<char*>(&short_wait)));
  u_int sleep_ms = 1000, slept = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(testproc_sleep_1(&sleep_ms, &slept, client()), RPC_TIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "deadline"))
      << rdma_oncrpc_error();
}

TEST_P(AdapterErrorTest, ConnectionLossIsCantRecv) {
  // Nothing dispatches: the call waits at the server until it goes away.
  StopServer();
  StartServer(TestConfig(), /*threads=*/0);
  CLIENT* c = client();
  std::thread destroy([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    StopServer();
  });
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, c), RPC_CANTRECV);
  destroy.join();
}

TEST_P(AdapterErrorTest, AZeroTimeoutSendsWithoutWaiting) {
  // libtirpc's message passing: RPC_TIMEDOUT at once, the call still runs.
  const int before = noreply_calls.load();
  timeval none{0, 0};
  ASSERT_TRUE(
      clnt_control(client(), CLSET_TIMEOUT, reinterpret_cast<char*>(&none)));
  EXPECT_EQ(testproc_noreply_1(nullptr, nullptr, client()), RPC_TIMEDOUT);
  for (int i = 0; i < 500 && noreply_calls.load() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(noreply_calls.load(), before + 1);
}

// RFC 5531 §9: a call the dispatcher does not answer is answered
// SYSTEM_ERR by the transport (rpcrdma/responder.h), which returns its
// credit (RFC 8166 §3.3.1): the client learns before its timeout, and
// calls after it still go.
TEST_P(AdapterErrorTest,
       RFC5531Section9_ACallTheDispatcherDoesNotAnswerIsSystemErr) {
  timeval long_wait{60, 0};
  ASSERT_TRUE(clnt_control(client(), CLSET_TIMEOUT,
                           reinterpret_cast<char*>(&long_wait)));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(testproc_noreply_1(nullptr, nullptr, client()), RPC_SYSTEMERROR);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS);
}

TEST_P(AdapterErrorTest, Rfc8166_9_2_RpcsecGssCallsUseNoDdp) {
  // Under RPCSEC_GSS the arguments and results are wrapped: no opaque is an
  // item (Linux switches DDP off under integrity and privacy). A stand-in
  // AUTH that says GSS (it still marshals AUTH_NONE, which the server
  // accepts) shows how such a call is sent.
  AUTH* none = client()->cl_auth;
  AUTH gss = *none;
  gss.ah_cred.oa_flavor = RPCSEC_GSS;
  client()->cl_auth = &gss;
  std::vector<uint8_t> bulk(100000, 7);
  blob in{static_cast<u_int>(bulk.size()),
          reinterpret_cast<char*>(bulk.data())};
  blob out{};
  EXPECT_EQ(testproc_echo_1(&in, &out, client()), RPC_SUCCESS)
      << rdma_oncrpc_error();
  client()->cl_auth = none;
  EXPECT_EQ(out.blob_len, bulk.size());
  xdr_free(AsXdrProc(&xdr_blob), &out);
  const Counters server = server_counters();
  EXPECT_EQ(server.read_chunk_calls, 0u);
  EXPECT_EQ(server.long_calls, 1u);  // the whole call by RDMA Read
  EXPECT_EQ(server.write_chunks, 0u);
  EXPECT_EQ(server.long_replies, 1u);  // the result by the reply chunk
}

// A server that answers every call with `words` (after the call's xid) as
// the reply's RPC header.
absl::StatusOr<std::unique_ptr<Server>> ServerAnsweringWith(
    std::vector<uint32_t> words) {
  return Server::Create(ListenUri("soft+unix"), {},
                        [words](IncomingCall call, Responder responder) {
                          std::vector<uint8_t> reply;
                          AppendWord(reply, call.xid);
                          for (uint32_t word : words) {
                            AppendWord(reply, word);
                          }
                          (void)responder.Send(HandlerReply(std::move(reply)));
                        });
}

// RFC 5531 §9: a server that speaks another RPC version answers
// MSG_DENIED / RPC_MISMATCH with its range. (A rejected reply shares its
// memory with the accepted arm's verifier: the client must free the
// verifier only of an accepted reply.)
TEST(AdapterReplies, Rfc5531_9_RpcMismatchIsVersMismatchWithTheRange) {
  auto server = ServerAnsweringWith(
      {1u /* REPLY */, 1u /* MSG_DENIED */, 0u /* RPC_MISMATCH */, 2u, 2u});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<CLIENT*> client =
      CreateClient((*server)->uri(), TESTPROG, TESTVERS);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, *client), RPC_VERSMISMATCH);
  rpc_err error{};
  clnt_geterr(*client, &error);
  EXPECT_EQ(error.re_vers.low, 2u);
  EXPECT_EQ(error.re_vers.high, 2u);
  clnt_destroy(*client);
}

// RFC 5531 §9: reply_stat is 0 or 1. Another value is a reply that does
// not decode, whatever the words after it (found by the reply fuzzer:
// reading such a value back as the enum was undefined behaviour).
TEST(AdapterReplies, Rfc5531_9_UnknownReplyStatIsCantDecodeRes) {
  auto server = ServerAnsweringWith(
      {1u /* REPLY */, 0x0600e5dfu /* no reply_stat */, 0u, 0u, 0u});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<CLIENT*> client =
      CreateClient((*server)->uri(), TESTPROG, TESTVERS);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, *client), RPC_CANTDECODERES);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "does not decode"))
      << rdma_oncrpc_error();
  clnt_destroy(*client);
}

TEST(AdapterCreate, BadUrisAndUnreachableServersSetRpcCreateErr) {
  EXPECT_EQ(clnt_rdma_create("tcp://nowhere", TESTPROG, TESTVERS, nullptr),
            nullptr);
  EXPECT_EQ(rpc_createerr.cf_stat, RPC_UNKNOWNHOST);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "unknown scheme"))
      << rdma_oncrpc_error();
  EXPECT_EQ(clnt_rdma_create("soft+unix://@rpcrdma-oncrpc-nobody-listens",
                             TESTPROG, TESTVERS, nullptr),
            nullptr);
  EXPECT_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
  EXPECT_EQ(svc_rdma_create("soft+tcp://999.0.0.1:1", nullptr), nullptr);
  EXPECT_NE(std::string(rdma_oncrpc_error()), "");
}

// Without an RDMA device nothing refused the connection: rpc_createerr
// says ENODEV, not ECONNREFUSED, and the adapter's error says what to do.
TEST(AdapterCreate, RdmaWithoutADeviceIsEnodev) {
  if (access("/dev/infiniband/rdma_cm", F_OK) == 0) {
    GTEST_SKIP() << "this host has RDMA devices";
  }
  EXPECT_EQ(
      clnt_rdma_create("rdma://127.0.0.1:20049", TESTPROG, TESTVERS, nullptr),
      nullptr);
  EXPECT_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
  EXPECT_EQ(rpc_createerr.cf_error.re_errno, ENODEV);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "no RDMA device"))
      << rdma_oncrpc_error();
}

// A version-two-only client and a version-one server (RFC 8166 §4.5.1: the
// server answers RDMA_ERROR ERR_VERS with its range, 1 to 1): no
// connection, and the same errno as a call that meets ERR_VERS
// (EPROTONOSUPPORT), not the ECONNREFUSED of a server that is not there.
TEST(AdapterCreate, Rfc8166_4_5_1_ErrVersAtConnectIsProtoNotSupported) {
  const std::string uri = ListenUri("soft+unix");
  auto server = Server::Create(uri, {}, [](IncomingCall, Responder) {});
  ASSERT_TRUE(server.ok()) << server.status();
  rdma_oncrpc_config* config = rdma_oncrpc_config_create();
  ASSERT_TRUE(rdma_oncrpc_config_parse_transport(config, "version_policy: V2"))
      << rdma_oncrpc_error();
  EXPECT_EQ(clnt_rdma_create(uri.c_str(), TESTPROG, TESTVERS, config), nullptr);
  rdma_oncrpc_config_destroy(config);
  EXPECT_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
  EXPECT_EQ(rpc_createerr.cf_error.re_errno, EPROTONOSUPPORT);
  EXPECT_TRUE(absl::StrContains(rdma_oncrpc_error(), "versions 1 to 1"))
      << rdma_oncrpc_error();
}

INSTANTIATE_TEST_SUITE_P(Fabrics, AdapterErrorTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         SchemeName);

}  // namespace
}  // namespace rpcrdma::test
