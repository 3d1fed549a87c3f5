// End-to-end tests of a Responder dropped unanswered (rpcrdma/responder.h),
// over every transport (api_fixture.h): the transport answers the call
// with an RPC SYSTEM_ERR reply (RFC 5531 §9), through the path Send takes,
// so that the call's credit (RFC 8166 §3.3.1) and its reassembly memory
// come back, forward and backward (RFC 8167); a moved-from Responder
// answers nothing, and neither does one outliving its Server.
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/log.h"
#include "tests/api/api_fixture.h"

namespace rpcrdma::test {
namespace {

constexpr char kDroppedLine[] = "dropped unanswered";

// RFC 5531 §9: xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier of no octets,
// SYSTEM_ERR.
std::vector<uint8_t> SystemErrReply(uint32_t xid) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 5u}) AppendWord(out, w);
  return out;
}

// The warnings of the library while a test runs.
class WarningSink : public LogSink {
 public:
  void Write(const LogRecord& record) override {
    if (record.severity < LogSeverity::kWarning) return;
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({std::string(record.message), record.connection});
    added_.notify_all();
  }
  // Containing(part), once it has at least `count` lines or 10 s have
  // passed: the responder's side logs after handing the reply over, which
  // may be after the requester has it.
  std::vector<std::pair<std::string, ConnectionId>> WaitContaining(
      absl::string_view part, size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    added_.wait_for(lock, std::chrono::seconds(10),
                    [&] { return CountLocked(part) >= count; });
    lock.unlock();
    return Containing(part);
  }
  // The lines containing `part`, with their connection.
  std::vector<std::pair<std::string, ConnectionId>> Containing(
      absl::string_view part) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<std::string, ConnectionId>> out;
    for (const auto& line : lines_) {
      if (absl::StrContains(line.first, part)) out.push_back(line);
    }
    return out;
  }

 private:
  size_t CountLocked(absl::string_view part) const {
    size_t n = 0;
    for (const auto& line : lines_) n += absl::StrContains(line.first, part);
    return n;
  }

  std::mutex mu_;
  std::condition_variable added_;
  std::vector<std::pair<std::string, ConnectionId>> lines_;
};

// Installs a WarningSink until the default sink is restored.
std::shared_ptr<WarningSink> CaptureWarnings() {
  auto sink = std::make_shared<WarningSink>();
  SetLogSink(sink);
  return sink;
}
// Restores the default sink as the test ends.
struct RestoreLogSink {
  ~RestoreLogSink() { SetLogSink(nullptr); }
};

CallRequest DropCall(uint32_t xid, std::chrono::seconds deadline) {
  CallRequest req;
  req.xdr = CallHeader(xid, kDrop);
  req.max_reply_size = 64;
  req.deadline = Clock::now() + deadline;
  return req;
}

// The handler drops its Responder: the requester gets the accepted reply
// with accept_stat SYSTEM_ERR for its XID long before its deadline, and
// one warning names the connection and the XID.
TEST_P(ApiTest, RFC5531Section9_DroppedResponderAnswersSystemErr) {
  RestoreLogSink restore;
  std::shared_ptr<WarningSink> warnings = CaptureWarnings();
  Start();
  const ConnectionId connection = ServerSideConnection();
  const Clock::time_point start = Clock::now();
  auto f = channel_->Call(DropCall(0xD001, std::chrono::seconds(120)));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  // Generous: the deadline is 120 s, without the answer it is reached.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
  ASSERT_EQ(r->xdr.size(), 24u);
  EXPECT_EQ(LoadBigEndian32(r->xdr.data()), 0xD001u);  // xid
  EXPECT_EQ(LoadBigEndian32(r->xdr.data() + 4), 1u);   // REPLY
  EXPECT_EQ(LoadBigEndian32(r->xdr.data() + 8), 0u);   // MSG_ACCEPTED
  EXPECT_EQ(LoadBigEndian32(r->xdr.data() + 20), 5u);  // SYSTEM_ERR
  EXPECT_EQ(r->xdr, SystemErrReply(0xD001));
  auto lines = warnings->WaitContaining(kDroppedLine, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(absl::StrContains(lines[0].first, "XID 0xd001"))
      << lines[0].first;
  EXPECT_TRUE(absl::StrContains(
      lines[0].first, absl::StrCat("connection ", connection.value())))
      << lines[0].first;
  EXPECT_EQ(lines[0].second, connection);
}

// RFC 8166 §3.3.1: a reply returns the call's credit. With two credits,
// ten times as many calls dropped by the handler, all at once, all
// complete; so does an ordinary call after them.
TEST_P(ApiTest, Rfc8166_3_3_1_DroppedRespondersReturnTheirCredits) {
  Start(Config(2));
  Prime();
  constexpr uint32_t kCalls = 20;
  std::vector<std::future<absl::StatusOr<Reply>>> futures;
  for (uint32_t i = 0; i < kCalls; ++i) {
    futures.push_back(
        channel_->Call(DropCall(0xD100 + i, std::chrono::seconds(30))));
  }
  for (uint32_t i = 0; i < kCalls; ++i) {
    absl::StatusOr<Reply> r = Wait(futures[i]);
    ASSERT_TRUE(r.ok()) << "call " << i << ": " << r.status();
    EXPECT_EQ(r->xdr, SystemErrReply(0xD100 + i));
  }
  CallRequest next;
  next.xdr = CallHeader(0xD200, kNull);
  next.max_reply_size = 64;
  auto f = channel_->Call(std::move(next));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0xD200));
  EXPECT_EQ(channel_->counters().replies, kCalls + 2);
}

