// A hostile server's replies to a call offering write chunks
// (protobuf/README.md, "Replies"; RFC 8166 §3.4.7): a bulk value whose
// length word disagrees with what was written into its chunk, and a chunk
// written beyond the reply's values, are INTERNAL errors naming the
// chunk; nothing lands past the caller's memory.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "protobuf/runtime/server_call.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"
#include "tests/protobuf/echo_service.h"
#include "tests/protobuf/placement_service.h"

namespace rpcrdma::test {
namespace {

using protobuf::ClientContext;
using protobuf::Status;

constexpr uint32_t kDataField = rpcrdma_test::BlobReply::kDataFieldNumber;

// A server answering every call with one OK reply whose payload has one
// bulk value of field `data`: its length word says `claimed`, and
// `written` holds the items given to the transport (write chunk i takes
// item i).
class LyingServer {
 public:
  LyingServer(uint32_t claimed, std::vector<std::vector<uint8_t>> written)
      : claimed_(claimed), written_(std::move(written)) {}

  bool Start() {
    absl::StatusOr<std::unique_ptr<::rpcrdma::Server>> server =
        ::rpcrdma::Server::Create(
            TestUri("unix"), {},
            [this](IncomingCall call, Responder responder) {
              Answer(call.xid, std::move(responder));
            });
    if (!server.ok()) return false;
    server_ = *std::move(server);
    return true;
  }
  std::string uri() const { return server_->uri(); }

 private:
  void Answer(uint32_t xid, Responder responder) {
    std::vector<uint8_t> xdr =
        protobuf::AcceptedHeader(xid, AcceptStat::kSuccess);
    protobuf::AppendStatus(absl::OkStatus(), {}, xdr);
    XdrWriter w(&xdr);
    (void)w.WriteUint32("message length", 0);
    (void)w.WriteUint32("bulk count", 1);
    (void)w.WriteUint32("path steps", 1);
    (void)w.WriteUint32("path field", kDataField);
    (void)w.WriteUint32("path index", 0);
    (void)w.WriteUint32("bulk length", claimed_);
    std::vector<ReplyItem> items;
    for (const std::vector<uint8_t>& octets : written_) {
      items.push_back(
          ReplyItem::Owned(static_cast<uint32_t>(xdr.size()), octets));
    }
    (void)responder.Send(HandlerReply(std::move(xdr), std::move(items)));
  }

  uint32_t claimed_;
  std::vector<std::vector<uint8_t>> written_;
  std::unique_ptr<::rpcrdma::Server> server_;
};

Status FetchFrom(LyingServer& server, ClientContext& context,
                 rpcrdma_test::BlobReply& reply) {
  absl::StatusOr<std::shared_ptr<protobuf::Channel>> channel =
      protobuf::Channel::Create(server.uri(), TestChannelOptions());
  if (!channel.ok()) return channel.status();
  rpcrdma_test::rdma::Placement::Stub stub(*channel);
  return stub.Fetch(&context, rpcrdma_test::BlobRequest(), &reply);
}

// The length word claims more than the chunk got: the receiver must not
// take the rest of the caller's memory as the value.
TEST(ReplyChunksHostileTest, Rfc8166_3_4_7_LengthWordBeyondWrittenIsInternal) {
  LyingServer server(/*claimed=*/100, {std::vector<uint8_t>(50, 0x5a)});
  ASSERT_TRUE(server.Start());
  std::vector<uint8_t> memory(256, 0xee);
  ClientContext context;
  context.ReceiveBulkInto(static_cast<int>(kDataField),
                          absl::MakeSpan(memory).subspan(0, 128));
  rpcrdma_test::BlobReply reply;
  Status s = FetchFrom(server, context, reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("claims 100 octets"), absl::string_view::npos)
      << s;
  EXPECT_EQ(context.bulk_received(static_cast<int>(kDataField)), std::nullopt);
  for (size_t i = 128; i < memory.size(); ++i) {
    ASSERT_EQ(memory[i], 0xee) << i;
  }
}

// The option's chunk (16 MiB, the client's own buffer): a length word
// that says less than was written is as wrong.
TEST(ReplyChunksHostileTest, Rfc8166_3_4_7_LengthWordShortOfWrittenIsInternal) {
  LyingServer server(/*claimed=*/10, {std::vector<uint8_t>(50, 0x5a)});
  ASSERT_TRUE(server.Start());
  ClientContext context;
  rpcrdma_test::BlobReply reply;
  Status s = FetchFrom(server, context, reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_TRUE(reply.data().empty());
}

// A second chunk written though the reply has one value.
TEST(ReplyChunksHostileTest, Rfc8166_3_4_7_ChunkWrittenBeyondValuesIsInternal) {
  LyingServer server(/*claimed=*/50, {std::vector<uint8_t>(50, 0x5a),
                                      std::vector<uint8_t>(20, 0x33)});
  ASSERT_TRUE(server.Start());
  ClientContext context;
  context.set_reply_bulk_sizes({1024, 1024});
  rpcrdma_test::BlobReply reply;
  Status s = FetchFrom(server, context, reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("write chunk 1"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace rpcrdma::test
