// The ONC RPC adapter against calls a careless or hostile client can send:
// XIDs another client already used, and authenticators over RFC 5531's
// bound. Calls are written by hand and sent on raw Channels, so that each
// octet and each connection is the test's choice.
#include <netinet/in.h>
#include <rpc/rpc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"
#include "tests/oncrpc/adapter_fixture.h"

namespace rpcrdma::test {

using oncrpc::AdapterConfig;
using oncrpc::ServerOf;

namespace {

// A program with one procedure that is not idempotent.
constexpr rpcprog_t kCountProgram = 0x2000816a;
constexpr rpcvers_t kCountVersion = 1;
constexpr rpcproc_t kCount = 1;  // opaque<> -> u_int (calls executed)
// kCount, after half a second: a call still running when its connection
// is lost.
constexpr rpcproc_t kSlowCount = 2;

std::atomic<u_int> executed{0};
std::atomic<u_int> slow_started{0};

bool_t XdrBytes(XDR* xdrs, std::string* bytes) {
  char* data = bytes->data();
  u_int length = static_cast<u_int>(bytes->size());
  // Decoding only: the procedure reads its argument into a buffer of the
  // largest size the test sends.
  if (!xdr_bytes(xdrs, &data, &length, static_cast<u_int>(bytes->size()))) {
    return FALSE;
  }
  bytes->resize(length);
  return TRUE;
}

void CountDispatch(svc_req* request, SVCXPRT* xprt) {
  if (request->rq_proc != kCount && request->rq_proc != kSlowCount) {
    svcerr_noproc(xprt);
    return;
  }
  std::string argument(4096, '\0');
  if (!svc_getargs(xprt, AsXdrProc(&XdrBytes),
                   reinterpret_cast<caddr_t>(&argument))) {
    svcerr_decode(xprt);
    return;
  }
  if (request->rq_proc == kSlowCount) {
    ++slow_started;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  u_int count = ++executed;
  svc_sendreply(xprt, AsXdrProc(&xdr_u_int), reinterpret_cast<caddr_t>(&count));
}

// Variable-length opaque data (RFC 4506 §4.10) of `length` octets, all
// `fill`, appended by `out` (which cannot fail appending to a vector).
void WriteFilledOpaque(XdrWriter& out, absl::string_view field, uint32_t length,
                       uint8_t fill) {
  (void)out.WriteVarOpaque(field, std::vector<uint8_t>(length, fill));
}

// A call of `procedure` written item by item, so that authenticators of
// any length can be sent (EncodeCallHeader keeps to RFC 5531's bound):
// RFC 5531 §9 call_body, then `arguments`.
std::vector<uint8_t> CallOf(uint32_t xid, rpcproc_t procedure,
                            uint32_t credential_length,
                            uint32_t verifier_length,
                            const std::vector<uint8_t>& arguments) {
  std::vector<uint8_t> call;
  XdrWriter out(&call);
  (void)out.WriteUint32("xid", xid);
  (void)out.WriteUint32("mtype", CALL);
  (void)out.WriteUint32("rpcvers", RPC_MSG_VERSION);
  (void)out.WriteUint32("prog", kCountProgram);
  (void)out.WriteUint32("vers", kCountVersion);
  (void)out.WriteUint32("proc", procedure);
  (void)out.WriteUint32("cred.flavor", AUTH_NONE);
  WriteFilledOpaque(out, "cred.body", credential_length, 'c');
  (void)out.WriteUint32("verf.flavor", AUTH_NONE);
  WriteFilledOpaque(out, "verf.body", verifier_length, 'v');
  call.insert(call.end(), arguments.begin(), arguments.end());
  return call;
}

// kCount's argument: an opaque of `length` octets, all `fill`.
std::vector<uint8_t> ArgumentOf(uint32_t length, uint8_t fill) {
  std::vector<uint8_t> argument;
  XdrWriter out(&argument);
  WriteFilledOpaque(out, "argument", length, fill);
  return argument;
}

class AdapterHostileTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    AdapterConfig config = TestConfig();
    config.on_connection = [this](const ServerConnectionEvent& event) {
      std::lock_guard<std::mutex> lock(events_mu_);
      if (event.type == ServerConnectionEvent::Type::kAccepted) {
        accepted_.push_back(event.connection);
      } else {
        closed_.push_back(event.connection);
      }
      events_changed_.notify_all();
    };
    absl::StatusOr<SVCXPRT*> xprt =
        CreateServerTransport(ListenUri(GetParam()), config);
    ASSERT_TRUE(xprt.ok()) << xprt.status();
    xprt_ = *xprt;
    ASSERT_TRUE(svc_rdma_enablecache(xprt_, 64, 0));
    ASSERT_TRUE(
        svc_reg(xprt_, kCountProgram, kCountVersion, CountDispatch, nullptr));
    ASSERT_TRUE(svc_rdma_run_threads(xprt_, 2));
  }
  void TearDown() override {
    if (xprt_ == nullptr) return;
    svc_unreg(kCountProgram, kCountVersion);
    svc_destroy(xprt_);
  }

