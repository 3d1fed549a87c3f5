// End-to-end tests of rpcrdma::Channel and rpcrdma::Server: every transfer
// form of RFC 8166 with exact byte checks, counters, credits, deadlines,
// cancellation, connection loss and reconnect. The same tests run over every
// transport of the public API: built natively (api_test) over the soft
// fabric on Unix-domain abstract sockets and on TCP; built with
// RPCRDMA_API_TEST_VERBS (api_verbs_test) over rdma:// on a real RDMA
// device, in the Soft-RoCE VM (interop/vm) at $RPCRDMA_TEST_ADDR.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/testing/byte_vectors.h"
#ifdef RPCRDMA_API_TEST_VERBS
#include "tests/testing/rdma_vm.h"
#endif

namespace rpcrdma {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kProg = 0x20000099;
// Procedures of the test program (the server's behaviour).
constexpr uint32_t kNull = 0;        // reply header only
constexpr uint32_t kEcho = 1;        // reply: header + the call's arguments
constexpr uint32_t kDdpResult = 2;   // args n, seed: reply opaque<n> item
constexpr uint32_t kDdpAndBulk = 3;  // args n, seed, m: item + opaque<m> inline
constexpr uint32_t kHold = 4;        // no reply until the test releases it
constexpr uint32_t kEchoLater = 5;   // as kEcho, answered from another thread
constexpr uint32_t kBulk = 6;        // args m, seed: opaque<m> inline

void Put(std::vector<uint8_t>& out, uint32_t w) {
  out.push_back(static_cast<uint8_t>(w >> 24));
  out.push_back(static_cast<uint8_t>(w >> 16));
  out.push_back(static_cast<uint8_t>(w >> 8));
  out.push_back(static_cast<uint8_t>(w));
}
uint32_t Get(absl::Span<const uint8_t> in, size_t offset) {
  return (uint32_t{in[offset]} << 24) | (uint32_t{in[offset + 1]} << 16) |
         (uint32_t{in[offset + 2]} << 8) | uint32_t{in[offset + 3]};
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
  }
  return v;
}

// RFC 5531 call header with AUTH_NONE credential and verifier: 40 octets.
std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t proc) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 0u, 2u, kProg, 1u, proc, 0u, 0u, 0u, 0u}) {
    Put(out, w);
  }
  return out;
}
constexpr size_t kCallHeaderSize = 40;

// RFC 5531 accepted, successful reply header: 24 octets.
std::vector<uint8_t> ReplyHeader(uint32_t xid) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 0u}) Put(out, w);
  return out;
}
constexpr uint32_t kReplyHeaderSize = 24;

// opaque<> inline: length, data, roundup.
void PutOpaque(std::vector<uint8_t>& out, const std::vector<uint8_t>& data) {
  Put(out, static_cast<uint32_t>(data.size()));
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), (4 - data.size() % 4) % 4, uint8_t{0});
}

// What the server answers to each procedure.
ServerReply Answer(const IncomingCall& call) {
  absl::Span<const uint8_t> m = call.message;
  uint32_t proc = Get(m, 20);
  ServerReply reply;
  reply.xdr = ReplyHeader(call.xid);
  switch (proc) {
    case kEcho:
    case kEchoLater:
      reply.xdr.insert(reply.xdr.end(), m.begin() + kCallHeaderSize, m.end());
      break;
    case kDdpResult:
    case kDdpAndBulk: {
      uint32_t n = Get(m, kCallHeaderSize);
      uint32_t seed = Get(m, kCallHeaderSize + 4);
      Put(reply.xdr, n);
      reply.results.push_back({kReplyHeaderSize + 4, Pattern(n, seed)});
      if (proc == kDdpAndBulk) {
        uint32_t bulk = Get(m, kCallHeaderSize + 8);
        PutOpaque(reply.xdr, Pattern(bulk, seed + 1));
      }
      break;
    }
    case kBulk:
      PutOpaque(reply.xdr,
                Pattern(Get(m, kCallHeaderSize), Get(m, kCallHeaderSize + 4)));
      break;
    default:
      break;
  }
  return reply;
}

// A fresh abstract Unix socket name (the native binary only).
[[maybe_unused]] std::string UniqueUri() {
  static std::atomic<int> counter{0};
  return absl::StrCat("soft+unix://@rpcrdma-api-test-", getpid(), "-",
                      counter++);
}

// A transport the tests run over: its name (the test name's suffix) and
// the URI a Server listens on (a port of 0 picks one; Server::uri() names
// the port chosen).
struct Transport {
  std::string name;
  std::function<std::string()> listen_uri;
};

void PrintTo(const Transport& transport, std::ostream* os) {
  *os << transport.name;
}

std::string TransportName(const ::testing::TestParamInfo<Transport>& info) {
  return info.param.name;
}

std::string PrintCounters(const Counters& c) {
  return absl::StrCat(
      "calls ", c.calls, " replies ", c.replies, " inline_calls ",
      c.inline_calls, " read_chunk_calls ", c.read_chunk_calls, " read_chunks ",
      c.read_chunks, " write_chunks ", c.write_chunks, " reply_chunks ",
      c.reply_chunks, " long_calls ", c.long_calls, " long_replies ",
      c.long_replies, " remote_invalidations ", c.remote_invalidations,
      " errors_sent ", c.errors_sent, " errors_received ", c.errors_received,
      " credits_granted ", c.credits_granted, " reconnects ", c.reconnects,
      " peak_calls_outstanding ", c.peak_calls_outstanding, " backward_calls ",
      c.backward_calls, " backward_replies ", c.backward_replies);
}

// Both ends count the same messages; only the requester has calls
// outstanding.
Counters SameTraffic(Counters c) {
  c.peak_calls_outstanding = 0;
  return c;
}

config::TransportConfig Config(uint32_t credits = 32) {
  config::TransportConfig c;
  c.mutable_credits()->set_max_requests(credits);
  c.mutable_credits()->set_credits_granted(credits);
  return c;
}

class ApiTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    worker_ = std::thread([this] { Worker(); });
  }
  void TearDown() override {
    channel_.reset();
    server_.reset();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  // Listens on `uri` (by default a fresh one of the transport).
  void StartServer(const config::TransportConfig& config,
                   std::string uri = "") {
    auto server = Server::Create(
        uri.empty() ? GetParam().listen_uri() : uri, config,
        [this](IncomingCall call, Responder responder) {
          uint32_t proc = Get(call.message, 20);
          std::lock_guard<std::mutex> lock(mu_);
          received_[call.xid] = call;
          ++in_flight_;
          max_in_flight_ = std::max(max_in_flight_, in_flight_);
          if (proc == kHold) {
            held_.push_back(std::move(responder));
            held_xids_.push_back(call.xid);
            cv_.notify_all();
          } else if (proc == kEchoLater) {
            later_.emplace_back(std::move(call), std::move(responder));
            cv_.notify_all();
          } else {
            --in_flight_;
            EXPECT_TRUE(responder.Send(Answer(call)).ok());
          }
        });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void Connect(const config::TransportConfig& config) {
    auto channel = Channel::Create(server_->uri(), config);
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
  }

  void Start(const config::TransportConfig& config = Config()) {
    StartServer(config);
    Connect(config);
  }

  // A Channel that serves backward calls (RFC 8167) as the server serves
  // forward ones; kHold calls are kept in backward_held_.
  void ConnectWithBackchannel(const config::TransportConfig& config) {
    auto channel = Channel::Create(server_->uri(), config,
                                   [this](IncomingCall call, Responder r) {
                                     std::lock_guard<std::mutex> lock(mu_);
                                     backward_received_[call.xid] = call;
                                     if (Get(call.message, 20) == kHold) {
                                       backward_held_.push_back(std::move(r));
                                       cv_.notify_all();
                                       return;
                                     }
                                     EXPECT_TRUE(r.Send(Answer(call)).ok());
                                   });
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
  }

  // The Server's id of the Channel's connection, learned from one call.
  uint64_t ConnectionId() {
    CallRequest req;
    req.xdr = CallHeader(0xFFFF0001, kNull);
    req.max_reply_size = 64;
    auto f = channel_->Call(std::move(req));
    absl::StatusOr<Reply> r = Wait(f);
    EXPECT_TRUE(r.ok()) << r.status();
    return Received(0xFFFF0001).connection;
  }

  // One call answered: the requester's credit grant rises from one to the
  // server's grant (RFC 8166 §3.3.1), so held calls leave credits free.
  void Prime() {
    CallRequest req;
    req.xdr = CallHeader(0xFFFF0000, kNull);
    req.max_reply_size = 64;
    auto f = channel_->Call(std::move(req));
    absl::StatusOr<Reply> r = Wait(f);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->xdr, ReplyHeader(0xFFFF0000));
  }

  IncomingCall Received(uint32_t xid) {
    std::lock_guard<std::mutex> lock(mu_);
    return received_.at(xid);
  }

  // Waits until `n` calls are held by kHold.
  bool WaitHeld(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20),
                        [&] { return held_.size() >= n; });
  }
  std::vector<Responder> TakeHeld() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Responder> out = std::move(held_);
    held_.clear();
    held_xids_.clear();
    return out;
  }
  std::vector<std::pair<uint32_t, Responder>> TakeHeldWithXids() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<uint32_t, Responder>> out;
    for (size_t i = 0; i < held_.size(); ++i) {
      out.emplace_back(held_xids_[i], std::move(held_[i]));
    }
    held_.clear();
    held_xids_.clear();
    return out;
  }

  static absl::StatusOr<Reply> Wait(std::future<absl::StatusOr<Reply>>& f) {
    if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      return absl::InternalError("test: no completion within 60 s");
    }
    return f.get();
  }

  void Worker() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !later_.empty(); });
      if (later_.empty()) return;
      auto item = std::move(later_.front());
      later_.pop_front();
      --in_flight_;
      lock.unlock();
      EXPECT_TRUE(item.second.Send(Answer(item.first)).ok());
      lock.lock();
    }
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Channel> channel_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<uint32_t, IncomingCall> received_;
  // Calls the server holds unanswered: at most the credits granted.
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  std::vector<Responder> held_;
  std::vector<uint32_t> held_xids_;  // of held_, in order
  std::deque<std::pair<IncomingCall, Responder>> later_;
  std::map<uint32_t, IncomingCall> backward_received_;
  std::vector<Responder> backward_held_;
  std::thread worker_;
};

TEST_P(ApiTest, Rfc8166_3_5_1_InlineCall) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x1001, kEcho);
  PutOpaque(req.xdr, Pattern(13, 5));
  req.max_reply_size = 256;
  std::vector<uint8_t> sent = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x1001);
  PutOpaque(expected, Pattern(13, 5));
  EXPECT_EQ(r->xdr, expected);
  EXPECT_TRUE(r->result_lengths.empty());
  EXPECT_EQ(Received(0x1001).message, sent);
  EXPECT_TRUE(Received(0x1001).write_chunk_capacities.empty());
  EXPECT_EQ(Received(0x1001).reply_chunk_capacity, 0u);

  Counters c = channel_->counters();
  EXPECT_EQ(c.calls, 1u);
  EXPECT_EQ(c.replies, 1u);
  EXPECT_EQ(c.inline_calls, 1u);
  EXPECT_EQ(c.read_chunk_calls, 0u);
  EXPECT_EQ(c.long_calls, 0u);
  EXPECT_EQ(c.long_replies, 0u);
  EXPECT_EQ(c.write_chunks, 0u);
  EXPECT_EQ(c.reply_chunks, 0u);
  EXPECT_EQ(c.remote_invalidations, 0u);
  EXPECT_EQ(c.errors_received, 0u);
  EXPECT_EQ(c.credits_granted, 32u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_4_5_DdpArgumentInReadChunk) {
  Start();
  std::vector<uint8_t> arg = Pattern(10001, 9);  // > 4096 inline threshold
  CallRequest req;
  req.xdr = CallHeader(0x2001, kNull);
  Put(req.xdr, static_cast<uint32_t>(arg.size()));
  Put(req.xdr, 0xABCD0123);  // an item after the DDP-eligible one
  req.arguments.push_back({kCallHeaderSize + 4, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0x2001));
  EXPECT_EQ(Received(0x2001).message,
            testutil::WithXdrItem(reduced, kCallHeaderSize + 4, arg));
  Counters c = channel_->counters();
  EXPECT_EQ(c.read_chunk_calls, 1u);
  EXPECT_EQ(c.read_chunks, 1u);
  EXPECT_EQ(c.inline_calls, 0u);
  EXPECT_EQ(c.long_calls, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_4_DdpArgumentSentInlineWhenItFits) {
  Start();
  std::vector<uint8_t> arg = Pattern(1001, 4);
  CallRequest req;
  req.xdr = CallHeader(0x2101, kNull);
  Put(req.xdr, static_cast<uint32_t>(arg.size()));
  req.arguments.push_back({kCallHeaderSize + 4, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(Received(0x2101).message,
            testutil::WithXdrItem(reduced, kCallHeaderSize + 4, arg));
  EXPECT_EQ(channel_->counters().inline_calls, 1u);
  EXPECT_EQ(channel_->counters().read_chunk_calls, 0u);
}

TEST_P(ApiTest, Rfc8166_3_5_3_PositionZeroLongCall) {
  Start();
  // The reduced stream alone exceeds the 4096-octet inline threshold.
  std::vector<uint8_t> bulk = Pattern(6000, 2);
  std::vector<uint8_t> arg = Pattern(3001, 3);
  CallRequest req;
  req.xdr = CallHeader(0x3001, kNull);
  PutOpaque(req.xdr, bulk);
  Put(req.xdr, static_cast<uint32_t>(arg.size()));
  uint32_t position = static_cast<uint32_t>(req.xdr.size());
  req.arguments.push_back({position, arg});
  req.max_reply_size = 64;
  std::vector<uint8_t> reduced = req.xdr;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0x3001));
  EXPECT_EQ(Received(0x3001).message,
            testutil::WithXdrItem(reduced, position, arg));
  Counters c = channel_->counters();
  EXPECT_EQ(c.long_calls, 1u);
  EXPECT_EQ(c.inline_calls, 0u);
  EXPECT_EQ(c.read_chunk_calls, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_4_7_WriteChunkLandsInCallerBuffer) {
  Start();
  std::vector<uint8_t> buffer(8192, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x4001, kDdpResult);
  Put(req.xdr, 5003);
  Put(req.xdr, 77);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 256;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x4001);
  Put(expected, 5003);
  EXPECT_EQ(r->xdr, expected);
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{5003});
  std::vector<uint8_t> want = Pattern(5003, 77);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
  // Nothing beyond the result was written.
  for (size_t i = 5003; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], 0xEE) << i;
  }
  EXPECT_EQ(Received(0x4001).write_chunk_capacities,
            std::vector<uint64_t>{8192});
  Counters c = channel_->counters();
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.reply_chunks, 0u);
  EXPECT_EQ(c.long_replies, 0u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_5_4_LongReplyThroughReplyChunk) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x5001, kBulk);
  Put(req.xdr, 10003);
  Put(req.xdr, 11);
  req.max_reply_size = 16384;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x5001);
  PutOpaque(expected, Pattern(10003, 11));
  EXPECT_EQ(r->xdr, expected);
  EXPECT_EQ(Received(0x5001).reply_chunk_capacity, 16384u);
  Counters c = channel_->counters();
  EXPECT_EQ(c.reply_chunks, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(c.inline_calls, 1u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

TEST_P(ApiTest, Rfc8166_3_5_4_WriteListAndReplyChunkTogether) {
  Start();
  std::vector<uint8_t> buffer(7000, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x6001, kDdpAndBulk);
  Put(req.xdr, 6001);
  Put(req.xdr, 21);
  Put(req.xdr, 9001);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 12000;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0x6001);
  Put(expected, 6001);
  PutOpaque(expected, Pattern(9001, 22));
  EXPECT_EQ(r->xdr, expected);
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{6001});
  std::vector<uint8_t> want = Pattern(6001, 21);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
  EXPECT_EQ(buffer[6001], 0xEE);
  Counters c = channel_->counters();
  std::printf("%s: channel counters: %s\n", GetParam().name.c_str(),
              PrintCounters(c).c_str());
  std::printf("%s: server counters:  %s\n", GetParam().name.c_str(),
              PrintCounters(server_->counters()).c_str());
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.reply_chunks, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
}

