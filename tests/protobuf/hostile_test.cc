// A hostile caller against the protobuf services (protobuf/README.md,
// "Call and reply bodies"): calls written by hand on a raw rpcrdma::Channel
// with bad bulk paths, lengths and counts are answered INVALID_ARGUMENT saying
// what was wrong, and the server goes on serving.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/raw_peer.h"

namespace rpcrdma::test {

using protobuf::Channel;
using protobuf::ClientContext;

namespace {

using ::testing::HasSubstr;

struct Case {
  const char* name;
  // Writes the call body after the RFC 5531 header.
  void (*body)(XdrWriter& w);
  const char* expected;
};

void NoMetadata(XdrWriter& w) {
  (void)w.WriteUint32("timeout", 0);
  (void)w.WriteUint32("metadata count", 0);
}

void EmptyMessage(XdrWriter& w) {
  NoMetadata(w);
  (void)w.WriteUint32("message length", 0);
}

void OneBulk(XdrWriter& w, uint32_t field, uint32_t index) {
  EmptyMessage(w);
  (void)w.WriteUint32("bulk count", 1);
  (void)w.WriteUint32("steps", 1);
  (void)w.WriteUint32("field", field);
  (void)w.WriteUint32("index", index);
  const std::vector<uint8_t> value(8, 7);
  (void)w.WriteVarOpaque("value", value);
}

const Case kCases[] = {
    {"UnknownField", [](XdrWriter& w) { OneBulk(w, 999, 0); }, "no such field"},
    {"HugeFieldNumber", [](XdrWriter& w) { OneBulk(w, 0xffffffff, 0); },
     "no such field"},
    {"NotBytes", [](XdrWriter& w) { OneBulk(w, 6, 0); }, "not a bytes field"},
    {"IndexPastEnd", [](XdrWriter& w) { OneBulk(w, 11, 5); },
     "index past the field's 0 elements"},
    {"IndexOfSingular", [](XdrWriter& w) { OneBulk(w, 8, 1); },
     "index of a singular field"},
    {"UnsetNestedMessage",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 1);
       (void)w.WriteUint32("steps", 2);
       for (uint32_t v : {9u, 0u, 1u, 0u}) (void)w.WriteUint32("step", v);
       (void)w.WriteUint32("length", 0);
     },
     "field not set"},
    {"OversizedLengthClaim",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 1);
       (void)w.WriteUint32("steps", 1);
       (void)w.WriteUint32("field", 8);
       (void)w.WriteUint32("index", 0);
       (void)w.WriteUint32("length", 0x7ffffff0);
       (void)w.WriteUint32("a little", 0);
     },
     "bulk value"},
    {"TooManySteps",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 1);
       (void)w.WriteUint32("steps", 1000000);
       (void)w.WriteUint64("room for the bulk count", 0);
     },
     "path of 1000000 steps"},
    {"HugeBulkCount",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 0xffffffff);
     },
     "bulk count 4294967295"},
    {"HugeMetadataCount",
     [](XdrWriter& w) {
       (void)w.WriteUint32("timeout", 0);
       (void)w.WriteUint32("metadata count", 0xffffffff);
     },
     "metadata count 4294967295"},
    {"MessageDoesNotParse",
     [](XdrWriter& w) {
       NoMetadata(w);
       const std::vector<uint8_t> garbage = {0xff, 0xff, 0xff, 0xff, 0xff};
       (void)w.WriteVarOpaque("message", garbage);
       (void)w.WriteUint32("bulk count", 0);
     },
     "does not parse as rpcrdma_test.EchoRequest"},
    {"SameFieldTwice",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 2);
       for (int i = 0; i < 2; ++i) {
         (void)w.WriteUint32("steps", 1);
         (void)w.WriteUint32("field", 8);
         (void)w.WriteUint32("index", 0);
         (void)w.WriteVarOpaque("value", std::vector<uint8_t>(4, 1));
       }
     },
     "already holds octets"},
    {"TrailingOctets",
     [](XdrWriter& w) {
       EmptyMessage(w);
       (void)w.WriteUint32("bulk count", 0);
       (void)w.WriteUint32("extra", 0);
     },
     "octets follow the payload"},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// A raw call of rpcrdma_test.Echo's `procedure`: its RFC 5531 header, the
// body for the test to write after it.
CallRequest EchoCall(uint32_t xid, uint32_t procedure) {
  return RawServiceCall("rpcrdma_test.Echo", xid, procedure);
}

// The status a reply body opens with (protobuf/README.md, "Call and reply
// bodies"), after an accepted RFC 5531 reply header.
struct BodyStatus {
  uint32_t code = ~0u;
  std::string message;
};

