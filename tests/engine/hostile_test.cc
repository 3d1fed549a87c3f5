// The engine against a hostile peer: credit enforcement, bounded
// reassembly memory, replies that cannot be conveyed, messages that are no
// RPC call, empty bodies, malformed errors, oversized replies and 64-bit
// chunk capacities. Labels engine and hostile.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Concat;
using test::Count;
using test::FakeExposer;
using test::Only;
using test::PrivateDataBytes;
using test::Words;

constexpr uint32_t kCredits = 4;

// A shared budget that records what is held, as a Server's would be.
class CountingBudget : public ReassemblyBudget {
 public:
  explicit CountingBudget(uint64_t capacity) : capacity_(capacity) {}
  bool TryReserve(uint64_t bytes) override {
    if (held + bytes > capacity_) return false;
    held += bytes;
    peak = std::max(peak, held);
    return true;
  }
  void Release(uint64_t bytes) override {
    EXPECT_LE(bytes, held) << "released more than was reserved";
    held -= bytes;
  }
  uint64_t capacity() const override { return capacity_; }
  uint64_t held = 0;
  uint64_t peak = 0;

 private:
  uint64_t capacity_;
};

// An RDMA_NOMSG whose whole call is a position-zero read chunk of
// `length` octets (52 octets on the wire, the defect's message).
std::vector<uint8_t> LongCall(uint32_t xid, uint32_t length,
                              uint32_t handle = 0x500) {
  return Words({xid, 1, kCredits, 1, 1, 0, handle, length, 0, 0, 0, 0, 0});
}
// An inline RDMA_MSG carrying `payload`.
std::vector<uint8_t> InlineCall(uint32_t xid,
                                const std::vector<uint8_t>& payload) {
  return Concat({Words({xid, 1, kCredits, 0, 0, 0, 0}), payload});
}

class HostileTest : public ::testing::Test {
 protected:
  HostileTest() { Reset({}); }

  void Reset(Config config, ReassemblyBudget* budget = nullptr) {
    config.requester = false;
    config.credits = kCredits;
    engine_ = std::make_unique<Engine>(config, &exposer_, budget);
    engine_->OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out_);
    out_.clear();
  }
  Actions Receive(const std::vector<uint8_t>& bytes) {
    engine_->OnReceive(bytes, std::nullopt, out_);
    return std::exchange(out_, {});
  }
  Actions Take() { return std::exchange(out_, {}); }
  // Completes `read`, filling its destination with a valid call for `xid`.
  Actions CompleteRead(const RdmaRead& read, uint32_t xid) {
    std::vector<uint8_t> call = CallStream(xid, {100003, 3, 0});
    std::fill(read.destination.begin(), read.destination.end(), 0);
    std::copy_n(call.begin(), std::min(call.size(), read.destination.size()),
                read.destination.begin());
    engine_->OnReadComplete(read.op, true, out_);
    return Take();
  }
  CallId DeliverInline(uint32_t xid) {
    auto d = Only<DeliverCall>(Receive(InlineCall(xid, CallStream(xid, {}))));
    EXPECT_EQ(d.size(), 1u);
    return d.empty() ? CallId() : d[0].call;
  }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

// ---- Defect 1a: credit enforcement ----------------------------------------