// RFC 8166 §3.4.5: the Server reassembles a call's read chunk in memory
// it reserves until the reply is sent (limits.max_server_reassembly_bytes).
// With room for one such call, calls dropped by the handler one after
// another each get their answer: each one's memory came back.
TEST_P(ApiTest, Rfc8166_3_4_5_DroppedResponderReturnsReassemblyMemory) {
  constexpr uint32_t kArgument = 20000;  // > the 4096-octet inline threshold
  config::TransportConfig server_config = Config();
  server_config.mutable_limits()->set_max_call_size(32768);
  server_config.mutable_limits()->set_max_reassembly_bytes(32768);
  server_config.mutable_limits()->set_max_server_reassembly_bytes(32768);
  StartServer(server_config);
  Connect(Config());
  Prime();
  const std::vector<uint8_t> arg = Pattern(kArgument, 3);
  for (uint32_t i = 0; i < 8; ++i) {
    CallRequest req = DropCall(0xD300 + i, std::chrono::seconds(20));
    AppendWord(req.xdr, kArgument);
    req.arguments.push_back({kCallHeaderSize + 4, arg});
    auto f = channel_->Call(std::move(req));
    absl::StatusOr<Reply> r = Wait(f);
    ASSERT_TRUE(r.ok()) << "call " << i << ": " << r.status();
    EXPECT_EQ(r->xdr, SystemErrReply(0xD300 + i));
  }
  EXPECT_EQ(server_->counters().read_chunk_calls, 8u);
}

// RFC 8167: a Channel's backward handler that drops its Responder answers
// the Server's backward call SYSTEM_ERR too, and the backchannel's two
// credits come back: five times as many calls all complete.
TEST_P(ApiTest, Rfc8167_DroppedBackwardResponderAnswersAndReturnsCredits) {
  RestoreLogSink restore;
  std::shared_ptr<WarningSink> warnings = CaptureWarnings();
  config::TransportConfig config = Config();
  config.mutable_backchannel()->set_credits(2);
  StartServer(config);
  ConnectWithBackchannel(config);
  const ConnectionId connection = ServerSideConnection();
  constexpr uint32_t kCalls = 10;
  std::vector<std::future<absl::StatusOr<Reply>>> futures;
  for (uint32_t i = 0; i < kCalls; ++i) {
    futures.push_back(server_->Call(
        connection, DropCall(0xD400 + i, std::chrono::seconds(30))));
  }
  for (uint32_t i = 0; i < kCalls; ++i) {
    absl::StatusOr<Reply> r = Wait(futures[i]);
    ASSERT_TRUE(r.ok()) << "call " << i << ": " << r.status();
    EXPECT_EQ(r->xdr, SystemErrReply(0xD400 + i));
  }
  EXPECT_EQ(warnings->WaitContaining(kDroppedLine, kCalls).size(), kCalls);
  EXPECT_EQ(warnings->Containing("XID 0xd409").size(), 1u);
  EXPECT_EQ(server_->counters().backward_replies, kCalls);
}

// A moved-from Responder answers nothing; assigning over one that has not
// replied answers its call SYSTEM_ERR; each call gets exactly one reply.
TEST_P(ApiTest, RFC5531Section9_MovedFromResponderDoesNotAnswerTwice) {
  Start();
  Prime();
  std::vector<std::future<absl::StatusOr<Reply>>> futures = CallHeld(0xD501, 2);
  ASSERT_FALSE(HasFailure());
  std::vector<std::pair<uint32_t, Responder>> held = TakeHeldWithXids();
  ASSERT_EQ(held.size(), 2u);
  const size_t first = held[0].first == 0xD501 ? 0 : 1;
  Responder a = std::move(held[first].second);
  Responder b = std::move(held[1 - first].second);
  held.clear();  // moved from: nothing is sent
  {
    Responder moved = std::move(b);
    b = std::move(moved);  // back again; `moved` goes without answering
  }
  a = std::move(b);  // 0xD501 was not answered: it is now, SYSTEM_ERR
  absl::StatusOr<Reply> r1 = Wait(futures[0]);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->xdr, SystemErrReply(0xD501));
  EXPECT_TRUE(a.Send(HandlerReply(ReplyHeader(0xD502))).ok());
  absl::StatusOr<Reply> r2 = Wait(futures[1]);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->xdr, ReplyHeader(0xD502));
  EXPECT_EQ(b.Send(HandlerReply(ReplyHeader(0xD502))).code(),
            absl::StatusCode::kFailedPrecondition);
  { Responder gone = std::move(a); }  // replied already: nothing more
  CallRequest next;
  next.xdr = CallHeader(0xD503, kNull);
  next.max_reply_size = 64;
  auto f = channel_->Call(std::move(next));
  ASSERT_TRUE(Wait(f).ok());
  // Prime, the two held calls and this one: one reply each.
  EXPECT_EQ(channel_->counters().replies, 4u);
}

// Responders that outlive their Server are dropped without a reply (there
// is no connection left) and without a warning each.
TEST_P(ApiTest, RespondersDroppedAfterTheServerIsGoneLogNothing) {
  RestoreLogSink restore;
  std::shared_ptr<WarningSink> warnings = CaptureWarnings();
  Start();
  Prime();
  std::vector<std::future<absl::StatusOr<Reply>>> futures = CallHeld(0xD601, 3);
  ASSERT_FALSE(HasFailure());
  std::vector<Responder> held = TakeHeld();
  server_.reset();
  for (auto& f : futures) {
    EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kUnavailable);
  }
  held.clear();
  EXPECT_TRUE(warnings->Containing(kDroppedLine).empty());
}

}  // namespace
}  // namespace rpcrdma::test