absl::StatusOr<BodyStatus> StatusOfReply(const Reply& reply) {
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply.xdr.span());
  if (!decoded.ok()) return decoded.status();
  if (absl::Status s = ReplyStatus(decoded->header); !s.ok()) return s;
  XdrReader in(reply.xdr.span().subspan(decoded->body_offset));
  BodyStatus status;
  if (absl::Status s = in.ReadUint32("code", &status.code); !s.ok()) return s;
  if (absl::Status s = in.ReadString("message", 65536, &status.message);
      !s.ok()) {
    return s;
  }
  return status;
}

class HostileTest : public ::testing::TestWithParam<Case> {};

TEST_P(HostileTest, Rfc8166_6_MalformedCallIsRefusedAndServerServesOn) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  CallRequest call = EchoCall(77, 1);  // Echo
  XdrWriter w(&call.xdr);
  GetParam().body(w);
  absl::StatusOr<Reply> reply = peer.raw->BlockingCall(std::move(call));
  ASSERT_TRUE(reply.ok()) << reply.status();
  absl::StatusOr<BodyStatus> status = StatusOfReply(*reply);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->code,
            static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(status->message, HasSubstr(GetParam().expected));
  EXPECT_THAT(status->message,
              HasSubstr("rpcrdma_test.Echo.Echo is malformed"));

  // The server still serves a well-formed call.
  absl::StatusOr<std::shared_ptr<Channel>> channel =
      Channel::Create(peer.server->server->uri());
  ASSERT_TRUE(channel.ok());
  rpcrdma_test::rdma::Echo::Stub stub(*channel);
  rpcrdma_test::EchoRequest request;
  request.set_text("still here");
  rpcrdma_test::EchoRequest response;
  ClientContext context;
  ASSERT_TRUE(stub.Echo(&context, request, &response).ok());
  EXPECT_EQ(response.text(), "still here");
}

// A call may carry a bulk value for every entry of a map. Each value's
// path names its entry by key rank, so the receiver needs the map's key
// order: computed once per map, restoring 20,000 values into a map of
// 20,000 entries (a call of about 1 MiB) takes a moment; sorted again for
// each value it took minutes of the handler thread, past any deadline.
TEST(HostileBulkTest, Rfc8166_6_ValuesForEveryEntryOfALargeMapSortItOnce) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  constexpr uint32_t kEntries = 20000;
  rpcrdma_test::EchoRequest request;
  for (uint32_t i = 0; i < kEntries; ++i) {
    (*request.mutable_by_id())[static_cast<int32_t>(i)];
  }
  const std::string message = request.SerializeAsString();
  CallRequest call = EchoCall(78, 1);  // Echo
  XdrWriter w(&call.xdr);
  NoMetadata(w);
  (void)w.WriteVarOpaque(
      "message",
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(message.data()),
                          message.size()));
  (void)w.WriteUint32("bulk count", kEntries);
  const std::vector<uint8_t> value(4, 7);
  for (uint32_t rank = 0; rank < kEntries; ++rank) {
    (void)w.WriteUint32("steps", 3);
    // by_id's entry of that rank, its value (an Inner), its payload.
    for (uint32_t v : {13u, rank, 2u, 0u, 1u, 0u}) {
      (void)w.WriteUint32("step", v);
    }
    (void)w.WriteVarOpaque("value", value);
  }
  call.max_reply_size = 4u << 20;
  call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  absl::StatusOr<Reply> reply = peer.raw->BlockingCall(std::move(call));
  ASSERT_TRUE(reply.ok()) << reply.status();
  absl::StatusOr<BodyStatus> status = StatusOfReply(*reply);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->code, 0u) << status->message;
}

// A procedure no method has, and one past the stream control procedures:
// PROC_UNAVAIL (RFC 5531 §9). (Upload, Watch and Chat, procedures 4 to 6,
// open streams.)
TEST(HostileStreamingTest, Rfc5531_9_UnservedProcedureIsProcUnavail) {
  RawPeer peer = StartRawPeer();
  ASSERT_NE(peer.raw, nullptr);
  for (uint32_t procedure : {99u, protobuf::kStreamHalfCloseProcedure + 1}) {
    CallRequest call = EchoCall(100 + procedure, procedure);
    XdrWriter w(&call.xdr);
    EmptyMessage(w);
    (void)w.WriteUint32("bulk count", 0);
    absl::StatusOr<Reply> reply = peer.raw->BlockingCall(std::move(call));
    ASSERT_TRUE(reply.ok()) << reply.status();
    absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply->xdr.span());
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->header.accept_stat, AcceptStat::kProcUnavail)
        << procedure;
  }
}

INSTANTIATE_TEST_SUITE_P(BadCalls, HostileTest, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace rpcrdma::test
