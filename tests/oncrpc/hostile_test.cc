// The ONC RPC adapter against calls a careless or hostile client can send:
// XIDs another client already used, and authenticators over RFC 5531's
// bound. Calls are written by hand and sent on raw Channels, so that each
// octet and each connection is the test's choice.
#include <netinet/in.h>
#include <rpc/rpc.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "oncrpc/rpc_msg.h"
#include "rpcrdma/channel.h"
#include "tests/oncrpc/adapter_fixture.h"

namespace rpcrdma::oncrpc::testing {
namespace {

// A program with one procedure that is not idempotent.
constexpr rpcprog_t kCountProgram = 0x2000816a;
constexpr rpcvers_t kCountVersion = 1;
constexpr rpcproc_t kCount = 1;  // opaque<> -> u_int (calls executed)

std::atomic<u_int> executed{0};

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
  if (request->rq_proc != kCount) {
    svcerr_noproc(xprt);
    return;
  }
  std::string argument(4096, '\0');
  if (!svc_getargs(xprt, AsXdrProc(&XdrBytes),
                   reinterpret_cast<caddr_t>(&argument))) {
    svcerr_decode(xprt);
    return;
  }
  u_int count = ++executed;
  svc_sendreply(xprt, AsXdrProc(&xdr_u_int), reinterpret_cast<caddr_t>(&count));
}

void PutWord(std::vector<uint8_t>& out, uint32_t word) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<uint8_t>(word >> shift));
  }
}

void PutOpaque(std::vector<uint8_t>& out, uint32_t length, uint8_t fill) {
  PutWord(out, length);
  out.insert(out.end(), length, fill);
  out.insert(out.end(), (4 - length % 4) % 4, 0);
}

// A call of `procedure` written word by word, so that authenticators of
// any length can be sent: RFC 5531 §9 call_body, then `arguments`.
std::vector<uint8_t> CallOf(uint32_t xid, rpcproc_t procedure,
                            uint32_t credential_length,
                            uint32_t verifier_length,
                            const std::vector<uint8_t>& arguments) {
  std::vector<uint8_t> call;
  PutWord(call, xid);
  PutWord(call, CALL);
  PutWord(call, RPC_MSG_VERSION);
  PutWord(call, kCountProgram);
  PutWord(call, kCountVersion);
  PutWord(call, procedure);
  PutWord(call, AUTH_NONE);
  PutOpaque(call, credential_length, 'c');
  PutWord(call, AUTH_NONE);
  PutOpaque(call, verifier_length, 'v');
  call.insert(call.end(), arguments.begin(), arguments.end());
  return call;
}

// kCount's argument: an opaque of `length` octets, all `fill`.
std::vector<uint8_t> ArgumentOf(uint32_t length, uint8_t fill) {
  std::vector<uint8_t> argument;
  PutOpaque(argument, length, fill);
  return argument;
}

class AdapterHostileTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<SVCXPRT*> xprt =
        CreateServerTransport(ListenUri(GetParam()), TestConfig());
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

  std::unique_ptr<Channel> Connect() {
    absl::StatusOr<std::unique_ptr<Channel>> channel =
        Channel::Create(svc_rdma_uri(xprt_), {});
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *std::move(channel) : nullptr;
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
      const uint8_t* at = reply->xdr.data() + decoded->body_offset;
      *result = (uint32_t{at[0]} << 24) | (uint32_t{at[1]} << 16) |
                (uint32_t{at[2]} << 8) | uint32_t{at[3]};
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

  SVCXPRT* xprt_ = nullptr;
};

// Over soft+unix every client has the same (empty) name and over soft+tcp
// every local client is 127.0.0.1: the duplicate request cache must not
// take one client's call for another's retransmission because both chose
// the same XID and wrote the same leading argument octets (RFC 5531 §9:
// only the client's own XIDs identify its retransmissions). Otherwise the
// second client gets the first one's reply and its call never executes.
TEST_P(AdapterHostileTest, ReplyCacheKeepsClientsThatShareAnXidApart) {
  std::unique_ptr<Channel> first = Connect();
  std::unique_ptr<Channel> second = Connect();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  // Same length, same first 256 octets; only the tail differs, which the
  // cache does not look at (as nfsd's RC_CSUMLEN).
  std::vector<uint8_t> one = ArgumentOf(1000, 'a'), two = one;
  two[900] = 'b';
  const u_int before = executed.load();
  EXPECT_EQ(Count(*first, 0x5000, one), before + 1);
  EXPECT_EQ(Count(*second, 0x5000, two), before + 2);
  EXPECT_EQ(executed.load(), before + 2);
  EXPECT_EQ(svc_rdma_cache_hits(xprt_), 0u);
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
  absl::StatusOr<ReplyHeader> header =
      Send(*channel, CallOf(0x7000, kCount, 401, 0, ArgumentOf(4, 'a')));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->xid, 0x7000u);
  EXPECT_EQ(header->reply_stat, ReplyStat::kDenied);
  EXPECT_EQ(header->reject_stat, RejectStat::kAuthError);
  EXPECT_EQ(header->auth_stat, static_cast<uint32_t>(AUTH_BADCRED));
  EXPECT_EQ(executed.load(), before);
  // The connection goes on serving.
  EXPECT_EQ(Count(*channel, 0x7001, ArgumentOf(4, 'a')), before + 1);
}

TEST_P(AdapterHostileTest, Rfc5531_9_OversizedVerifierIsAuthBadverf) {
  std::unique_ptr<Channel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  const u_int before = executed.load();
  absl::StatusOr<ReplyHeader> header =
      Send(*channel, CallOf(0x7100, kCount, 0, 401, ArgumentOf(4, 'a')));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->xid, 0x7100u);
  EXPECT_EQ(header->reply_stat, ReplyStat::kDenied);
  EXPECT_EQ(header->reject_stat, RejectStat::kAuthError);
  EXPECT_EQ(header->auth_stat, static_cast<uint32_t>(AUTH_BADVERF));
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
}  // namespace rpcrdma::oncrpc::testing
