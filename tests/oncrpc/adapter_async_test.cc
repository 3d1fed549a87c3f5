// clnt_rdma_call_async: many calls in flight from one thread, results
// decoded (write-chunk data put back) before each completion runs, calls
// started from a completion, and the failures that complete at once or
// refuse to start.
#include <rpc/rpc.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/oncrpc/adapter_fixture.h"

namespace rpcrdma::test {

using oncrpc::ChannelOf;

namespace {

// One asynchronous call's arguments, results and outcome.
struct AsyncRead {
  read_args args{};
  read_res res{};
  clnt_stat stat = RPC_FAILED;
  std::string error;
};

// Completions counted under a lock, waited for by the test's thread.
class Completions {
 public:
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    cv_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30),
                        [&] { return done_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
};

struct Batch {
  CLIENT* client = nullptr;
  std::vector<AsyncRead> reads;
  Completions completions;
  // On the loop thread: a completion that starts the rest of the batch.
  bool start_rest_from_first = false;
};

void StartRead(Batch& batch, size_t i);

void OnRead(clnt_stat stat, void* argument) {
  auto* context = static_cast<std::pair<Batch*, size_t>*>(argument);
  Batch& batch = *context->first;
  AsyncRead& read = batch.reads[context->second];
  read.stat = stat;
  if (stat != RPC_SUCCESS) read.error = rdma_oncrpc_error();
  if (context->second == 0 && batch.start_rest_from_first) {
    for (size_t i = 1; i < batch.reads.size(); ++i) StartRead(batch, i);
  }
  delete context;
  batch.completions.Done();
}

void StartRead(Batch& batch, size_t i) {
  timeval timeout{30, 0};
  ASSERT_TRUE(clnt_rdma_call_async(
      batch.client, TESTPROC_READ, AsXdrProc(&xdr_read_args),
      &batch.reads[i].args, AsXdrProc(&xdr_read_res), &batch.reads[i].res,
      timeout, &OnRead, new std::pair<Batch*, size_t>(&batch, i)));
}

std::vector<uint8_t> Octets(const read_res& res) {
  const auto& data = res.read_res_u.ok.data;
  return {data.blob_val, data.blob_val + data.blob_len};
}

std::vector<uint8_t> Pattern(size_t n, uint64_t offset) {
  std::vector<uint8_t> b(n);
  FillPattern(offset, b.data(), n);
  return b;
}

using AdapterAsyncTest = AdapterTest;

// Every READ's data comes back through its bound write chunk (RFC 8166
// §3.4.7) and is decoded into its own results before its completion runs;
// the calls overlap although one thread started them all.
TEST_P(AdapterAsyncTest, Rfc8166_3_4_7_ManyCallsInFlightFromOneThread) {
  Batch batch;
  batch.client = client();
  batch.reads.resize(64);
  for (size_t i = 0; i < batch.reads.size(); ++i) {
    batch.reads[i].args = {i * 4099, static_cast<u_int>(1000 + i * 997)};
  }
  for (size_t i = 0; i < batch.reads.size(); ++i) StartRead(batch, i);
  ASSERT_TRUE(batch.completions.WaitFor(static_cast<int>(batch.reads.size())));
  for (AsyncRead& read : batch.reads) {
    ASSERT_EQ(read.stat, RPC_SUCCESS) << read.error;
    ASSERT_EQ(read.res.status, 0);
    EXPECT_EQ(Octets(read.res), Pattern(read.args.count, read.args.offset));
    xdr_free(AsXdrProc(&xdr_read_res), &read.res);
  }
  const Counters c = ChannelOf(client())->counters();
  EXPECT_EQ(c.calls, batch.reads.size());
  EXPECT_EQ(c.write_chunks, batch.reads.size());
  EXPECT_GT(c.peak_calls_outstanding, 1u);
}

// A completion runs on the loop thread and may start calls there: they are
// all sent before the loop reads another reply, so as many are in flight
// as the credit grant allows (RFC 8166 §3.3.1).
TEST_P(AdapterAsyncTest,
       Rfc8166_3_3_1_CallsStartedFromACompletionFillTheGrant) {
  Batch batch;
  batch.client = client();
  batch.start_rest_from_first = true;
  batch.reads.resize(200);
  for (size_t i = 0; i < batch.reads.size(); ++i) {
    batch.reads[i].args = {i * 512, 512};
  }
  StartRead(batch, 0);
  ASSERT_TRUE(batch.completions.WaitFor(static_cast<int>(batch.reads.size())));
  for (AsyncRead& read : batch.reads) {
    ASSERT_EQ(read.stat, RPC_SUCCESS) << read.error;
    EXPECT_EQ(Octets(read.res), Pattern(512, read.args.offset));
    xdr_free(AsXdrProc(&xdr_read_res), &read.res);
  }
  const Counters c = ChannelOf(client())->counters();
  EXPECT_GT(c.credits_granted, 1u);
  EXPECT_EQ(c.peak_calls_outstanding, c.credits_granted);
}

void RecordStat(clnt_stat stat, void* argument) {
  auto* read = static_cast<AsyncRead*>(argument);
  read->stat = stat;
  read->error = rdma_oncrpc_error();
}

// Arguments that do not encode complete at once, on the calling thread,
// with clnt_call's status; a reply error completes with the reply's.
TEST_P(AdapterAsyncTest, FailuresCompleteWithClntCallsStatus) {
  char long_name[300];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  char* argument = long_name;
  AsyncRead now;
  timeval timeout{5, 0};
  ASSERT_TRUE(clnt_rdma_call_async(
      client(), TESTPROC_NULL, AsXdrProc(&xdr_name), &argument,
      AsXdrProc(&xdr_void), nullptr, timeout, &RecordStat, &now));
  EXPECT_EQ(now.stat, RPC_CANTENCODEARGS);
  EXPECT_NE(now.error.find("do not encode"), std::string::npos) << now.error;

  // Procedure 99 does not exist: PROC_UNAVAIL (RFC 5531 §9).
  Completions completions;
  struct Context {
    AsyncRead read;
    Completions* completions;
  } later{{}, &completions};
  ASSERT_TRUE(clnt_rdma_call_async(
      client(), 99, AsXdrProc(&xdr_void), nullptr, AsXdrProc(&xdr_void),
      nullptr, timeout,
      [](clnt_stat stat, void* p) {
        auto* c = static_cast<Context*>(p);
        c->read.stat = stat;
        c->completions->Done();
      },
      &later));
  ASSERT_TRUE(completions.WaitFor(1));
  EXPECT_EQ(later.read.stat, RPC_PROCUNAVAIL);
}

TEST_P(AdapterAsyncTest, RefusesZeroTimeoutsNullCompletionsAndOtherHandles) {
  AsyncRead read;
  timeval zero{0, 0}, timeout{5, 0};
  EXPECT_FALSE(clnt_rdma_call_async(
      client(), TESTPROC_NULL, AsXdrProc(&xdr_void), nullptr,
      AsXdrProc(&xdr_void), nullptr, zero, &RecordStat, &read));
  EXPECT_FALSE(clnt_rdma_call_async(
      client(), TESTPROC_NULL, AsXdrProc(&xdr_void), nullptr,
      AsXdrProc(&xdr_void), nullptr, timeout, nullptr, nullptr));
  EXPECT_EQ(read.stat, RPC_FAILED) << "no completion ran";
  // A handle of libtirpc's own (a raw TCP client to nowhere is not
  // needed: the null handle is as foreign).
  EXPECT_FALSE(clnt_rdma_call_async(
      nullptr, TESTPROC_NULL, AsXdrProc(&xdr_void), nullptr,
      AsXdrProc(&xdr_void), nullptr, timeout, &RecordStat, &read));
  EXPECT_EQ(ChannelOf(client())->counters().calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, AdapterAsyncTest,
                         ::testing::Values("soft+unix", "soft+tcp"),
                         SchemeName);

}  // namespace
}  // namespace rpcrdma::test