  // A client on a connection of its own; `*connection` its id on the
  // server's side.
  std::unique_ptr<Channel> Connect(ConnectionId* connection = nullptr) {
    size_t known = 0;
    {
      std::lock_guard<std::mutex> lock(events_mu_);
      known = accepted_.size();
    }
    absl::StatusOr<std::unique_ptr<Channel>> channel =
        Channel::Create(svc_rdma_uri(xprt_), {});
    EXPECT_TRUE(channel.ok()) << channel.status();
    if (!channel.ok()) return nullptr;
    // The connection is accepted by the time a call gets through. Each
    // ping has an XID of its own, which the cache never matches.
    static std::atomic<uint32_t> ping_xid{0x10000};
    EXPECT_TRUE(Send(**channel, CallOf(ping_xid++, NULLPROC, 0, 0, {})).ok());
    std::lock_guard<std::mutex> lock(events_mu_);
    EXPECT_GT(accepted_.size(), known);
    if (connection != nullptr && accepted_.size() > known) {
      *connection = accepted_.back();
    }
    return *std::move(channel);
  }

  // Once the adapter has seen `connection` closed (the configuration's
  // on_connection hears of it after the adapter).
  bool WaitClosed(ConnectionId connection) {
    std::unique_lock<std::mutex> lock(events_mu_);
    return events_changed_.wait_for(lock, std::chrono::seconds(30), [&] {
      return std::find(closed_.begin(), closed_.end(), connection) !=
             closed_.end();
    });
  }

  // The reply header to `call`, and for a successful one its u_int result
  // in `*result`.
  static absl::StatusOr<ReplyHeader> Send(Channel& channel,
                                          std::vector<uint8_t> call,
                                          uint32_t* result = nullptr) {
    CallRequest request;
    request.xdr = std::move(call);
    request.max_reply_size = 1024;
    absl::StatusOr<Reply> reply = channel.BlockingCall(std::move(request));
    if (!reply.ok()) return reply.status();
    absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
    if (!decoded.ok()) return decoded.status();
    if (result != nullptr &&
        decoded->header.reply_stat == ReplyStat::kAccepted &&
        decoded->header.accept_stat == AcceptStat::kSuccess) {
      if (reply->xdr.size() < decoded->body_offset + 4) {
        return absl::DataLossError("no result");
      }
      *result = LoadBigEndian32(reply->xdr.data() + decoded->body_offset);
    }
    return decoded->header;
  }

