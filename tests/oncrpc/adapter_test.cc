// rpcgen's stubs and dispatcher, unchanged, over the adapter: bulk
// arguments as read chunks, bound results in write chunks, long replies in
// reply chunks (RFC 8166 §3.4, §3.5), with the counters of both sides
// confirming each path.
#include <rpc/rpc.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "tests/oncrpc/adapter_fixture.h"

namespace rpcrdma::test {

using oncrpc::AdapterConfig;
using oncrpc::ChannelOf;

namespace {

std::vector<uint8_t> Pattern(size_t n, uint64_t offset = 0) {
  std::vector<uint8_t> b(n);
  FillPattern(offset, b.data(), n);
  return b;
}

blob BlobOf(std::vector<uint8_t>& b) {
  return blob{static_cast<u_int>(b.size()), reinterpret_cast<char*>(b.data())};
}

std::vector<uint8_t> Octets(const blob& b) {
  return {b.blob_val, b.blob_val + b.blob_len};
}

using AdapterCallTest = AdapterTest;

TEST_P(AdapterCallTest, NullCall) {
  EXPECT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS);
  EXPECT_EQ(server_counters().calls, 1u);
}

TEST_P(AdapterCallTest, Rfc8166_3_4_EchoOfEverySizeAroundTheThresholds) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1023}, size_t{1024},
                   size_t{1025}, size_t{4095}, size_t{4096}, size_t{4097},
                   size_t{65536}, size_t{1} << 20, (size_t{16} << 20) - 64}) {
    std::vector<uint8_t> argument = Pattern(n, n);
    blob in = BlobOf(argument);
    blob out{};
    ASSERT_EQ(testproc_echo_1(&in, &out, client()), RPC_SUCCESS)
        << n << ": " << rdma_oncrpc_error();
    EXPECT_EQ(Octets(out), argument) << n;
    xdr_free(AsXdrProc(&xdr_blob), &out);
  }
  const Counters server = server_counters();
  // From 1024 octets on the argument is an item; the calls that did not
  // fit inline carried it as a read chunk, and every result from the
  // threshold on came back in the write chunk ECHO is bound to.
  EXPECT_GT(server.read_chunk_calls, 0u);
  EXPECT_EQ(server.write_chunks, 12u);  // one offered per call
  const Counters client_side = ChannelOf(client())->counters();
  EXPECT_EQ(client_side.calls, 12u);
  EXPECT_EQ(client_side.read_chunk_calls, server.read_chunk_calls);
}

TEST_P(AdapterCallTest, Rfc8166_3_4_5_SeveralItemsInOneCall) {
  std::vector<uint8_t> first = Pattern(300000, 1), second = Pattern(5000, 2);
  char label[] = "several";
  pair in{label, BlobOf(first), 17, BlobOf(second)};
  pair out{};
  ASSERT_EQ(testproc_swap_1(&in, &out, client()), RPC_SUCCESS)
      << rdma_oncrpc_error();
  EXPECT_STREQ(out.label, "lareves");
  EXPECT_EQ(out.tag, -17);
  EXPECT_EQ(Octets(out.first), second);
  EXPECT_EQ(Octets(out.second), first);
  xdr_free(AsXdrProc(&xdr_pair), &out);
  const Counters server = server_counters();
  EXPECT_EQ(server.read_chunk_calls, 1u);
  EXPECT_EQ(server.read_chunks, 2u);  // two positions
  // SWAP has no write chunk: its 305 KB reply came through the reply chunk.
  EXPECT_EQ(server.long_replies, 1u);
}