TEST_F(HostileTest, Rfc8166_3_3_1_RequesterOverGrantIsDisconnected) {
  for (uint32_t xid = 1; xid <= kCredits; ++xid) DeliverInline(xid);
  Actions out = Receive(InlineCall(99, CallStream(99, {})));
  auto close = Only<CloseConnection>(out);
  ASSERT_EQ(close.size(), 1u);
  EXPECT_EQ(close[0].reason.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(close[0].reason.message().find("RFC 8166 §3.3.1"),
            std::string::npos);
  EXPECT_NE(close[0].reason.message().find("4 unanswered calls"),
            std::string::npos);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  // Everything after is ignored, not even a receive replaced.
  EXPECT_TRUE(Receive(InlineCall(100, CallStream(100, {}))).empty());
}

TEST_F(HostileTest, Rfc8166_3_3_1_CreditFreesWhenTheReplySendIsEmitted) {
  std::vector<CallId> calls;
  for (uint32_t xid = 1; xid <= kCredits; ++xid) {
    calls.push_back(DeliverInline(xid));
  }
  ASSERT_TRUE(engine_->Reply(calls[0], {CallStream(1, {}), {}}, out_).ok());
  ASSERT_EQ(Count<Send>(Take()), 1u);  // not completed yet
  // The requester saw the reply and reuses the credit at once.
  Actions out = Receive(InlineCall(50, CallStream(50, {})));
  EXPECT_EQ(Count<CloseConnection>(out), 0u);
  EXPECT_EQ(Count<DeliverCall>(out), 1u);
}

TEST_F(HostileTest, Rfc8166_3_3_1_ErrorAnswersHoldNoCredit) {
  // Calls answered at once with ERR_CHUNK are not outstanding.
  for (uint32_t xid = 1; xid <= 3 * kCredits; ++xid) {
    Actions out = Receive(Words({xid, 1, kCredits, 2, 0, 0, 0, 0, 0}));
    EXPECT_EQ(Count<CloseConnection>(out), 0u);
    EXPECT_EQ(Count<Send>(out), 1u);
  }
}

TEST_F(HostileTest, Rfc8166_3_3_1_GrantStartsAfreshOnReconnect) {
  for (uint32_t xid = 1; xid <= kCredits; ++xid) DeliverInline(xid);
  engine_->OnDisconnected(out_);
  engine_->OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out_);
  Take();
  for (uint32_t xid = 1; xid <= kCredits; ++xid) DeliverInline(xid);
}

TEST(HostileBackchannel, Rfc8167_3_1_BackwardCallsOverGrantDisconnect) {
  FakeExposer exposer;
  Config config;
  config.backchannel_credits = 1;  // client serving backward calls
  Engine client(config, &exposer);
  Actions out;
  client.OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out);
  out.clear();
  client.OnReceive(InlineCall(7, CallStream(7, {})), std::nullopt, out);
  EXPECT_EQ(Count<DeliverCall>(out), 1u);
  out.clear();
  client.OnReceive(InlineCall(8, CallStream(8, {})), std::nullopt, out);
  ASSERT_EQ(Count<CloseConnection>(out), 1u);
  EXPECT_NE(Only<CloseConnection>(out)[0].reason.message().find(
                "the 1 unanswered calls"),
            std::string::npos);
}

// ---- Defect 1b: reassembly memory within budgets ---------------------------

TEST_F(HostileTest, Rfc5666_11_TinyLongCallsNeverAllocateBeyondTheBudget) {
  // The defect: 52-octet RDMA_NOMSG messages naming 1 MiB position-zero
  // chunks. Only what the budget holds is allocated; the rest wait.
  CountingBudget budget(2u << 20);
  Config config;
  config.max_call_size = 1u << 20;
  Reset(config, &budget);
  std::vector<RdmaRead> reads;
  for (uint32_t xid = 1; xid <= kCredits; ++xid) {
    Actions out = Receive(LongCall(xid, 1u << 20));
    EXPECT_EQ(Count<Send>(out), 0u);
    for (const RdmaRead& r : Only<RdmaRead>(out)) reads.push_back(r);
  }
  EXPECT_EQ(reads.size(), 2u);
  EXPECT_EQ(budget.held, 2u << 20);
  EXPECT_EQ(engine_->calls_awaiting_memory(), 2u);
  EXPECT_EQ(engine_->reassembly_bytes_held(), 2u << 20);
}