  // Sends kCount and returns what it answered (0 on failure).
  static uint32_t Count(Channel& channel, uint32_t xid,
                        const std::vector<uint8_t>& argument) {
    uint32_t count = 0;
    absl::StatusOr<ReplyHeader> header =
        Send(channel, CallOf(xid, kCount, 0, 0, argument), &count);
    EXPECT_TRUE(header.ok()) << header.status();
    if (header.ok()) {
      EXPECT_TRUE(ReplyStatus(*header).ok()) << ReplyStatus(*header);
    }
    return count;
  }

  // Sends kCount with credential and verifier bodies of the given lengths
  // and expects it denied with AUTH_ERROR `expected` (RFC 5531 §9).
  static void ExpectAuthError(Channel& channel, uint32_t xid,
                              uint32_t credential_length,
                              uint32_t verifier_length, auth_stat expected) {
    absl::StatusOr<ReplyHeader> header =
        Send(channel, CallOf(xid, kCount, credential_length, verifier_length,
                             ArgumentOf(4, 'a')));
    ASSERT_TRUE(header.ok()) << header.status();
    EXPECT_EQ(header->xid, xid);
    EXPECT_EQ(header->reply_stat, ReplyStat::kDenied);
    EXPECT_EQ(header->reject_stat, RejectStat::kAuthError);
    EXPECT_EQ(header->auth_stat, static_cast<uint32_t>(expected));
  }

  SVCXPRT* xprt_ = nullptr;
  std::mutex events_mu_;
  std::condition_variable events_changed_;
  std::vector<ConnectionId> accepted_;
  std::vector<ConnectionId> closed_;
};

// Over soft+unix every client has the same (empty) name and over soft+tcp
// every local client is 127.0.0.1: while both are connected, the duplicate
// request cache must not take one client's call for another's
// retransmission because both chose the same XID and sent the same
// arguments (RFC 5531 §9: only the client's own XIDs identify its
// retransmissions). Otherwise the second client gets the first one's
// reply and its call never executes.
TEST_P(AdapterHostileTest, ReplyCacheKeepsClientsThatShareAnXidApart) {
  std::unique_ptr<Channel> first = Connect();
  std::unique_ptr<Channel> second = Connect();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  // Same length, same octets, all of them.
  const std::vector<uint8_t> argument = ArgumentOf(1000, 'a');
  const u_int before = executed.load();
  EXPECT_EQ(Count(*first, 0x5000, argument), before + 1);
  EXPECT_EQ(Count(*second, 0x5000, argument), before + 2);
  EXPECT_EQ(executed.load(), before + 2);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 0u);
  // And each still has its own reply.
  EXPECT_EQ(Count(*first, 0x5000, argument), before + 1);
  EXPECT_EQ(Count(*second, 0x5000, argument), before + 2);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 2u);
}

// A client that lost its connection sends its calls again on a new one
// (from a new port over soft+tcp), with their XIDs (RFC 5531 §9), as the
// kernel's RPC-over-RDMA client does: what had run is answered from the
// cache, not run twice. A call with the same XID and length but other
// arguments is another call.
TEST_P(AdapterHostileTest,
       ReplyCacheAnswersARetransmissionAfterItsConnectionWasLost) {
  ConnectionId lost;
  std::unique_ptr<Channel> first = Connect(&lost);
  ASSERT_NE(first, nullptr);
  const std::vector<uint8_t> argument = ArgumentOf(1000, 'a');
  const u_int before = executed.load();
  EXPECT_EQ(Count(*first, 0x6100, argument), before + 1);
  first.reset();
  ASSERT_TRUE(WaitClosed(lost));
  std::unique_ptr<Channel> again = Connect();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Count(*again, 0x6100, argument), before + 1);
  EXPECT_EQ(executed.load(), before + 1);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 1u);
  std::vector<uint8_t> tail_differs = argument;
  tail_differs[900] = 'b';
  EXPECT_EQ(Count(*again, 0x6100, tail_differs), before + 2);
}