TEST_P(AdapterCallTest, Rfc8166_3_4_7_BoundResultComesInTheWriteChunk) {
  for (u_int count : {0u, 5u, 1024u, 70000u, 1u << 20}) {
    read_args args{4096 * 3 + 1, count};
    read_res res{};
    ASSERT_EQ(testproc_read_1(&args, &res, client()), RPC_SUCCESS)
        << count << ": " << rdma_oncrpc_error();
    ASSERT_EQ(res.status, 0);
    EXPECT_EQ(res.read_res_u.ok.count, count);
    EXPECT_EQ(Octets(res.read_res_u.ok.data), Pattern(count, args.offset))
        << count;
    xdr_free(AsXdrProc(&xdr_read_res), &res);
  }
  // The failure arm has no data: the write chunk comes back unused.
  read_args failing{0, 0xffffffffu};
  read_res res{};
  ASSERT_EQ(testproc_read_1(&failing, &res, client()), RPC_SUCCESS);
  EXPECT_EQ(res.status, 2);
  xdr_free(AsXdrProc(&xdr_read_res), &res);
  EXPECT_EQ(server_counters().write_chunks, 6u);
}

// A policy that says READ's reply fits inline (no reply chunk beside the
// bound write chunk): the call offers the write chunk alone, although the
// reply's transport header echoes that write list and so leaves less room
// inline than max_inline_reply (RFC 8166 §3.5.4). The Linux client offers
// READ a write chunk only; svcrdma uses any reply chunk it is offered.
TEST_P(AdapterCallTest, Rfc8166_3_5_4_AWriteChunkAloneWhenTheReplyFitsInline) {
  AdapterConfig config = TestConfig();
  config.policies[{TESTPROG, TESTVERS}].default_reply_octets = 0;
  CLIENT* c = Connect(config);
  ASSERT_NE(c, nullptr);
  read_args args{7, 70000};
  read_res res{};
  ASSERT_EQ(testproc_read_1(&args, &res, c), RPC_SUCCESS)
      << rdma_oncrpc_error();
  ASSERT_EQ(res.status, 0);
  EXPECT_EQ(Octets(res.read_res_u.ok.data), Pattern(70000, 7));
  xdr_free(AsXdrProc(&xdr_read_res), &res);
  const Counters counters = ChannelOf(c)->counters();
  EXPECT_EQ(counters.write_chunks, 1u);
  EXPECT_EQ(counters.reply_chunks, 0u);
  EXPECT_EQ(counters.long_replies, 0u);
  clnt_destroy(c);
}

TEST_P(AdapterCallTest, Rfc8166_3_4_5_WriteDataGoesAsAReadChunk) {
  std::vector<uint8_t> data = Pattern(1 << 20, 99);
  write_args args{99, BlobOf(data)};
  u_quad_t hash = 0;
  ASSERT_EQ(testproc_write_1(&args, &hash, client()), RPC_SUCCESS)
      << rdma_oncrpc_error();
  EXPECT_EQ(hash, Fnv1a(99, data.data(), data.size()));
  EXPECT_EQ(server_counters().read_chunk_calls, 1u);
  EXPECT_EQ(server_counters().long_calls, 0u);
}

TEST_P(AdapterCallTest, Rfc8166_3_5_4_LongReplyComesInTheReplyChunk) {
  u_int count = 20000;
  listing out{};
  ASSERT_EQ(testproc_list_1(&count, &out, client()), RPC_SUCCESS)
      << rdma_oncrpc_error();
  ASSERT_EQ(out.names.names_len, count);
  EXPECT_STREQ(out.names.names_val[0], "name-0");
  EXPECT_STREQ(out.names.names_val[19999], "name-19999");
  xdr_free(AsXdrProc(&xdr_listing), &out);
  EXPECT_EQ(server_counters().reply_chunks, 1u);
  EXPECT_EQ(server_counters().long_replies, 1u);
}