// A reply longer than the inline threshold with no reply chunk offered:
// the responder answers RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.2), which the
// requester reports as INVALID_ARGUMENT; the connection stays usable.
TEST_P(ApiTest, Rfc8166_4_5_2_ReplyTooLongForOfferedChunksIsErrChunk) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x5101, kBulk);
  Put(req.xdr, 10003);
  Put(req.xdr, 11);
  req.max_reply_size = 64;  // no reply chunk
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_EQ(channel_->counters().errors_received, 1u);
  EXPECT_EQ(channel_->counters().replies, 0u);
  EXPECT_EQ(server_->counters().errors_sent, 1u);
  CallRequest next;
  next.xdr = CallHeader(0x5102, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->xdr, ReplyHeader(0x5102));
}

// One write chunk of one segment: every handle of the call is the same, so
// the responder may use Send With Invalidate (RFC 8797 §4.1) when both
// sides set R.
void WriteChunkCall(Channel& channel, uint32_t xid) {
  std::vector<uint8_t> buffer(4096, 0);
  CallRequest req;
  req.xdr = CallHeader(xid, kDdpResult);
  Put(req.xdr, 4000);
  Put(req.xdr, 5);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 256;
  auto f = channel.Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  absl::StatusOr<Reply> r = f.get();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->result_lengths, std::vector<uint32_t>{4000});
  std::vector<uint8_t> want = Pattern(4000, 5);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOn) {
  Start();
  WriteChunkCall(*channel_, 0x7001);
  WriteChunkCall(*channel_, 0x7002);
  EXPECT_EQ(channel_->counters().remote_invalidations, 2u);
  EXPECT_EQ(server_->counters().remote_invalidations, 2u);
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOffAtRequester) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_remote_invalidation(false);
  Connect(client);
  WriteChunkCall(*channel_, 0x7101);
  WriteChunkCall(*channel_, 0x7102);
  EXPECT_EQ(channel_->counters().remote_invalidations, 0u);
  EXPECT_EQ(server_->counters().remote_invalidations, 0u);
}

TEST_P(ApiTest, Rfc8797_4_1_RemoteInvalidationOffAtResponder) {
  config::TransportConfig server = Config();
  server.set_remote_invalidation(false);
  StartServer(server);
  Connect(Config());
  WriteChunkCall(*channel_, 0x7201);
  EXPECT_EQ(channel_->counters().remote_invalidations, 0u);
  EXPECT_EQ(server_->counters().remote_invalidations, 0u);
}

TEST_P(ApiTest, Rfc8166_3_3_1_ThousandCallsFromFourThreadsWithFourCredits) {
  Start(Config(4));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<uint8_t>> args(kPerThread);
      std::vector<std::vector<uint8_t>> results(kPerThread);
      std::vector<std::future<absl::StatusOr<Reply>>> futures;
      std::vector<uint32_t> xids;
      for (int i = 0; i < kPerThread; ++i) {
        uint32_t xid =
            0x10000u * static_cast<uint32_t>(t + 1) + static_cast<uint32_t>(i);
        CallRequest req;
        // A third carry a read chunk; every other one is answered later
        // from another thread.
        uint32_t proc = i % 2 == 0 ? kEcho : kEchoLater;
        req.xdr = CallHeader(xid, proc);
        args[static_cast<size_t>(i)] = Pattern(i % 3 == 0 ? 5000 : 40, xid);
        const std::vector<uint8_t>& arg = args[static_cast<size_t>(i)];
        Put(req.xdr, static_cast<uint32_t>(arg.size()));
        req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
        req.max_reply_size = 8192;
        xids.push_back(xid);
        futures.push_back(channel_->Call(std::move(req)));
      }
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<Reply> r = Wait(futures[static_cast<size_t>(i)]);
        ASSERT_TRUE(r.ok()) << r.status();
        std::vector<uint8_t> expected =
            ReplyHeader(xids[static_cast<size_t>(i)]);
        PutOpaque(expected, args[static_cast<size_t>(i)]);
        ASSERT_EQ(r->xdr, expected) << "xid " << xids[static_cast<size_t>(i)];
        ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), kThreads * kPerThread);
  Counters c = channel_->counters();
  EXPECT_EQ(c.calls, 1000u);
  EXPECT_EQ(c.replies, 1000u);
  // 84 of each thread's 250 calls carry 5000 octets: read chunks.
  EXPECT_EQ(c.read_chunk_calls, 4u * 84u);
  EXPECT_EQ(c.inline_calls, 1000u - 4u * 84u);
  // Those replies echo 5000 octets: through the reply chunk.
  EXPECT_EQ(c.long_replies, 4u * 84u);
  EXPECT_EQ(c.credits_granted, 4u);
  // RFC 8166 §3.3.1: never more outstanding than granted, and the grant
  // was used.
  EXPECT_EQ(c.peak_calls_outstanding, 4u);
  EXPECT_EQ(SameTraffic(server_->counters()), SameTraffic(c));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_GE(max_in_flight_, 1);
  EXPECT_LE(max_in_flight_, 4);
}

TEST_P(ApiTest, DeadlineExceededThenLateReplyDropped) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x8001, kHold);
  req.max_reply_size = 64;
  Clock::time_point begin = Clock::now();
  req.deadline = begin + milliseconds(100);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_GE(Clock::now() - begin, milliseconds(100));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(), "channel: deadline exceeded");
  // The late reply is dropped; the credit it held comes back with it.
  ASSERT_TRUE(WaitHeld(1));
  for (Responder& h : TakeHeld()) {
    EXPECT_TRUE(h.Send({ReplyHeader(0x8001), {}}).ok());
  }
  // Once it has arrived: a call made while the abandoned one still held
  // the only credit would end the connection (channel.h, abandoned calls).
  Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (channel_->counters().replies < 1 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  CallRequest next;
  next.xdr = CallHeader(0x8002, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->xdr, ReplyHeader(0x8002));
}

