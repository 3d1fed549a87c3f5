// Requester and responder engines connected back to back through a model
// of a reliable connected queue pair (tests/engine/engine_test_util.h):
// every combination of inline, read chunks, long call, write chunks and
// reply chunk goes end to end, and no handle outlives its call.
#include <numeric>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "tests/engine/engine_test_util.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::engine {
namespace {

using test::CallStream;
using test::Loopback;
using test::Words;

Config RequesterConfig(uint32_t credits = 8) {
  Config c;
  c.responder = false;
  c.credits = credits;
  return c;
}
Config ResponderConfig(uint32_t credits = 8) {
  Config c;
  c.requester = false;
  c.credits = credits;
  return c;
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// The full XDR stream: `reduced` with `data` and its roundup at `position`.
std::vector<uint8_t> WithItem(const std::vector<uint8_t>& reduced,
                              size_t position,
                              const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(reduced.begin(), reduced.begin() + position);
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), XdrPad(data.size()), uint8_t{0});
  out.insert(out.end(), reduced.begin() + position, reduced.end());
  return out;
}

uint32_t Proc(const std::vector<uint8_t>& header) {
  return LoadBigEndian32(header.data() + 12);
}

// Sends one call with an argument of `arg_size` octets (at the end of the
// reduced stream, after its length word) and checks what the responder
// receives.
void RoundTripArgument(size_t reduced_size, size_t arg_size,
                       uint32_t expected_proc, size_t expected_reads) {
  Loopback link(RequesterConfig(), ResponderConfig());
  link.Connect();
  std::vector<uint8_t> reduced = CallStream(0x1234, {});
  reduced.resize(reduced_size - 4, 0x11);
  test::AppendWord(reduced, static_cast<uint32_t>(arg_size));
  std::vector<uint8_t> arg = Pattern(arg_size, 3);
  Actions out;
  auto id = link.a.engine.StartCall(
      {reduced,
       {{static_cast<uint32_t>(reduced.size()), absl::MakeSpan(arg)}},
       {},
       200},
      out);
  ASSERT_TRUE(id.ok());
  link.a.Take(out);
  link.Run();
  ASSERT_EQ(link.a.sends.size(), 1u);
  EXPECT_EQ(Proc(link.a.sends[0]), expected_proc);
  EXPECT_EQ(link.a.exposer.windows.size(), expected_reads);
  ASSERT_EQ(link.b.delivered.size(), 1u);
  EXPECT_EQ(link.b.delivered[0].xid, 0x1234u);
  EXPECT_EQ(link.b.delivered[0].message,
            WithItem(reduced, reduced.size(), arg));

  ASSERT_TRUE(link.b
                  .Answer(link.b.delivered[0].call,
                          {Words({0x1234, 1, 0, 0, 0, 0}), {}})
                  .ok());
  link.Run();
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.completed[0].call, *id);
  EXPECT_EQ(link.a.completed[0].reply, Words({0x1234, 1, 0, 0, 0, 0}));
  EXPECT_EQ(link.b.replies_sent.size(), 1u);
  EXPECT_EQ(link.a.exposer.live(), 0u);
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
}

TEST(EngineLoopback, Rfc8166_3_5_1_InlineCallWithSmallArgument) {
  RoundTripArgument(64, 13, /*RDMA_MSG*/ 0, 0);
}

TEST(EngineLoopback, Rfc8166_3_4_5_ArgumentMovedToReadChunk) {
  RoundTripArgument(64, 3001, /*RDMA_MSG*/ 0, 1);
}

TEST(EngineLoopback, Rfc8166_3_5_3_LongCallThroughPositionZero) {
  RoundTripArgument(1200, 3001, /*RDMA_NOMSG*/ 1, 1);
}

TEST(EngineLoopback, Rfc8166_3_4_5_SegmentedChunksReassembled) {
  Config requester = RequesterConfig();
  requester.max_segment_size = 512;
  Loopback link(requester, ResponderConfig());
  link.Connect(/*ord=*/2);
  std::vector<uint8_t> reduced = CallStream(7, {2001});
  std::vector<uint8_t> reduced2 = Words({1999});
  reduced.insert(reduced.end(), reduced2.begin(), reduced2.end());
  std::vector<uint8_t> a = Pattern(2001, 1);
  std::vector<uint8_t> b = Pattern(1999, 2);
  ASSERT_TRUE(link.a
                  .Call({reduced,
                         {{16, absl::MakeSpan(a)}, {20, absl::MakeSpan(b)}},
                         {},
                         100})
                  .ok());
  link.Run();
  // 2001 and 1999 octets in 512-octet segments: 4 + 4 windows.
  EXPECT_EQ(link.a.exposer.windows.size(), 8u);
  ASSERT_EQ(link.b.delivered.size(), 1u);
  EXPECT_EQ(link.b.delivered[0].message,
            WithItem(WithItem(reduced, 20, b), 16, a));
  EXPECT_TRUE(link.errors.empty());
}