TEST_F(HostileTest, Rfc5666_11_WaitingCallStartsWhenItsMemoryIsReleased) {
  Config config;
  config.max_call_size = 4096;
  config.max_reassembly_bytes = 1000;
  Reset(config);
  Actions first = Receive(LongCall(1, 800));
  ASSERT_EQ(Count<RdmaRead>(first), 1u);
  Actions second = Receive(LongCall(2, 800, 0x600));
  EXPECT_EQ(Count<RdmaRead>(second), 0u);  // waits: nothing allocated
  EXPECT_EQ(engine_->calls_awaiting_memory(), 1u);
  Actions delivered = CompleteRead(Only<RdmaRead>(first)[0], 1);
  ASSERT_EQ(Count<DeliverCall>(delivered), 1u);
  CallId id = Only<DeliverCall>(delivered)[0].call;
  ASSERT_TRUE(engine_->Reply(id, {CallStream(1, {}), {}}, out_).ok());
  Send reply = Only<Send>(Take())[0];
  EXPECT_EQ(engine_->calls_awaiting_memory(), 1u);  // held until sent
  engine_->OnSendComplete(reply.op, true, out_);
  Actions after = Take();
  EXPECT_EQ(Count<ReplySent>(after), 1u);
  ASSERT_EQ(Count<RdmaRead>(after), 1u);
  EXPECT_EQ(Only<RdmaRead>(after)[0].source.handle, 0x600u);
  EXPECT_EQ(engine_->calls_awaiting_memory(), 0u);
}

TEST_F(HostileTest, Rfc5666_11_CallsStartInArrivalOrder) {
  Config config;
  config.max_call_size = 4096;
  config.max_reassembly_bytes = 1000;
  Reset(config);
  Actions first = Receive(LongCall(1, 800));
  Receive(LongCall(2, 800, 0x600));
  // A small inline call fits, but waits behind the earlier one.
  Actions small = Receive(InlineCall(3, CallStream(3, {})));
  EXPECT_EQ(Count<DeliverCall>(small), 0u);
  EXPECT_EQ(engine_->calls_awaiting_memory(), 2u);
  // The first call's read fails: its memory goes to the second call, then
  // the small one fits beside it.
  engine_->OnReadComplete(Only<RdmaRead>(first)[0].op, false, out_);
  Actions after = Take();
  EXPECT_EQ(Count<RdmaRead>(after), 1u);
  EXPECT_EQ(Count<DeliverCall>(after), 1u);
  EXPECT_EQ(engine_->reassembly_bytes_held(), 800u + 24u);
}

TEST_F(HostileTest, Rfc5666_11_CallOverTheBudgetsCapacityGetsErrChunk) {
  CountingBudget budget(512);
  Config config;
  config.max_call_size = 4096;
  Reset(config, &budget);
  Actions out = Receive(LongCall(1, 800));
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({1, 1, kCredits, 4, 2}));
  EXPECT_EQ(Count<RdmaRead>(out), 0u);
  config.max_reassembly_bytes = 700;
  Reset(config);
  out = Receive(LongCall(1, 800));
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({1, 1, kCredits, 4, 2}));
}

TEST_F(HostileTest, Rfc5666_11_InlineCallsCountAgainstTheBudget) {
  CountingBudget budget(48);
  Reset({}, &budget);
  DeliverInline(1);
  DeliverInline(2);
  EXPECT_EQ(budget.held, 48u);
  Actions out = Receive(InlineCall(3, CallStream(3, {})));
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(engine_->calls_awaiting_memory(), 1u);
}

TEST_F(HostileTest, Rfc5666_11_SharedBudgetReleasedByAnotherEngine) {
  CountingBudget budget(1000);
  Config config;
  config.max_call_size = 4096;
  Reset(config, &budget);
  ASSERT_TRUE(budget.TryReserve(900));  // another connection holds it
  Actions out = Receive(LongCall(1, 800));
  EXPECT_EQ(Count<RdmaRead>(out), 0u);
  engine_->OnBudgetReleased(out_);
  EXPECT_EQ(Count<RdmaRead>(Take()), 0u);  // still short
  budget.Release(900);
  engine_->OnBudgetReleased(out_);
  EXPECT_EQ(Count<RdmaRead>(Take()), 1u);
  EXPECT_EQ(budget.held, 800u);
}