// RFC 8267 §4.1, as Linux's nfsd does: a procedure bound to a write chunk
// places its result there whatever its length, and an unbound one only
// from the threshold on. Seen with a raw Channel, which reports what the
// server wrote into each chunk.
TEST_P(AdapterCallTest, Rfc8267_4_1_BoundResultFillsItsChunkWhateverItsLength) {
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create(svc_rdma_uri(xprt_), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  for (rpcproc_t procedure : {TESTPROC_READ, TESTPROC_ECHO}) {
    SCOPED_TRACE(procedure);
    std::vector<uint8_t> call(512);
    XDR x;
    xdrmem_create(&x, reinterpret_cast<char*>(call.data()),
                  static_cast<u_int>(call.size()), XDR_ENCODE);
    rpc_msg header{};
    header.rm_xid = 77;
    header.rm_direction = CALL;
    header.rm_call.cb_rpcvers = RPC_MSG_VERSION;
    header.rm_call.cb_prog = TESTPROG;
    header.rm_call.cb_vers = TESTVERS;
    opaque_auth none = _null_auth;
    read_args args{0, 5};
    std::vector<uint8_t> five = Pattern(5);
    blob echoed = BlobOf(five);
    ASSERT_TRUE(xdr_callhdr(&x, &header) && xdr_u_int(&x, &procedure) &&
                xdr_opaque_auth(&x, &none) && xdr_opaque_auth(&x, &none));
    ASSERT_TRUE(procedure == TESTPROC_READ ? xdr_read_args(&x, &args)
                                           : xdr_blob(&x, &echoed));
    call.resize(xdr_getpos(&x));
    std::vector<uint8_t> chunk(64);
    CallRequest request;
    request.xdr = call;
    request.results.push_back(absl::MakeSpan(chunk));
    request.max_reply_size = 512;
    absl::StatusOr<Reply> reply = (*channel)->BlockingCall(std::move(request));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->result_lengths.size(), 1u);
    // READ is bound (TestPolicy); ECHO is bound too, so both land in the
    // chunk: 5 octets, not at the 1024-octet threshold.
    EXPECT_EQ(reply->result_lengths[0], 5u);
    EXPECT_EQ(std::vector<uint8_t>(chunk.begin(), chunk.begin() + 5), five);
  }
}

// A hand-written routine that knows its Upper Layer Binding: it offers a
// write chunk for each of SWAP's two results, the first in memory of the
// caller's (xdr_rdma.h).
struct SwapWithChunks {
  pair* value;
  std::vector<uint8_t>* first_result;
};

bool_t XdrSwapOfferingChunks(XDR* xdrs, SwapWithChunks* call) {
  xdr_rdma_write_chunk in_place{static_cast<u_int>(call->first_result->size()),
                                call->first_result->data()};
  xdr_rdma_write_chunk pooled{1 << 20, nullptr};
  if (!xdr_rdma_control(xdrs, XDR_RDMA_WRITE_CHUNK, &in_place) ||
      !xdr_rdma_control(xdrs, XDR_RDMA_WRITE_CHUNK, &pooled)) {
    return FALSE;
  }
  return xdr_pair(xdrs, call->value);
}

TEST_P(AdapterCallTest, Rfc8166_3_4_7_RoutineOfferedWriteChunksLandInPlace) {
  std::vector<uint8_t> first = Pattern(200000, 5), second = Pattern(3000, 6);
  char label[] = "ab";
  pair in{label, BlobOf(first), 1, BlobOf(second)};
  // The first result (the argument's second) lands straight in `landing`:
  // the result's destination is preset there.
  std::vector<uint8_t> landing(second.size());
  SwapWithChunks call{&in, &landing};
  pair out{};
  out.first.blob_val = reinterpret_cast<char*>(landing.data());
  out.first.blob_len = static_cast<u_int>(landing.size());
  timeval timeout{25, 0};
  ASSERT_EQ(
      clnt_call(client(), TESTPROC_SWAP, AsXdrProc(&XdrSwapOfferingChunks),
                reinterpret_cast<caddr_t>(&call), AsXdrProc(&xdr_pair),
                reinterpret_cast<caddr_t>(&out), timeout),
      RPC_SUCCESS)
      << rdma_oncrpc_error();
  EXPECT_EQ(out.first.blob_val, reinterpret_cast<char*>(landing.data()));
  EXPECT_EQ(landing, second);
  EXPECT_EQ(Octets(out.second), first);
  EXPECT_EQ(server_counters().write_chunks, 2u);
  EXPECT_EQ(server_counters().long_replies, 0u);
  out.first = {0, nullptr};  // not ours to free
  xdr_free(AsXdrProc(&xdr_pair), &out);
}