TEST(EngineLoopback, Rfc8166_3_5_4_WriteChunksAndReplyChunkTogether) {
  Loopback link(RequesterConfig(), ResponderConfig());
  link.Connect();
  std::vector<uint8_t> result1(100, 0);
  std::vector<uint8_t> result2(50, 0);
  Actions out;
  auto id = link.a.engine.StartCall(
      {CallStream(0x99, {100003, 3, 6}),
       {},
       {absl::MakeSpan(result1), absl::MakeSpan(result2)},
       4000},
      out);
  ASSERT_TRUE(id.ok());
  link.a.Take(out);
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  EXPECT_EQ(link.b.delivered[0].write_chunk_capacities,
            (std::vector<uint64_t>{100, 50}));
  EXPECT_EQ(link.b.delivered[0].reply_chunk_capacity, 4000u);

  std::vector<uint8_t> r1 = Pattern(77, 9);
  std::vector<uint8_t> r2 = Pattern(50, 4);
  std::vector<uint8_t> reply = Words({0x99, 1, 0, 0, 0, 0, 77});
  reply.resize(3000, 0x66);
  test::AppendWord(reply, 50);
  ASSERT_TRUE(
      link.b
          .Answer(link.b.delivered[0].call,
                  {reply,
                   {{28, absl::MakeSpan(r1)},
                    {static_cast<uint32_t>(reply.size()), absl::MakeSpan(r2)}}})
          .ok());
  link.Run();
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(link.a.completed[0].reply, reply);
  EXPECT_EQ(link.a.completed[0].result_lengths,
            (std::vector<uint32_t>{77, 50}));
  EXPECT_EQ(std::vector<uint8_t>(result1.begin(), result1.begin() + 77), r1);
  EXPECT_EQ(result2, r2);
  EXPECT_EQ(Proc(link.b.sends[0]), 1u);  // RDMA_NOMSG reply
  EXPECT_FALSE(link.b.send_invalidates[0].has_value());
  EXPECT_EQ(link.a.exposer.live(), 0u);
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
}

TEST(EngineLoopback, Rfc8797_4_1_SendWithInvalidateReplacesLocalInvalidate) {
  Loopback link(RequesterConfig(), ResponderConfig());
  link.Connect();
  std::vector<uint8_t> result(16, 0);
  ASSERT_TRUE(
      link.a.Call({CallStream(5, {}), {}, {absl::MakeSpan(result)}, 100}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  std::vector<uint8_t> data = Pattern(16, 1);
  ASSERT_TRUE(
      link.b
          .Answer(link.b.delivered[0].call,
                  {Words({5, 1, 0, 0, 0, 0, 16}), {{28, absl::MakeSpan(data)}}})
          .ok());
  link.Run();
  ASSERT_EQ(link.b.send_invalidates.size(), 1u);
  EXPECT_EQ(link.b.send_invalidates[0], std::optional<uint32_t>(0x100));
  ASSERT_EQ(link.a.completed.size(), 1u);
  EXPECT_EQ(result, data);
  // A local invalidate of the remotely invalidated handle would have been
  // recorded as an error by the loopback.
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
  EXPECT_EQ(link.a.exposer.live(), 0u);
}

TEST(EngineLoopback, MemorySafety_LateRdmaWriteAfterCompletionFails) {
  Loopback link(RequesterConfig(), ResponderConfig());
  link.Connect();
  std::vector<uint8_t> result(16, 0);
  ASSERT_TRUE(
      link.a.Call({CallStream(6, {}), {}, {absl::MakeSpan(result)}, 100}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  // The responder replies without using the write chunk; afterwards a
  // misbehaving peer tries to write through the handle it was given.
  ASSERT_TRUE(
      link.b.Answer(link.b.delivered[0].call, {Words({6, 1, 0, 0, 0, 0}), {}})
          .ok());
  link.Run();
  ASSERT_EQ(link.a.completed.size(), 1u);
  auto late =
      link.a.exposer.Access({0x100, 4, uint64_t{0x100} << 32}, kRemoteWrite);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(EngineLoopback, Rfc8166_3_3_1_RequesterNeverExceedsResponderGrant) {
  Loopback link(RequesterConfig(8), ResponderConfig(2));
  link.check_live = false;
  link.Connect();
  Actions out;
  for (uint32_t xid = 1; xid <= 6; ++xid) {
    ASSERT_TRUE(
        link.a.engine.StartCall({CallStream(xid, {}), {}, {}, 100}, out).ok());
  }
  link.a.Take(out);
  size_t answered = 0;
  uint32_t max_outstanding = 0;
  for (int round = 0; round < 20 && link.a.completed.size() < 6; ++round) {
    link.Run();
    max_outstanding =
        std::max(max_outstanding, link.a.engine.calls_outstanding());
    EXPECT_LE(link.b.delivered.size() - answered, 2u);
    for (; answered < link.b.delivered.size(); ++answered) {
      const DeliverCall& d = link.b.delivered[answered];
      ASSERT_TRUE(
          link.b.engine.Reply(d.call, {Words({d.xid, 1, 0, 0, 0, 0}), {}}, out)
              .ok());
    }
    link.b.Take(out);
  }
  EXPECT_EQ(link.a.completed.size(), 6u);
  EXPECT_EQ(max_outstanding, 2u);
  EXPECT_EQ(link.a.engine.credit_grant(), 2u);
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
}

TEST(EngineLoopback, Rfc8166_4_5_2_ErrChunkEndToEndInvalidatesAndFails) {
  Loopback link(RequesterConfig(), ResponderConfig());
  link.Connect();
  std::vector<uint8_t> result(4, 0);
  ASSERT_TRUE(
      link.a.Call({CallStream(8, {}), {}, {absl::MakeSpan(result)}, 100}).ok());
  link.Run();
  ASSERT_EQ(link.b.delivered.size(), 1u);
  std::vector<uint8_t> big = Pattern(9, 0);
  ASSERT_TRUE(
      link.b
          .Answer(link.b.delivered[0].call,
                  {Words({8, 1, 0, 0, 0, 0, 9}), {{28, absl::MakeSpan(big)}}})
          .ok());
  link.Run();
  ASSERT_EQ(link.a.failed.size(), 1u);
  EXPECT_EQ(link.a.failed[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(link.a.exposer.live(), 0u);
  EXPECT_TRUE(link.errors.empty()) << link.errors[0];
}

}  // namespace
}  // namespace rpcrdma::engine