TEST_F(HostileTest, Rfc5666_11_EveryEndReleasesExactlyWhatWasReserved) {
  CountingBudget budget(1u << 20);
  Config config;
  config.max_call_size = 4096;
  Reset(config, &budget);
  // A failed read.
  Actions out = Receive(LongCall(1, 800));
  engine_->OnReadComplete(Only<RdmaRead>(out)[0].op, false, out_);
  Take();
  EXPECT_EQ(budget.held, 0u);
  // ERR_CHUNK for a reply that does not fit (no reply chunk offered).
  Reset(config, &budget);
  CallId id = DeliverInline(2);
  ASSERT_TRUE(
      engine_->Reply(id, {std::vector<uint8_t>(2000, 1), {}}, out_).ok());
  Take();
  EXPECT_EQ(budget.held, 0u);
  // A discarded message (msg_type REPLY).
  Receive(InlineCall(3, Words({3, 1, 0, 0, 0, 0})));
  EXPECT_EQ(budget.held, 0u);
  // Disconnect: delivered, reading and waiting calls alike.
  DeliverInline(4);
  out = Receive(LongCall(5, 800));
  RdmaRead read = Only<RdmaRead>(out)[0];
  EXPECT_EQ(budget.held, 824u);
  engine_->OnDisconnected(out_);
  EXPECT_EQ(budget.held, 800u);  // the read may still land
  engine_->OnReadComplete(read.op, false, out_);
  EXPECT_EQ(budget.held, 0u);
  EXPECT_EQ(engine_->reassembly_bytes_held(), 0u);
}

// ---- Defect 3: ERR_CHUNK replies free the reply -------------------------

TEST_F(HostileTest, Rfc8166_4_5_2_ErrChunkReplyEmitsReplySent) {
  CallId id = DeliverInline(1);
  std::vector<uint8_t> big(200 * 1024, 7);  // no reply chunk was offered
  ASSERT_TRUE(engine_->Reply(id, {big, {}}, out_).ok());
  Actions out = Take();
  ASSERT_EQ(Count<Send>(out), 1u);
  EXPECT_EQ(Only<Send>(out)[0].bytes, Words({1, 1, kCredits, 4, 2}));
  ASSERT_EQ(Count<ReplySent>(out), 1u);
  EXPECT_EQ(Only<ReplySent>(out)[0].call, id);
  // The call's state is gone and its credit free.
  EXPECT_FALSE(engine_->Reply(id, {CallStream(1, {}), {}}, out_).ok());
  EXPECT_EQ(engine_->calls_unanswered(), 0u);
}

TEST_F(HostileTest, Rfc8166_4_5_2_ResultOverWriteChunkEmitsReplySent) {
  Actions out =
      Receive(Concat({Words({1, 1, kCredits, 0, 0, 1, 1, 0x500, 8, 0, 0, 0, 0}),
                      CallStream(1, {})}));
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  CallId id = Only<DeliverCall>(out)[0].call;
  std::vector<uint8_t> result(16, 1);
  ASSERT_TRUE(
      engine_->Reply(id, {CallStream(1, {}), {{24, result}}}, out_).ok());
  out = Take();
  EXPECT_EQ(Count<RdmaWrite>(out), 0u);
  EXPECT_EQ(Count<ReplySent>(out), 1u);
}

// ---- Defect 6: empty bodies -------------------------------------------------

TEST_F(HostileTest, Rfc8166_4_1_EmptyRdmaMsgBodyIsNotDelivered) {
  // 28 octets: an RDMA_MSG with empty lists and no RPC message at all.
  Actions out = Receive(Words({1, 1, kCredits, 0, 0, 0, 0}));
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(Count<Send>(out), 0u);
  EXPECT_EQ(engine_->calls_discarded(), 1u);
  EXPECT_EQ(engine_->calls_unanswered(), 0u);
}