// RFC 8166 §3.4.7 memory safety: once the call has failed, its result
// buffer is no longer reachable; the late reply's RDMA Write hits the
// revoked handle, which breaks the connection, and the buffer is untouched.
TEST_P(ApiTest, DeadlineExceededRevokesResultBuffer) {
  Start();
  Prime();
  std::vector<uint8_t> buffer(4096, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x8201, kHold);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 64;
  req.deadline = Clock::now() + milliseconds(50);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(WaitHeld(1));
  ServerReply late;
  late.xdr = ReplyHeader(0x8201);
  Put(late.xdr, 4000);
  late.results.push_back({kReplyHeaderSize + 4, std::vector<uint8_t>(4000, 1)});
  for (Responder& h : TakeHeld()) EXPECT_TRUE(h.Send(std::move(late)).ok());
  // The broken connection is replaced at once (the server still listens).
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel_->counters().reconnects == 0 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(channel_->counters().reconnects, 1u);
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));
}

TEST_P(ApiTest, DeadlineAlreadyPassed) {
  Start();
  CallRequest req;
  req.xdr = CallHeader(0x8101, kNull);
  req.max_reply_size = 64;
  req.deadline = Clock::now() - milliseconds(1);
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(channel_->counters().calls, 0u);
}

TEST_P(ApiTest, CancelledCallCompletesWithCancelled) {
  Start();
  Prime();
  std::vector<uint8_t> buffer(4096, 0xEE);
  CallRequest req;
  req.xdr = CallHeader(0x9001, kHold);
  req.results.push_back(absl::MakeSpan(buffer));
  req.max_reply_size = 64;
  std::promise<absl::StatusOr<Reply>> done;
  auto f = done.get_future();
  Channel::CallId id = channel_->Call(
      std::move(req),
      [&done](absl::StatusOr<Reply> r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(WaitHeld(1));
  channel_->Cancel(id);
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(r.status().message(), "channel: call cancelled");
  // Cancelling again, or an unknown call, changes nothing.
  channel_->Cancel(id);
  channel_->Cancel(12345);
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));
  TakeHeld();  // dropped unanswered
  CallRequest next;
  next.xdr = CallHeader(0x9002, kNull);
  next.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(next));
  ASSERT_TRUE(Wait(f2).ok());
}

TEST_P(ApiTest, ServerGoingAwayFailsCallsWithUnavailable) {
  Start();
  Prime();
  std::vector<std::future<absl::StatusOr<Reply>>> futures;
  for (uint32_t i = 0; i < 3; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xA001 + i, kHold);
    req.max_reply_size = 64;
    futures.push_back(channel_->Call(std::move(req)));
  }
  ASSERT_TRUE(WaitHeld(3));
  server_.reset();
  for (auto& f : futures) {
    absl::StatusOr<Reply> r = Wait(f);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    // The status says what ended the connection.
    EXPECT_NE(std::string(r.status().message()).find("(connection event "),
              std::string::npos)
        << r.status();
  }
  // Held responders outlive the server safely.
  for (Responder& h : TakeHeld()) {
    EXPECT_EQ(h.Send({ReplyHeader(1), {}}).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  // Later calls fail at once.
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel_->connected() && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_FALSE(channel_->connected());
  CallRequest req;
  req.xdr = CallHeader(0xA101, kNull);
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kUnavailable);
}

TEST_P(ApiTest, ChannelDestroyedWithCallsPendingFailsThem) {
  Start();
  Prime();
  std::atomic<int> unavailable{0};
  for (uint32_t i = 0; i < 3; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xB001 + i, kHold);
    req.max_reply_size = 64;
    channel_->Call(std::move(req), [&](absl::StatusOr<Reply> r) {
      if (r.status().code() == absl::StatusCode::kUnavailable) ++unavailable;
    });
  }
  ASSERT_TRUE(WaitHeld(3));
  channel_.reset();
  EXPECT_EQ(unavailable.load(), 3);
}

TEST_P(ApiTest, Rfc8166_6_MisplacedArgumentIsInvalidArgument) {
  Start();
  std::vector<uint8_t> arg = Pattern(10, 1);
  CallRequest req;
  req.xdr = CallHeader(0xC001, kNull);
  Put(req.xdr, 10);
  req.arguments.push_back({kCallHeaderSize + 2, arg});  // not a multiple of 4
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  EXPECT_EQ(Wait(f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(channel_->counters().calls, 0u);
}

TEST_P(ApiTest, ResponderRepliesOnce) {
  StartServer(Config());
  // Replaced handler semantics are checked through a held call.
  Connect(Config());
  CallRequest req;
  req.xdr = CallHeader(0xD001, kHold);
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  ASSERT_TRUE(WaitHeld(1));
  std::vector<Responder> held = TakeHeld();
  EXPECT_TRUE(held[0].Send({ReplyHeader(0xD001), {}}).ok());
  EXPECT_EQ(held[0].Send({ReplyHeader(0xD001), {}}).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, ReplyHeader(0xD001));
}

// Reconnect (channel.h): retries come quickly in these tests.
config::TransportConfig ReconnectConfig() {
  config::TransportConfig c = Config();
  c.mutable_timeouts()->set_reconnect_backoff_initial_ms(10);
  c.mutable_timeouts()->set_reconnect_backoff_max_ms(80);
  return c;
}

// Waits until the Channel has noticed the loss of its connection (with no
// server listening it stays down).
bool WaitDisconnected(const Channel& channel) {
  Clock::time_point until = Clock::now() + std::chrono::seconds(20);
  while (channel.connected() && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  return !channel.connected();
}

// The server restarts on the same address while calls are pending. Calls
// that allow a retry are sent again with the same XID over the new
// connection, where one credit is free until the first reply (RFC 8166
// §3.3.1); a write chunk is exposed anew there. A call that does not allow
// a retry fails with UNAVAILABLE.
TEST_P(ApiTest, Rfc8166_3_3_1_RetryableCallsResentWithSameXidAfterRestart) {
  config::TransportConfig config = ReconnectConfig();
  Start(config);
  Prime();
  const std::string uri = server_->uri();
  std::vector<uint8_t> buffer(2000, 0xEE);
  std::vector<std::future<absl::StatusOr<Reply>>> retryable;
  for (uint32_t i = 0; i < 4; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xE001 + i, kHold);
    if (i == 0) req.results.push_back(absl::MakeSpan(buffer));
    req.max_reply_size = 64;
    req.retry_on_reconnect = true;
    retryable.push_back(channel_->Call(std::move(req)));
  }
  CallRequest once;
  once.xdr = CallHeader(0xE0FF, kHold);
  once.max_reply_size = 64;
  auto once_future = channel_->Call(std::move(once));
  ASSERT_TRUE(WaitHeld(5));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(received_.size(), 6u);  // the prime call and these five
    received_.clear();
    in_flight_ = 0;
    max_in_flight_ = 0;
  }
  TakeHeld();  // the old server's responders, never answered
  server_.reset();
  absl::StatusOr<Reply> lost = Wait(once_future);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable)
      << lost.status();
  for (auto& f : retryable) {
    EXPECT_NE(f.wait_for(milliseconds(0)), std::future_status::ready);
  }

  StartServer(config, uri);
  ASSERT_TRUE(WaitHeld(1));
  // One credit on the new connection until its first reply: the other
  // three calls stay at the requester.
  std::this_thread::sleep_for(milliseconds(200));
  std::vector<Responder> first = TakeHeld();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(server_->counters().calls, 1u);
  Counters before = channel_->counters();
  EXPECT_EQ(before.reconnects, 1u) << PrintCounters(before);
  EXPECT_EQ(before.credits_granted, 0u) << PrintCounters(before);
  // Sent in the order the calls were made, with the write chunk again.
  IncomingCall resent = Received(0xE001);
  EXPECT_EQ(resent.message, CallHeader(0xE001, kHold));
  EXPECT_EQ(resent.write_chunk_capacities, std::vector<uint64_t>{2000});
  ServerReply reply;
  reply.xdr = ReplyHeader(0xE001);
  Put(reply.xdr, 1500);
  reply.results.push_back({kReplyHeaderSize + 4, Pattern(1500, 9)});
  ASSERT_TRUE(first[0].Send(std::move(reply)).ok());
  absl::StatusOr<Reply> r0 = Wait(retryable[0]);
  ASSERT_TRUE(r0.ok()) << r0.status();
  std::vector<uint8_t> expected_xdr = ReplyHeader(0xE001);
  Put(expected_xdr, 1500);
  EXPECT_EQ(r0->xdr, expected_xdr);
  EXPECT_EQ(r0->result_lengths, std::vector<uint32_t>{1500});
  EXPECT_TRUE(std::equal(buffer.begin(), buffer.begin() + 1500,
                         Pattern(1500, 9).begin()));
  EXPECT_TRUE(std::all_of(buffer.begin() + 1500, buffer.end(),
                          [](uint8_t b) { return b == 0xEE; }));

  // The grant is the server's now: the other three arrive together.
  ASSERT_TRUE(WaitHeld(3));
  std::vector<uint32_t> xids;
  for (auto& [xid, h] : TakeHeldWithXids()) {
    xids.push_back(xid);
    EXPECT_TRUE(h.Send({ReplyHeader(xid), {}}).ok());
  }
  std::sort(xids.begin(), xids.end());
  EXPECT_EQ(xids, (std::vector<uint32_t>{0xE002, 0xE003, 0xE004}));
  for (uint32_t i = 1; i < 4; ++i) {
    absl::StatusOr<Reply> r = Wait(retryable[i]);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->xdr, ReplyHeader(0xE001 + i));
  }
  // Each retryable call reached the new server exactly once, with its XID;
  // the call that did not allow a retry never did.
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(received_.size(), 4u);
    EXPECT_EQ(received_.count(0xE0FF), 0u);
  }
  EXPECT_EQ(server_->counters().calls, 4u);
  Counters after = channel_->counters();
  // Calls sent: the prime call, five on the first connection, four again.
  EXPECT_EQ(after.calls, 10u) << PrintCounters(after);
  EXPECT_EQ(after.replies, 5u) << PrintCounters(after);
  EXPECT_EQ(after.write_chunks, 2u) << PrintCounters(after);
  EXPECT_EQ(after.credits_granted, 32u) << PrintCounters(after);
  EXPECT_EQ(after.reconnects, 1u);
  EXPECT_TRUE(channel_->connected());
}

