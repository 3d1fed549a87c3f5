// The fixture of the end-to-end tests of rpcrdma::Channel and
// rpcrdma::Server (api_test.cc, api_lifecycle_test.cc,
// api_connection_test.cc): a test program's procedures, the server that
// answers them, and the XDR helpers the tests build calls with. The same
// tests run over every transport of the public API: built natively
// (api_test) over the soft fabric on Unix-domain abstract sockets and on
// TCP; built with RPCRDMA_API_TEST_VERBS (api_verbs_test) over rdma:// on a
// real RDMA device, in the Soft-RoCE VM (interop/vm) at $RPCRDMA_TEST_ADDR.
#ifndef RPCRDMA_TESTS_API_API_FIXTURE_H_
#define RPCRDMA_TESTS_API_API_FIXTURE_H_

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
#include "rpcrdma/xdr.h"
#include "tests/api/call_stream.h"
#include "tests/testing/byte_vectors.h"
#include "tests/testing/process_tag.h"
#ifdef RPCRDMA_API_TEST_VERBS
#include "tests/testing/rdma_vm.h"
#endif

namespace rpcrdma::test {

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
constexpr uint32_t kDrop = 7;        // the handler drops its Responder

inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
  }
  return v;
}

// RFC 5531 call header with AUTH_NONE credential and verifier: 40 octets.
inline std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t proc) {
  std::vector<uint8_t> out;
  for (uint32_t w : {xid, 0u, 2u, kProg, 1u, proc, 0u, 0u, 0u, 0u}) {
    AppendWord(out, w);
  }
  return out;
}
constexpr size_t kCallHeaderSize = 40;

// RFC 5531 accepted, successful reply header (call_stream.h ReplyHeader):
// 24 octets.
constexpr uint32_t kReplyHeaderSize = 24;

// opaque<> inline: length, data, roundup (RFC 4506 §4.10). Appending to
// a vector, the write cannot fail.
inline void PutOpaque(std::vector<uint8_t>& out,
                      const std::vector<uint8_t>& data) {
  (void)XdrWriter(&out).WriteVarOpaque("opaque", data);
}

// What the server answers to each procedure.
inline HandlerReply Answer(const IncomingCall& call) {
  absl::Span<const uint8_t> m = call.message;
  uint32_t proc = LoadBigEndian32(m.data() + 20);
  HandlerReply reply;
  reply.xdr = ReplyHeader(call.xid);
  switch (proc) {
    case kEcho:
    case kEchoLater:
      reply.xdr.insert(reply.xdr.end(), m.begin() + kCallHeaderSize, m.end());
      break;
    case kDdpResult:
    case kDdpAndBulk: {
      uint32_t n = LoadBigEndian32(m.data() + kCallHeaderSize);
      uint32_t seed = LoadBigEndian32(m.data() + kCallHeaderSize + 4);
      AppendWord(reply.xdr, n);
      reply.results.push_back({kReplyHeaderSize + 4, Pattern(n, seed)});
      if (proc == kDdpAndBulk) {
        uint32_t bulk = LoadBigEndian32(m.data() + kCallHeaderSize + 8);
        PutOpaque(reply.xdr, Pattern(bulk, seed + 1));
      }
      break;
    }
    case kBulk:
      PutOpaque(reply.xdr,
                Pattern(LoadBigEndian32(m.data() + kCallHeaderSize),
                        LoadBigEndian32(m.data() + kCallHeaderSize + 4)));
      break;
    default:
      break;
  }
  return reply;
}

// A fresh abstract Unix socket name (the native binary only).
inline std::string UniqueUri() {
  static std::atomic<int> counter{0};
  return absl::StrCat("soft+unix://@rpcrdma-api-test-",
                      ::rpcrdma::test::ProcessTag(), "-", counter++);
}

// A transport the tests run over: its name (the test name's suffix) and
// the URI a Server listens on (a port of 0 picks one; Server::uri() names
// the port chosen).
struct Transport {
  std::string name;
  std::function<std::string()> listen_uri;
};

inline void PrintTo(const Transport& transport, std::ostream* os) {
  *os << transport.name;
}

inline std::string TransportName(
    const ::testing::TestParamInfo<Transport>& info) {
  return info.param.name;
}

inline std::string PrintCounters(const Counters& c) {
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
inline Counters SameTraffic(Counters c) {
  c.peak_calls_outstanding = 0;
  return c;
}

inline config::TransportConfig Config(uint32_t credits = 32) {
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
          uint32_t proc = LoadBigEndian32(call.message.data() + 20);
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
          } else if (proc == kDrop) {
            --in_flight_;  // unanswered: the transport answers SYSTEM_ERR
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
  // forward ones; kHold calls are kept in backward_held_, kDrop calls'
  // Responders dropped.
  void ConnectWithBackchannel(const config::TransportConfig& config) {
    auto channel = Channel::Create(
        server_->uri(), config, [this](IncomingCall call, Responder r) {
          std::lock_guard<std::mutex> lock(mu_);
          backward_received_[call.xid] = call;
          const uint32_t proc = LoadBigEndian32(call.message.data() + 20);
          if (proc == kHold) {
            backward_held_.push_back(std::move(r));
            cv_.notify_all();
            return;
          }
          if (proc == kDrop) return;
          EXPECT_TRUE(r.Send(Answer(call)).ok());
        });
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
  }

  // The Server's id of the Channel's connection, learned from one call.
  ConnectionId ServerSideConnection() {
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

  // Makes `count` calls the server holds (kHold), XIDs from `first_xid`
  // on, and waits until the server holds them all.
  std::vector<std::future<absl::StatusOr<Reply>>> CallHeld(uint32_t first_xid,
                                                           uint32_t count) {
    size_t held_before = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_before = held_.size();
    }
    std::vector<std::future<absl::StatusOr<Reply>>> futures;
    for (uint32_t i = 0; i < count; ++i) {
      CallRequest req;
      req.xdr = CallHeader(first_xid + i, kHold);
      req.max_reply_size = 64;
      futures.push_back(channel_->Call(std::move(req)));
    }
    EXPECT_TRUE(WaitHeld(held_before + count))
        << "the server did not hold all " << count << " calls";
    return futures;
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

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_API_API_FIXTURE_H_
