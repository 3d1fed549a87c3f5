// Hostile responders under a Channel: a raw soft-fabric peer
// accepts the Channel's connection and answers its calls with replies that
// break RFC 8166; each test checks the call's outcome and that the Channel
// goes on (or recovers) with descriptors and threads back where they were.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>

#include "rpcrdma/channel.h"
#include "tests/hostile/hostile_peer.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {
namespace {

class HostileResponder : public ::testing::Test {
 protected:
  void SetUp() override {
    StartSharedRuntime();
    fds_before_ = OpenDescriptors();
    threads_before_ = Threads();
    fabric_ = fabric::MakeSoftFabric();
    auto l = fabric_->Listen(absl::StrCat("unix:@rpcrdma-hostile-responder-",
                                          ::rpcrdma::test::ProcessTag(), "-",
                                          ++serial_));
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
    auto created = std::async(std::launch::async, [this] {
      return Channel::Create(
          absl::StrCat("soft+unix://", listener_->address().substr(5)), {});
    });
    peer_ = RawPeer::Accept(*listener_);
    ASSERT_NE(peer_, nullptr);
    auto channel = created.get();
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
  }
  void TearDown() override {
    channel_.reset();
    peer_.reset();
    listener_.reset();
    fabric_.reset();
    EXPECT_TRUE(WaitFor([&] { return OpenDescriptors() <= fds_before_; }))
        << OpenDescriptors() << " descriptors, " << fds_before_ << " before";
    EXPECT_TRUE(WaitFor([&] { return Threads() <= threads_before_; }));
  }

  // Starts a call and checks the peer received it, with its XID.
  std::future<absl::StatusOr<Reply>> Start(uint32_t xid) {
    CallRequest req;
    req.xdr = RpcCall(xid);
    req.max_reply_size = 64;
    req.deadline = Clock::now() + milliseconds(3000);
    auto f = channel_->Call(std::move(req));
    std::optional<std::vector<uint8_t>> call = peer_->Receive();
    EXPECT_TRUE(call.has_value());
    if (call) {
      EXPECT_EQ(LoadBigEndian32(call->data()), xid);
    }
    return f;
  }
  static std::vector<uint8_t> RpcReply(uint32_t xid) {
    std::vector<uint8_t> out;
    for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 0u}) AppendWord(out, w);
    return out;
  }
  static absl::StatusOr<Reply> Wait(std::future<absl::StatusOr<Reply>>& f) {
    if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return absl::DeadlineExceededError("test: no completion");
    }
    return f.get();
  }

  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::Listener> listener_;
  std::unique_ptr<RawPeer> peer_;
  std::unique_ptr<Channel> channel_;
  size_t fds_before_ = 0, threads_before_ = 0;
  static inline int serial_ = 0;
};

// RFC 8166 §3.4.5: a reply never carries a read list.
TEST_F(HostileResponder, Rfc8166_3_4_5_ReadListInReplyIsDataLoss) {
  auto f = Start(1);
  peer_->Send(Message(1, kRdmaMsg, {{0, {0x77, 0, 64}}}, RpcReply(1)));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kDataLoss);
}

// RFC 8166 §4.6: RDMA_DONE is deprecated and never answers a call.
TEST_F(HostileResponder, Rfc8166_4_6_RdmaDoneReplyIsDataLoss) {
  auto f = Start(2);
  peer_->Send(Message(2, kRdmaDone, {}));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kDataLoss);
}

// RFC 8166 §3.5.4: a reply chunk never offered cannot be "used".
TEST_F(HostileResponder, Rfc8166_3_5_4_NomsgReplyWithoutOfferedReplyChunk) {
  auto f = Start(3);
  peer_->Send(Message(3, kRdmaNomsg, {}));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kDataLoss);
}

// RFC 8166 §3.3.1: a grant of zero would deadlock; it counts as one, and
// a grant of 65535 is clamped to what this side asked for.
TEST_F(HostileResponder, Rfc8166_3_3_1_CreditZeroAnd65535AreClamped) {
  auto f = Start(4);
  peer_->Send(Message(4, kRdmaMsg, {}, RpcReply(4), /*credits=*/0));
  ASSERT_TRUE(Wait(f).ok());
  auto g = Start(5);  // still goes out: the grant is one, not zero
  peer_->Send(Message(5, kRdmaMsg, {}, RpcReply(5), /*credits=*/65535));
  ASSERT_TRUE(Wait(g).ok());
  EXPECT_LE(channel_->counters().peak_calls_outstanding, 128u);
}

// Unmatched XIDs and a repeated reply are dropped; the call completes once.
TEST_F(HostileResponder, Rfc8166_4_1_UnmatchedAndDuplicateRepliesAreDropped) {
  auto f = Start(6);
  peer_->Send(Message(0x999, kRdmaMsg, {}, RpcReply(0x999)));
  peer_->Send(Message(6, kRdmaMsg, {}, RpcReply(6)));
  peer_->Send(Message(6, kRdmaMsg, {}, RpcReply(6)));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, RpcReply(6));
  auto g = Start(7);
  peer_->Send(Message(7, kRdmaMsg, {}, RpcReply(7)));
  EXPECT_TRUE(Wait(g).ok());
}

// An RDMA_ERROR is never answered (two peers could loop), even a
// malformed one (ERR_VERS without its range); the call fails.
TEST_F(HostileResponder, Rfc8166_4_5_MalformedRdmaErrorIsNotAnswered) {
  auto f = Start(8);
  std::vector<uint8_t> error;
  for (uint32_t w : {8u, 1u, 1u, kRdmaError, kErrVers}) AppendWord(error, w);
  peer_->Send(error);
  EXPECT_FALSE(Wait(f).ok());
  EXPECT_FALSE(peer_->Receive(milliseconds(300)).has_value());
}

}  // namespace
}  // namespace rpcrdma::test