// The deadline of a call that allows a retry runs on while the Channel
// reconnects; so does Cancel().
TEST_P(ApiTest, DeadlineExceededWhileReconnecting) {
  Start(ReconnectConfig());
  Prime();
  CallRequest req;
  req.xdr = CallHeader(0xE101, kHold);
  req.max_reply_size = 64;
  req.retry_on_reconnect = true;
  req.deadline = Clock::now() + milliseconds(1500);
  auto pending = channel_->Call(std::move(req));
  ASSERT_TRUE(WaitHeld(1));
  TakeHeld();
  server_.reset();  // nothing listens any more
  ASSERT_TRUE(WaitDisconnected(*channel_));
  // Made while the connection is down: waits, or fails at once without
  // retry_on_reconnect.
  CallRequest late;
  late.xdr = CallHeader(0xE102, kNull);
  late.max_reply_size = 64;
  late.retry_on_reconnect = true;
  late.deadline = Clock::now() + milliseconds(100);
  Clock::time_point late_start = Clock::now();
  auto late_future = channel_->Call(std::move(late));
  CallRequest cancelled;
  cancelled.xdr = CallHeader(0xE103, kNull);
  cancelled.max_reply_size = 64;
  cancelled.retry_on_reconnect = true;
  std::promise<absl::StatusOr<Reply>> cancelled_promise;
  auto cancelled_future = cancelled_promise.get_future();
  Channel::CallId cancelled_id =
      channel_->Call(std::move(cancelled), [&](absl::StatusOr<Reply> r) {
        cancelled_promise.set_value(std::move(r));
      });
  CallRequest once;
  once.xdr = CallHeader(0xE104, kNull);
  once.max_reply_size = 64;
  auto once_future = channel_->Call(std::move(once));
  ASSERT_EQ(once_future.wait_for(milliseconds(0)), std::future_status::ready);
  EXPECT_EQ(once_future.get().status().code(), absl::StatusCode::kUnavailable);

  absl::StatusOr<Reply> r1 = Wait(late_future);
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r1.status();
  EXPECT_GE(Clock::now() - late_start, milliseconds(100));
  channel_->Cancel(cancelled_id);
  absl::StatusOr<Reply> r2 = Wait(cancelled_future);
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kCancelled) << r2.status();
  absl::StatusOr<Reply> r0 = Wait(pending);
  EXPECT_EQ(r0.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r0.status();
  EXPECT_FALSE(channel_->connected());
  EXPECT_EQ(channel_->counters().reconnects, 0u);
}

// Destroying the Channel stops the reconnect attempts and fails every
// waiting call with UNAVAILABLE before the destructor returns.
TEST_P(ApiTest, ChannelDestroyedWhileReconnecting) {
  Start(ReconnectConfig());
  Prime();
  std::atomic<int> unavailable{0};
  std::atomic<int> other{0};
  auto count = [&](absl::StatusOr<Reply> r) {
    if (r.status().code() == absl::StatusCode::kUnavailable) {
      ++unavailable;
    } else {
      ++other;
    }
  };
  for (uint32_t i = 0; i < 3; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xE201 + i, kHold);
    req.max_reply_size = 64;
    req.retry_on_reconnect = true;
    channel_->Call(std::move(req), count);
  }
  ASSERT_TRUE(WaitHeld(3));
  TakeHeld();
  server_.reset();
  ASSERT_TRUE(WaitDisconnected(*channel_));
  CallRequest req;
  req.xdr = CallHeader(0xE204, kNull);
  req.max_reply_size = 64;
  req.retry_on_reconnect = true;
  channel_->Call(std::move(req), count);
  EXPECT_EQ(unavailable.load(), 0);
  channel_.reset();
  EXPECT_EQ(unavailable.load(), 4);
  EXPECT_EQ(other.load(), 0);
}

// ---- Backchannel (RFC 8167) -------------------------------------------------

TEST_P(ApiTest, Rfc8167_ServerCallsClientInline) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const uint64_t connection = ConnectionId();
  CallRequest req;
  req.xdr = CallHeader(0xB001, kEcho);
  PutOpaque(req.xdr, Pattern(21, 3));
  req.max_reply_size = 256;
  std::vector<uint8_t> sent = req.xdr;
  auto f = server_->Call(connection, std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0xB001);
  PutOpaque(expected, Pattern(21, 3));
  EXPECT_EQ(r->xdr, expected);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(backward_received_.count(0xB001), 1u);
    EXPECT_EQ(backward_received_.at(0xB001).message, sent);
  }
  Counters server = server_->counters();
  Counters client = channel_->counters();
  EXPECT_EQ(server.backward_calls, 1u) << PrintCounters(server);
  EXPECT_EQ(server.backward_replies, 1u);
  EXPECT_EQ(client.backward_calls, 1u) << PrintCounters(client);
  EXPECT_EQ(client.backward_replies, 1u);
  // Backward traffic is not counted as forward calls.
  EXPECT_EQ(server.calls, 1u);
  EXPECT_EQ(client.calls, 1u);
}