// The server drops a connection while a call of it runs (as nfs3d does on
// SIGUSR2): the client's retransmission on its new connection waits for
// that call and gets its reply.
TEST_P(AdapterHostileTest,
       ReplyCacheRetransmissionWaitsForTheCallOfALostConnection) {
  ConnectionId lost;
  std::unique_ptr<Channel> first = Connect(&lost);
  ASSERT_NE(first, nullptr);
  const std::vector<uint8_t> argument = ArgumentOf(1000, 'a');
  const u_int before = executed.load();
  const u_int started = slow_started.load();
  std::thread unanswered([&] {
    // Its reply is dropped with the connection.
    EXPECT_FALSE(Send(*first, CallOf(0x6200, kSlowCount, 0, 0, argument)).ok());
  });
  for (int i = 0; i < 3000 && slow_started.load() == started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(slow_started.load(), started + 1);
  ASSERT_TRUE(ServerOf(xprt_)->Disconnect(lost, "test").ok());
  ASSERT_TRUE(WaitClosed(lost));
  std::unique_ptr<Channel> again = Connect();
  ASSERT_NE(again, nullptr);
  uint32_t count = 0;
  absl::StatusOr<ReplyHeader> header =
      Send(*again, CallOf(0x6200, kSlowCount, 0, 0, argument), &count);
  unanswered.join();
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(count, before + 1);
  EXPECT_EQ(executed.load(), before + 1);
  EXPECT_EQ(slow_started.load(), started + 1);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 1u);
}

// RFC 5531 §9: a retransmission keeps its XID; on its client's connection
// it is answered with the first reply, the procedure executed once.
TEST_P(AdapterHostileTest, ReplyCacheAnswersARetransmissionOnItsConnection) {
  std::unique_ptr<Channel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  const std::vector<uint8_t> argument = ArgumentOf(1000, 'a');
  const u_int before = executed.load();
  EXPECT_EQ(Count(*channel, 0x6000, argument), before + 1);
  EXPECT_EQ(Count(*channel, 0x6000, argument), before + 1);
  EXPECT_EQ(executed.load(), before + 1);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 1u);
  // Another XID is another call.
  EXPECT_EQ(Count(*channel, 0x6001, argument), before + 2);
}

// RFC 5531 §8.2 bounds an opaque_auth's body at 400 octets; a call whose
// credential is longer is refused with AUTH_ERROR AUTH_BADCRED (§9), not
// taken for garbage arguments: the call header is what is wrong.
TEST_P(AdapterHostileTest, Rfc5531_9_OversizedCredentialIsAuthBadcred) {
  std::unique_ptr<Channel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  const u_int before = executed.load();
  ExpectAuthError(*channel, 0x7000, 401, 0, AUTH_BADCRED);
  EXPECT_EQ(executed.load(), before);
  // The connection goes on serving.
  EXPECT_EQ(Count(*channel, 0x7001, ArgumentOf(4, 'a')), before + 1);
}

TEST_P(AdapterHostileTest, Rfc5531_9_OversizedVerifierIsAuthBadverf) {
  std::unique_ptr<Channel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  const u_int before = executed.load();
  ExpectAuthError(*channel, 0x7100, 0, 401, AUTH_BADVERF);
  EXPECT_EQ(executed.load(), before);
}

// At the bound itself both are accepted (AUTH_NONE's body is not looked
// at), so the check is not off by one.
TEST_P(AdapterHostileTest, Rfc5531_8_2_AuthenticatorsOf400OctetsAreAccepted) {
  std::unique_ptr<Channel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  const u_int before = executed.load();
  uint32_t count = 0;
  absl::StatusOr<ReplyHeader> header = Send(
      *channel, CallOf(0x7200, kCount, 400, 400, ArgumentOf(4, 'a')), &count);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_TRUE(ReplyStatus(*header).ok()) << ReplyStatus(*header);
  EXPECT_EQ(count, before + 1);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, AdapterHostileTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         SchemeName);

}  // namespace
}  // namespace rpcrdma::test