TEST_P(AdapterCallTest, ManyThreadsShareOneClient) {
  CLIENT* shared = client();
  constexpr int kThreads = 8, kCalls = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        std::vector<uint8_t> argument =
            Pattern(static_cast<size_t>((t * 7919 + i * 104729) % 300000),
                    static_cast<uint64_t>(t * 1000 + i));
        blob in = BlobOf(argument);
        blob out{};
        if (testproc_echo_1(&in, &out, shared) != RPC_SUCCESS ||
            Octets(out) != argument) {
          ++failures;
        }
        rpc_err error;
        clnt_geterr(shared, &error);
        if (error.re_status != RPC_SUCCESS) ++failures;
        xdr_free(AsXdrProc(&xdr_blob), &out);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(server_counters().calls, uint64_t{kThreads} * kCalls);
  // The calls overlapped: more than one was in flight at a time.
  EXPECT_GT(ChannelOf(shared)->counters().peak_calls_outstanding, 1u);
}

TEST_P(AdapterCallTest, XidsCountUpFromTheOneSet) {
  uint32_t xid = 0x12345678;
  ASSERT_TRUE(clnt_control(client(), CLSET_XID, reinterpret_cast<char*>(&xid)));
  ASSERT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS);
  uint32_t used = 0;
  ASSERT_TRUE(
      clnt_control(client(), CLGET_XID, reinterpret_cast<char*>(&used)));
  EXPECT_EQ(used, 0x12345678u);
  ASSERT_EQ(testproc_null_1(nullptr, nullptr, client()), RPC_SUCCESS);
  ASSERT_TRUE(
      clnt_control(client(), CLGET_XID, reinterpret_cast<char*>(&used)));
  EXPECT_EQ(used, 0x12345679u);
}

TEST_P(AdapterCallTest, ControlRequestsAsWithClntVc) {
  CLIENT* c = client();
  rpcprog_t program = 0;
  rpcvers_t version = 0;
  ASSERT_TRUE(clnt_control(c, CLGET_PROG, reinterpret_cast<char*>(&program)));
  ASSERT_TRUE(clnt_control(c, CLGET_VERS, reinterpret_cast<char*>(&version)));
  EXPECT_EQ(program, TESTPROG);
  EXPECT_EQ(version, TESTVERS);
  timeval t{3, 500000};
  ASSERT_TRUE(clnt_control(c, CLSET_TIMEOUT, reinterpret_cast<char*>(&t)));
  timeval back{};
  ASSERT_TRUE(clnt_control(c, CLGET_TIMEOUT, reinterpret_cast<char*>(&back)));
  EXPECT_EQ(back.tv_sec, 3);
  EXPECT_EQ(back.tv_usec, 500000);
  timeval bad{1, 2000000};
  EXPECT_FALSE(clnt_control(c, CLSET_TIMEOUT, reinterpret_cast<char*>(&bad)));
  int fd = 0;
  EXPECT_FALSE(clnt_control(c, CLGET_FD, reinterpret_cast<char*>(&fd)));
  EXPECT_TRUE(clnt_control(c, CLSET_FD_CLOSE, nullptr));
  sockaddr_storage server{};
  ASSERT_TRUE(
      clnt_control(c, CLGET_SERVER_ADDR, reinterpret_cast<char*>(&server)));
  netbuf address{};
  ASSERT_TRUE(
      clnt_control(c, CLGET_SVC_ADDR, reinterpret_cast<char*>(&address)));
  if (GetParam() == "soft+tcp") {
    EXPECT_EQ(server.ss_family, AF_INET);
    EXPECT_EQ(address.len, sizeof(sockaddr_in));
    EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in*>(&server)->sin_port),
              xprt_->xp_port);
  } else {
    EXPECT_EQ(server.ss_family, AF_UNIX);
  }
  int retry = 1;
  ASSERT_TRUE(
      clnt_control(c, CLSET_RDMA_RETRY, reinterpret_cast<char*>(&retry)));
  retry = 0;
  ASSERT_TRUE(
      clnt_control(c, CLGET_RDMA_RETRY, reinterpret_cast<char*>(&retry)));
  EXPECT_EQ(retry, 1);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, AdapterCallTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         SchemeName);

}  // namespace
}  // namespace rpcrdma::test