TEST_F(HostileTest, Rfc8166_3_5_3_ZeroLengthPositionZeroChunkIsNotDelivered) {
  Actions out = Receive(LongCall(1, 0));
  EXPECT_EQ(Count<RdmaRead>(out), 0u);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(engine_->calls_discarded(), 1u);
}

TEST_F(HostileTest, Rfc8166_3_4_5_ZeroLengthReadChunkDeliversTheCall) {
  // A read chunk of length zero at the end of the call: an empty opaque.
  std::vector<uint8_t> call = CallStream(1, {100003, 3, 0});
  Actions out = Receive(Concat(
      {Words({1, 1, kCredits, 0, 1, 24, 0x500, 0, 0, 0, 0, 0, 0}), call}));
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].message, call);
}

// Found by the engine fuzzer under ASan: the roundup of a position-zero
// chunk of a length not a multiple of four was written past the message.
TEST_F(HostileTest, Rfc8166_3_5_3_UnalignedPositionZeroChunkStaysInItsBuffer) {
  Config config;
  config.max_call_size = 4096;
  Reset(config);
  Actions out = Receive(LongCall(1, 30));
  ASSERT_EQ(Count<RdmaRead>(out), 1u);
  EXPECT_EQ(Only<RdmaRead>(out)[0].destination.size(), 30u);
  out = CompleteRead(Only<RdmaRead>(out)[0], 1);
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].message.size(), 30u);
}

// ---- Defect 7: what reaches a handler
// ----------------------------------------

TEST_F(HostileTest, Rfc8166_4_1_NoRpcCallIsDelivered) {
  struct Case {
    const char* name;
    std::vector<uint8_t> payload;
  };
  const Case cases[] = {
      {"shorter than an RPC call header", Words({1, 0, 2, 100003, 3})},
      {"msg_type REPLY", Words({1, 1, 0, 0, 0, 0, 0})},
      {"RPC XID other than rdma_xid", CallStream(2, {100003, 3, 0})},
  };
  uint64_t discarded = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Actions out = Receive(InlineCall(1, c.payload));
    EXPECT_EQ(Count<DeliverCall>(out), 0u);
    EXPECT_EQ(Count<Send>(out), 0u);  // dropped, as Linux's svc_process
    EXPECT_EQ(engine_->calls_discarded(), ++discarded);
  }
  EXPECT_EQ(engine_->calls_unanswered(), 0u);
}

TEST_F(HostileTest, Rfc8166_4_1_LongCallWithAnotherXidIsNotDelivered) {
  Config config;
  config.max_call_size = 4096;
  Reset(config);
  Actions out = Receive(LongCall(1, 64));
  out = CompleteRead(Only<RdmaRead>(out)[0], /*xid=*/2);
  EXPECT_EQ(Count<DeliverCall>(out), 0u);
  EXPECT_EQ(engine_->calls_discarded(), 1u);
}

// ---- Defect 8
// ----------------------------------------------------------------

TEST_F(HostileTest, Rfc8166_4_5_MalformedRdmaErrorIsNotAnsweredWithAnError) {
  // RDMA_ERROR with an unknown error code, ERR_VERS cut short, and an
  // error with trailing words.
  const std::vector<uint8_t> malformed[] = {
      Words({1, 1, kCredits, 4, 9, 0, 0}), Words({1, 1, kCredits, 4, 1, 1}),
      Words({1, 2, kCredits, 4, 2, 0, 0}),  // and of another version
  };
  for (const auto& m : malformed) {
    Actions out = Receive(m);
    EXPECT_EQ(Count<Send>(out), 0u);
  }
}