// RFC 8167 §4.3: chunks in the backward direction; here a read chunk for a
// large argument and a write chunk for a DDP result.
TEST_P(ApiTest, Rfc8167_4_3_BackwardCallWithReadAndWriteChunks) {
  StartServer(Config());
  ConnectWithBackchannel(Config());
  const uint64_t connection = ConnectionId();

  std::vector<uint8_t> big = Pattern(9000, 7);
  CallRequest echo;
  echo.xdr = CallHeader(0xB101, kEcho);
  Put(echo.xdr, static_cast<uint32_t>(big.size()));
  echo.arguments.push_back({static_cast<uint32_t>(echo.xdr.size()), big});
  echo.max_reply_size = 10000;
  auto f1 = server_->Call(connection, std::move(echo));
  absl::StatusOr<Reply> r1 = Wait(f1);
  ASSERT_TRUE(r1.ok()) << r1.status();
  std::vector<uint8_t> expected = ReplyHeader(0xB101);
  PutOpaque(expected, big);
  EXPECT_EQ(r1->xdr, expected);

  std::vector<uint8_t> result(6000, 0xEE);
  CallRequest ddp;
  ddp.xdr = CallHeader(0xB102, kDdpResult);
  Put(ddp.xdr, 6000);
  Put(ddp.xdr, 11);
  ddp.results.push_back(absl::MakeSpan(result));
  ddp.max_reply_size = 64;
  auto f2 = server_->Call(connection, std::move(ddp));
  absl::StatusOr<Reply> r2 = Wait(f2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  ASSERT_EQ(r2->result_lengths, std::vector<uint32_t>{6000});
  EXPECT_EQ(result, Pattern(6000, 11));

  Counters server = server_->counters();
  EXPECT_EQ(server.backward_calls, 2u) << PrintCounters(server);
  EXPECT_EQ(server.backward_replies, 2u);
}

// RFC 8167 §3.1: the server never has more backward calls outstanding than
// the client's backchannel credits; the rest wait.
TEST_P(ApiTest, Rfc8167_3_1_BackwardCallsStayWithinBackchannelCredits) {
  config::TransportConfig config = Config();
  config.mutable_backchannel()->set_credits(2);
  StartServer(config);
  ConnectWithBackchannel(config);
  const uint64_t connection = ConnectionId();
  // The first backward reply raises the grant from one to two.
  {
    CallRequest req;
    req.xdr = CallHeader(0xB200, kNull);
    req.max_reply_size = 64;
    auto f = server_->Call(connection, std::move(req));
    ASSERT_TRUE(Wait(f).ok());
  }
  std::vector<std::future<absl::StatusOr<Reply>>> futures;
  for (uint32_t i = 0; i < 5; ++i) {
    CallRequest req;
    req.xdr = CallHeader(0xB201 + i, kHold);
    req.max_reply_size = 64;
    futures.push_back(server_->Call(connection, std::move(req)));
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20),
                             [&] { return backward_held_.size() >= 2; }));
  }
  // Give a third call every chance to arrive: it must not.
  std::this_thread::sleep_for(milliseconds(200));
  std::vector<Responder> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(backward_held_.size(), 2u);
  }
  // Answer the held calls as they come until all five are done.
  size_t answered = 0;
  while (answered < 5) {
    std::vector<Responder> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20),
                               [&] { return !backward_held_.empty(); }));
      batch = std::move(backward_held_);
      backward_held_.clear();
    }
    for (Responder& r : batch) {
      ServerReply reply;
      reply.xdr = ReplyHeader(0);  // the XID is the transport's concern
      EXPECT_TRUE(r.Send(std::move(reply)).ok());
      ++answered;
    }
  }
  for (auto& f : futures) EXPECT_TRUE(Wait(f).ok());
  EXPECT_EQ(server_->counters().peak_calls_outstanding, 2u);
  EXPECT_EQ(channel_->counters().backward_calls, 6u);
}

TEST_P(ApiTest,
       Rfc8167_BackwardCallsNeedAnEnabledBackchannelAndALiveConnection) {
  config::TransportConfig off = Config();
  off.mutable_backchannel()->set_enabled(false);
  off.mutable_backchannel()->clear_credits();
  StartServer(off);
  ConnectWithBackchannel(Config());
  const uint64_t connection = ConnectionId();
  CallRequest req;
  req.xdr = CallHeader(0xB301, kNull);
  req.max_reply_size = 64;
  auto f = server_->Call(connection, req);
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition)
      << r.status();

  server_.reset();
  channel_.reset();
  StartServer(Config());
  ConnectWithBackchannel(Config());
  auto g = server_->Call(ConnectionId() + 100, req);
  r = Wait(g);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

// A client without a backward handler drops backward calls (as the Linux
// client does without a backchannel service): the server's call ends at
// its deadline.
TEST_P(ApiTest, Rfc8167_ClientWithoutHandlerDropsBackwardCalls) {
  Start();
  const uint64_t connection = ConnectionId();
  CallRequest req;
  req.xdr = CallHeader(0xB401, kNull);
  req.max_reply_size = 64;
  req.deadline = Clock::now() + milliseconds(300);
  auto f = server_->Call(connection, std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  // The forward direction is unharmed.
  EXPECT_EQ(ConnectionId(), connection);
}

// ---- Connection set-up: RFC 8797 and version negotiation --------------------

TEST_P(ApiTest, Rfc8797_4_2_ConnectionInfoReportsNegotiatedThresholds) {
  config::TransportConfig server = Config();
  server.mutable_inline_threshold()->set_send(8192);
  server.mutable_inline_threshold()->set_receive(2048);
  StartServer(server);
  Connect(Config());
  ConnectionInfo info = channel_->connection_info();
  EXPECT_TRUE(info.peer_private_data);
  EXPECT_EQ(info.peer_send_size, 8192u);
  EXPECT_EQ(info.peer_receive_size, 2048u);
  // Ours are 4096 each: send min(4096, 2048), receive min(4096, 8192).
  EXPECT_EQ(info.send_threshold, 2048u);
  EXPECT_EQ(info.receive_threshold, 4096u);
  EXPECT_EQ(info.offered_version, 1u);
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(info.peer_version_low, 0u);
}

// RFC 8166 §3.4: a chunk is cut into segments no longer than the
// connection's max_segment_size (the device's largest RDMA Read or Write),
// each taking a place in the transport header.
TEST_P(ApiTest, Rfc8166_3_4_ConnectionInfoReportsTheSegmentSize) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.mutable_limits()->set_max_header_segments(2);
  Connect(client);
  const uint32_t segment = channel_->connection_info().max_segment_size;
#ifndef RPCRDMA_API_TEST_VERBS
  EXPECT_EQ(segment, 1u << 30);  // the soft fabric moves up to 2 GiB
#else
  EXPECT_GT(segment, 0u);
#endif
  if (segment > (32u << 20)) return;  // too large to fill here
  // Two segments fit the header, three do not.
  for (size_t size : {size_t{segment} * 2, size_t{segment} * 2 + 1}) {
    std::vector<uint8_t> arg(size, 7);
    CallRequest req;
    req.xdr = CallHeader(static_cast<uint32_t>(0x5200 + size % 2), kEcho);
    Put(req.xdr, static_cast<uint32_t>(size));
    req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
    req.max_reply_size = 64;
    auto f = channel_->Call(std::move(req));
    absl::Status status = Wait(f).status();
    if (size % 2 == 0) {
      EXPECT_NE(status.code(), absl::StatusCode::kResourceExhausted) << status;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    }
  }
}

