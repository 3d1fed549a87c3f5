// Latency histograms (rpcrdma/metrics.h): the bucket arithmetic, and
// Channel::metrics() / Server::metrics() after real calls over the soft
// fabric — forward call RTT at the Channel, call-to-reply time at the
// Server, and both directions of an RFC 8167 backward call.
#include "rpcrdma/metrics.h"

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"

namespace rpcrdma {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(LatencyHistogram, BucketsArePowersOfTwoMicroseconds) {
  EXPECT_EQ(LatencyHistogram::BucketOf(nanoseconds(0)), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(nanoseconds(1000)), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(nanoseconds(1001)), 1u);
  EXPECT_EQ(LatencyHistogram::BucketOf(microseconds(2)), 1u);
  EXPECT_EQ(LatencyHistogram::BucketOf(nanoseconds(2001)), 2u);
  EXPECT_EQ(LatencyHistogram::BucketOf(microseconds(1024)), 10u);
  EXPECT_EQ(LatencyHistogram::BucketOf(microseconds(1025)), 11u);
  EXPECT_EQ(LatencyHistogram::BucketOf(std::chrono::hours(1)),
            LatencyHistogram::kFiniteBuckets);
  EXPECT_EQ(LatencyHistogram::UpperBound(0), microseconds(1));
  EXPECT_EQ(LatencyHistogram::UpperBound(10), microseconds(1024));
  EXPECT_EQ(LatencyHistogram::UpperBound(LatencyHistogram::kFiniteBuckets),
            nanoseconds::max());
}

TEST(LatencyHistogram, CountSumAndPercentiles) {
  LatencyHistogram h;
  EXPECT_EQ(h.Percentile(0.5), nanoseconds(0));
  for (int i = 0; i < 90; ++i) h.Record(microseconds(3));    // bucket 2 (4 µs)
  for (int i = 0; i < 10; ++i) h.Record(microseconds(100));  // bucket 7
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.sum(), microseconds(90 * 3 + 10 * 100));
  EXPECT_EQ(h.buckets()[2], 90u);
  EXPECT_EQ(h.buckets()[7], 10u);
  EXPECT_EQ(h.Percentile(0.5), microseconds(4));
  EXPECT_EQ(h.Percentile(0.9), microseconds(4));
  EXPECT_EQ(h.Percentile(0.91), microseconds(128));
  EXPECT_EQ(h.Percentile(1.0), microseconds(128));
  LatencyHistogram twice = h;
  twice += h;
  EXPECT_EQ(twice.count(), 200u);
  EXPECT_EQ(twice.buckets()[7], 20u);
}

HandlerReply EchoXid(const IncomingCall& call) {
  HandlerReply reply;
  reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
  return reply;
}

std::vector<uint8_t> CallStream(uint32_t xid) {
  return test::MinimalCallStream(xid);
}

TEST(ApiMetrics, ChannelAndServerHistogramsCountEveryCall) {
  config::TransportConfig config;
  auto server = Server::Create("soft+tcp://127.0.0.1:0", config,
                               [](IncomingCall call, Responder r) {
                                 // Long enough that every sample leaves the
                                 // first bucket.
                                 std::this_thread::sleep_for(microseconds(200));
                                 (void)r.Send(EchoXid(call));
                               });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create(
      (*server)->uri(), config,
      [](IncomingCall call, Responder r) { (void)r.Send(EchoXid(call)); });
  ASSERT_TRUE(channel.ok()) << channel.status();
  constexpr uint32_t kCalls = 20;
  for (uint32_t i = 1; i <= kCalls; ++i) {
    CallRequest req;
    req.xdr = CallStream(i);
    req.max_reply_size = 64;
    auto f = (*channel)->Call(std::move(req));
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_TRUE(f.get().ok());
  }
  // A backward call (RFC 8167) from the server to the channel.
  const ConnectionId connection =
      (*server)->metrics().connections.at(0).connection;
  CallRequest back;
  back.xdr = CallStream(0xBAC);
  back.max_reply_size = 64;
  auto b = (*server)->Call(connection, std::move(back));
  ASSERT_EQ(b.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_TRUE(b.get().ok());

  const Metrics cm = (*channel)->metrics();
  EXPECT_EQ(cm.counters, (*channel)->counters());
  EXPECT_EQ(cm.counters.calls, kCalls);
  ASSERT_EQ(cm.connections.size(), 1u);
  const ConnectionMetrics& c = cm.connections[0];
  EXPECT_EQ(c.connection, ConnectionId(1));
  EXPECT_EQ(c.counters.calls, kCalls);
  EXPECT_EQ(c.call_rtt.count(), kCalls);
  EXPECT_GE(c.call_rtt.sum(), microseconds(200 * kCalls));
  EXPECT_EQ(c.call_rtt.buckets()[0], 0u);
  EXPECT_GE(c.call_rtt.Percentile(0.5), microseconds(256));
  // The reply to the backward call is recorded once its Send completed.
  for (int i = 0;
       i < 1000 && (*channel)->metrics().connections[0].reply_time.count() == 0;
       ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_EQ((*channel)->metrics().connections[0].reply_time.count(), 1u);

  Metrics sm = (*server)->metrics();
  for (int i = 0; i < 1000 && sm.connections.at(0).reply_time.count() < kCalls;
       ++i) {
    std::this_thread::sleep_for(milliseconds(2));
    sm = (*server)->metrics();
  }
  EXPECT_EQ(sm.counters.calls, kCalls);
  EXPECT_EQ(sm.counters.backward_calls, 1u);
  ASSERT_EQ(sm.connections.size(), 1u);
  const ConnectionMetrics& s = sm.connections[0];
  EXPECT_EQ(s.connection, connection);
  EXPECT_EQ(s.reply_time.count(), kCalls);
  EXPECT_GE(s.reply_time.sum(), microseconds(200 * kCalls));
  EXPECT_EQ(s.call_rtt.count(), 1u);  // the backward call
}

TEST(ApiMetrics, FailedCallsAreNotRecorded) {
  config::TransportConfig config;
  // Kept unanswered until the server is gone (one dropped is answered).
  std::mutex parked_mu;
  std::vector<Responder> parked;
  auto server = Server::Create("soft+tcp://127.0.0.1:0", config,
                               [&](IncomingCall, Responder responder) {
                                 std::lock_guard<std::mutex> lock(parked_mu);
                                 parked.push_back(std::move(responder));
                               });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  CallRequest req;
  req.xdr = CallStream(7);
  req.max_reply_size = 64;
  req.deadline = std::chrono::steady_clock::now() + milliseconds(50);
  auto f = (*channel)->Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(f.get().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*channel)->metrics().connections.at(0).call_rtt.count(), 0u);
}

}  // namespace
}  // namespace rpcrdma