TEST_F(HostileTest, Rfc8166_4_2_WriteChunkCapacityPast4GiB) {
  Actions out =
      Receive(Concat({Words({1, 1, kCredits, 0, 0, 1, 2, 0x500, 0xFFFFFFFF, 0,
                             0, 0x501, 0xFFFFFFFF, 0, 0, 0, 0}),
                      CallStream(1, {})}));
  ASSERT_EQ(Count<DeliverCall>(out), 1u);
  ASSERT_EQ(Only<DeliverCall>(out)[0].write_chunk_capacities.size(), 1u);
  EXPECT_EQ(Only<DeliverCall>(out)[0].write_chunk_capacities[0],
            uint64_t{0x1FFFFFFFE});
}

class HostileRequesterTest : public ::testing::Test {
 protected:
  HostileRequesterTest() {
    Config config;
    config.responder = false;
    config.credits = kCredits;
    engine_ = std::make_unique<Engine>(config, &exposer_);
    engine_->OnConnected({PrivateDataBytes({true, 1024, 1024}), 4}, out_);
    out_.clear();
  }
  Actions Take() { return std::exchange(out_, {}); }

  FakeExposer exposer_;
  std::unique_ptr<Engine> engine_;
  Actions out_;
};

TEST_F(HostileRequesterTest, Rfc8166_3_5_4_InlineReplyOverMaxReplySizeFails) {
  std::vector<uint8_t> result(8);
  auto id = engine_->StartCall(
      {CallStream(5, {}), {}, {absl::MakeSpan(result)}, 24}, out_);
  ASSERT_TRUE(id.ok());
  Take();
  // 28 octets of reduced reply, four more than the caller accepts.
  engine_->OnReceive(
      Concat({Words({5, 1, kCredits, 0, 0, 1, 1, 0x100, 0, 0x100, 0, 0, 0}),
              Words({5, 1, 0, 0, 0, 0, 0})}),
      std::nullopt, out_);
  Actions out = Take();
  ASSERT_EQ(Count<Invalidate>(out), 1u);  // revoked before the outcome
  EXPECT_EQ(Count<FailCall>(out), 0u);
  engine_->OnInvalidated(0x100, out_);
  out = Take();
  ASSERT_EQ(Count<FailCall>(out), 1u);
  EXPECT_EQ(Only<FailCall>(out)[0].status.code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_NE(Only<FailCall>(out)[0].status.message().find("max_reply_size"),
            std::string::npos);
}

TEST_F(HostileRequesterTest, Rfc8166_3_3_1_CancelledSentCallIsAbandoned) {
  auto id = engine_->StartCall({CallStream(5, {}), {}, {}, 64}, out_);
  ASSERT_TRUE(id.ok());
  Take();
  engine_->Cancel(*id, absl::DeadlineExceededError("deadline"), out_);
  EXPECT_EQ(Count<FailCall>(Take()), 1u);
  EXPECT_EQ(engine_->calls_abandoned(), 1u);
  EXPECT_EQ(engine_->calls_outstanding(), 1u);  // its credit stays taken
  // A queued (never sent) call that is cancelled is not abandoned.
  auto queued = engine_->StartCall({CallStream(6, {}), {}, {}, 64}, out_);
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(engine_->calls_queued(), 1u);
  engine_->Cancel(*queued, absl::CancelledError("cancelled"), out_);
  Take();
  EXPECT_EQ(engine_->calls_abandoned(), 1u);
  // The late reply frees the credit.
  engine_->OnReceive(
      Concat({Words({5, 1, kCredits, 0, 0, 0, 0}), Words({5, 1, 0, 0, 0, 0})}),
      std::nullopt, out_);
  Take();
  EXPECT_EQ(engine_->calls_abandoned(), 0u);
  EXPECT_EQ(engine_->calls_outstanding(), 0u);
  // A disconnect ends the wait as well.
  id = engine_->StartCall({CallStream(7, {}), {}, {}, 64}, out_);
  engine_->Cancel(*id, absl::CancelledError("cancelled"), out_);
  EXPECT_EQ(engine_->calls_abandoned(), 1u);
  engine_->OnDisconnected(out_);
  EXPECT_EQ(engine_->calls_abandoned(), 0u);
}

}  // namespace
}  // namespace rpcrdma::engine