TEST_P(ApiTest, Rfc8797_5_1_WithoutPrivateDataBothSidesUse1024) {
  config::TransportConfig off = Config();
  off.set_cm_private_data(false);
  StartServer(off);
  Connect(off);
  ConnectionInfo info = channel_->connection_info();
  EXPECT_FALSE(info.peer_private_data);
  EXPECT_EQ(info.send_threshold, 1024u);
  EXPECT_EQ(info.receive_threshold, 1024u);
  EXPECT_FALSE(info.remote_invalidation);
  // A call of 2000 octets no longer fits inline: a read chunk carries it.
  CallRequest req;
  std::vector<uint8_t> arg = Pattern(2000, 9);
  req.xdr = CallHeader(0x5101, kEcho);
  Put(req.xdr, 2000);
  req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
  req.max_reply_size = 4096;
  auto f = channel_->Call(std::move(req));
  ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(channel_->counters().read_chunk_calls, 1u);
}

// draft-cel-nfsv4-rpcrdma-version-two-04 §7.2: our version-one Server
// answers the version-two probe with ERR_VERS 1..1; the client falls back.
TEST_P(ApiTest, V2Draft_7_2_FallbackToVersionOneOnErrVers) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_version_policy(config::TransportConfig::V2_WITH_FALLBACK);
  Connect(client);
  ConnectionInfo info = channel_->connection_info();
  EXPECT_EQ(info.offered_version, 2u);
  EXPECT_EQ(info.version, 1u);
  EXPECT_EQ(info.peer_version_low, 1u);
  EXPECT_EQ(info.peer_version_high, 1u);
  EXPECT_EQ(server_->counters().errors_sent, 1u);
  EXPECT_EQ(channel_->counters().errors_received, 1u);
  Prime();
  EXPECT_EQ(channel_->counters().credits_granted, 32u);
}

TEST_P(ApiTest, V2Draft_7_2_VersionTwoOnlyFailsAgainstVersionOnePeer) {
  StartServer(Config());
  config::TransportConfig client = Config();
  client.set_version_policy(config::TransportConfig::V2);
  auto channel = Channel::Create(server_->uri(), client);
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(channel.status().message()).find("versions 1 to 1"),
            std::string::npos)
      << channel.status();
}

config::TransportConfig Version(config::TransportConfig::VersionPolicy p) {
  config::TransportConfig c = Config();
  c.set_version_policy(p);
  return c;
}

// draft-cel-nfsv4-rpcrdma-version-two-04 end to end: a version-two Server
// answers the probe with its CONNPROP and every chunk form then travels in
// version two (§4.2), forward and backward (RFC 8167 semantics).
TEST_P(ApiTest, V2Draft_4_2_EveryChunkFormInVersionTwo) {
  StartServer(Version(config::TransportConfig::V2));
  ConnectWithBackchannel(Version(config::TransportConfig::V2));
  ConnectionInfo info = channel_->connection_info();
  EXPECT_EQ(info.version, 2u);
  EXPECT_EQ(info.send_threshold, 4096u);  // §2: the server's receives

  // A read chunk, a long call and a write chunk, each echoed back.
  std::vector<uint8_t> arg = Pattern(100000, 3);
  CallRequest read;
  read.xdr = CallHeader(0x7201, kEcho);
  Put(read.xdr, static_cast<uint32_t>(arg.size()));
  read.arguments.push_back({static_cast<uint32_t>(read.xdr.size()), arg});
  read.max_reply_size = 200000;  // a reply chunk for the long reply
  auto f1 = channel_->Call(std::move(read));
  absl::StatusOr<Reply> r1 = Wait(f1);
  ASSERT_TRUE(r1.ok()) << r1.status();
  std::vector<uint8_t> expected = ReplyHeader(0x7201);
  PutOpaque(expected, arg);
  EXPECT_EQ(r1->xdr, expected);

  CallRequest long_call;
  long_call.xdr = CallHeader(0x7202, kNull);
  PutOpaque(long_call.xdr, Pattern(6000, 4));
  long_call.max_reply_size = 64;
  auto f2 = channel_->Call(std::move(long_call));
  ASSERT_TRUE(Wait(f2).ok());

  std::vector<uint8_t> buffer(8192, 0xEE);
  CallRequest write;
  write.xdr = CallHeader(0x7203, kDdpResult);
  Put(write.xdr, 5003);
  Put(write.xdr, 77);
  write.results.push_back(absl::MakeSpan(buffer));
  write.max_reply_size = 256;
  auto f3 = channel_->Call(std::move(write));
  absl::StatusOr<Reply> r3 = Wait(f3);
  ASSERT_TRUE(r3.ok()) << r3.status();
  ASSERT_EQ(r3->result_lengths, std::vector<uint32_t>{5003});
  std::vector<uint8_t> want = Pattern(5003, 77);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin()));

  // A backward call with a read chunk, in version two.
  const uint64_t connection = ConnectionId();
  std::vector<uint8_t> big = Pattern(9000, 7);
  CallRequest back;
  back.xdr = CallHeader(0x7204, kEcho);
  Put(back.xdr, static_cast<uint32_t>(big.size()));
  back.arguments.push_back({static_cast<uint32_t>(back.xdr.size()), big});
  back.max_reply_size = 10000;
  auto f4 = server_->Call(connection, std::move(back));
  ASSERT_TRUE(Wait(f4).ok());

  Counters c = channel_->counters();
  EXPECT_EQ(c.read_chunk_calls, 1u) << PrintCounters(c);
  EXPECT_EQ(c.long_calls, 1u);
  EXPECT_EQ(c.long_replies, 1u);
  EXPECT_EQ(c.write_chunks, 1u);
  EXPECT_EQ(c.errors_received, 0u);
  // §6.2.3: each call with chunks named a handle its responder invalidated:
  // the three forward replies received, the backward reply sent (§3.1).
  EXPECT_EQ(c.remote_invalidations, 4u);
  EXPECT_EQ(server_->counters().backward_calls, 1u);
}

// §7: one V2_WITH_FALLBACK Server serves a version-one and a version-two
// client at once, each in its own version.
TEST_P(ApiTest, V2Draft_7_VersionOneAndTwoClientsOnOneServer) {
  StartServer(Version(config::TransportConfig::V2_WITH_FALLBACK));
  auto v1 = Channel::Create(server_->uri(), Config());
  auto v2 =
      Channel::Create(server_->uri(), Version(config::TransportConfig::V2));
  ASSERT_TRUE(v1.ok()) << v1.status();
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ((*v1)->connection_info().version, 1u);
  EXPECT_EQ((*v2)->connection_info().version, 2u);
  for (auto* ch : {v1->get(), v2->get()}) {
    for (uint32_t i = 0; i < 20; ++i) {
      CallRequest req;
      req.xdr = CallHeader(0x7300 + i, kNull);
      req.max_reply_size = 64;
      auto f = ch->Call(std::move(req));
      ASSERT_TRUE(Wait(f).ok());
    }
  }
}

// §7.2: a version-two-only Server answers a version-one client's calls
// ERR_VERS 2..2, which the caller sees with the range.
TEST_P(ApiTest, V2Draft_7_2_VersionTwoServerRefusesVersionOneClient) {
  StartServer(Version(config::TransportConfig::V2));
  Connect(Config());
  CallRequest req;
  req.xdr = CallHeader(0x7401, kNull);
  req.max_reply_size = 64;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(r.status().message()).find("versions 2 to 2"),
            std::string::npos)
      << r.status();
}

// §5.3: a Channel asks its Server for larger receive buffers on the live
// connection, under load; calls of 10000 octets go inline once granted,
// and none is lost. Beyond what the Server grants, the request is declined.
TEST_P(ApiTest, V2Draft_5_3_ReceiveBufferChangeOnALiveConnection) {
  config::TransportConfig server = Version(config::TransportConfig::V2);
  server.mutable_inline_threshold()->set_receive_grantable(16384);
  StartServer(server);
  config::TransportConfig client = Version(config::TransportConfig::V2);
  client.mutable_inline_threshold()->set_send(32768);
  Connect(client);
  Prime();
  ASSERT_EQ(channel_->connection_info().send_threshold, 4096u);

  auto call_10000 = [this](uint32_t xid) {
    CallRequest req;
    req.xdr = CallHeader(xid, kNull);
    PutOpaque(req.xdr, Pattern(10000, xid));
    req.max_reply_size = 64;
    return channel_->Call(std::move(req));
  };
  // Load while the request travels: every call must complete.
  std::vector<std::future<absl::StatusOr<Reply>>> load;
  for (uint32_t i = 0; i < 16; ++i) load.push_back(call_10000(0x7500 + i));
  EXPECT_TRUE(channel_->RequestPeerReceiveSize(16384).ok());
  for (uint32_t i = 16; i < 32; ++i) load.push_back(call_10000(0x7500 + i));
  for (auto& f : load) ASSERT_TRUE(Wait(f).ok());
  EXPECT_EQ(channel_->connection_info().send_threshold, 16384u);

  const Counters before = channel_->counters();
  auto f = call_10000(0x7600);
  ASSERT_TRUE(Wait(f).ok());
  const Counters after = channel_->counters();
  EXPECT_EQ(after.inline_calls, before.inline_calls + 1);
  EXPECT_EQ(after.long_calls, before.long_calls);

  absl::Status declined = channel_->RequestPeerReceiveSize(32768);
  EXPECT_EQ(declined.code(), absl::StatusCode::kFailedPrecondition) << declined;
  EXPECT_EQ(channel_->connection_info().send_threshold, 16384u);
}

TEST_P(ApiTest, V2Draft_5_3_VersionOneHasNoPropertyChanges) {
  Start();
  absl::Status s = channel_->RequestPeerReceiveSize(16384);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// limits.max_call_size bounds what a responder reassembles (RFC 8166
// §4.5.2: ERR_CHUNK for chunks it cannot accept).
TEST_P(ApiTest, Rfc8166_4_5_2_CallOverMaxCallSizeIsErrChunk) {
  config::TransportConfig server = Config();
  server.mutable_limits()->set_max_call_size(4096);
  StartServer(server);
  Connect(Config());
  std::vector<uint8_t> arg = Pattern(5000, 1);
  CallRequest req;
  req.xdr = CallHeader(0x6101, kEcho);
  Put(req.xdr, 5000);
  req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()), arg});
  req.max_reply_size = 8192;
  auto f = channel_->Call(std::move(req));
  absl::StatusOr<Reply> r = Wait(f);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_EQ(server_->counters().errors_sent, 1u);
}

#ifndef RPCRDMA_API_TEST_VERBS

INSTANTIATE_TEST_SUITE_P(
    Api, ApiTest,
    ::testing::Values(Transport{"SoftUnix", [] { return UniqueUri(); }},
                      Transport{"SoftTcp",
                                [] {
                                  return std::string("soft+tcp://127.0.0.1:0");
                                }}),
    TransportName);

TEST(ApiCreate, RejectsBadUris) {
  config::TransportConfig c;
  auto bad = Channel::Create("tcp://1.2.3.4:5", c);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "uri \"tcp://1.2.3.4:5\": unknown scheme (expected soft+unix://, "
            "soft+tcp:// or rdma://)");
  auto relative = Channel::Create("soft+unix://sock", c);
  EXPECT_EQ(relative.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_port = Server::Create("soft+tcp://127.0.0.1", c, nullptr);
  EXPECT_EQ(no_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_port.status().message(),
            "uri \"soft+tcp://127.0.0.1\": address \"127.0.0.1\": has no "
            "port (expected host:port)");
}

TEST(ApiCreate, RejectsFabricThatContradictsScheme) {
  config::TransportConfig c;
  c.set_fabric(config::TransportConfig::VERBS);
  auto r = Channel::Create("soft+unix://@x", c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "config: fabric: VERBS does not match the uri scheme (SOFT_UNIX)");
}

TEST(ApiCreate, RejectsInvalidConfig) {
  config::TransportConfig c;
  c.mutable_credits()->set_max_requests(0);
  auto r = Channel::Create("soft+unix://@x", c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("credits.max_requests"),
            std::string::npos)
      << r.status();
}

TEST(ApiCreate, NoListenerIsUnavailable) {
  config::TransportConfig c;
  auto r = Channel::Create(UniqueUri(), c);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST(ApiCreate, SoftTcpRoundTrip) {
  config::TransportConfig c;
  auto server = Server::Create("soft+tcp://127.0.0.1:0", c,
                               [](IncomingCall call, Responder r) {
                                 EXPECT_TRUE(r.Send(Answer(call)).ok());
                               });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->uri().rfind("soft+tcp://127.0.0.1:", 0), 0u)
      << (*server)->uri();
  auto channel = Channel::Create((*server)->uri(), c);
  ASSERT_TRUE(channel.ok()) << channel.status();
  CallRequest req;
  req.xdr = CallHeader(0xE001, kEcho);
  Put(req.xdr, 0x01020304);
  req.max_reply_size = 64;
  auto f = (*channel)->Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  absl::StatusOr<Reply> r = f.get();
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> expected = ReplyHeader(0xE001);
  Put(expected, 0x01020304);
  EXPECT_EQ(r->xdr, expected);
  EXPECT_EQ((*server)->connections(), 1u);
}

#else  // RPCRDMA_API_TEST_VERBS

// rdma-cm cannot resolve a route to 127.0.0.1 over Soft-RoCE: server and
// client both use the device's address.
INSTANTIATE_TEST_SUITE_P(Api, ApiTest,
                         ::testing::Values(Transport{
                             "Rdma",
                             [] {
                               return absl::StrCat(
                                   "rdma://", testutil::RdmaTestHost(), ":0");
                             }}),
                         TransportName);

#endif  // RPCRDMA_API_TEST_VERBS

}  // namespace
}  // namespace rpcrdma

#ifdef RPCRDMA_API_TEST_VERBS
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Every test of this file passes on Soft-RoCE (rxe, Linux 6.1) as on
  // hardware: no test is left out for a device deviation.
  if (rpcrdma::testutil::ProbeVerbsDevice().empty()) return 1;
  ::testing::AddGlobalTestEnvironment(new rpcrdma::testutil::RdmaLeakCheck);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
#endif
