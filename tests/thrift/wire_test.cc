// The bridge's wire mapping (bridge/README.md) without a network: the
// Thrift message header read from what each protocol stack writes, the
// thrift_message XDR (RFC 4506) both ways, and how MessageWriter cuts a
// message into inline runs and DDP-eligible bulk items (RFC 8166 §6.1).
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/protocol/THeaderProtocol.h>
#include <thrift/protocol/TJSONProtocol.h>
#include <thrift/protocol/TMultiplexedProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <memory>
#include <string>
#include <vector>

#include "bridge/message_buffers.h"
#include "bridge/wire/thrift_xdr.h"
#include "gtest/gtest.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::thrift {
namespace {

using apache::thrift::protocol::T_CALL;
using apache::thrift::protocol::T_ONEWAY;
using apache::thrift::protocol::TMessageType;
using apache::thrift::protocol::TProtocol;
using apache::thrift::transport::TMemoryBuffer;
using apache::thrift::transport::TTransport;
using internal::MessageReader;
using internal::MessageWriter;
using internal::WriterLimits;
using test::ProtocolKind;
using test::Wrapper;

// The octets a protocol stack writes for one message header.
std::vector<uint8_t> WrittenHeader(ProtocolKind protocol, Wrapper wrapper,
                                   const std::string& name, TMessageType type,
                                   int32_t seqid) {
  auto memory = std::make_shared<TMemoryBuffer>();
  std::shared_ptr<TTransport> transport = test::Wrap(wrapper, memory);
  std::shared_ptr<TProtocol> p = test::MakeProtocol(protocol, transport);
  p->writeMessageBegin(name, type, seqid);
  p->writeStructBegin("args");
  p->writeFieldStop();
  p->writeStructEnd();
  p->writeMessageEnd();
  // THeaderProtocol wraps the transport in a THeaderTransport of its own.
  p->getTransport()->flush();
  uint8_t* data = nullptr;
  uint32_t length = 0;
  memory->getBuffer(&data, &length);
  return std::vector<uint8_t>(data, data + length);
}

TEST(PeekMessageHeader, ReadsEveryProtocolAndWrapper) {
  for (ProtocolKind protocol : {ProtocolKind::kBinary, ProtocolKind::kCompact,
                                ProtocolKind::kJson, ProtocolKind::kHeader}) {
    for (Wrapper wrapper :
         {Wrapper::kPlain, Wrapper::kBuffered, Wrapper::kFramed}) {
      const std::vector<uint8_t> bytes =
          WrittenHeader(protocol, wrapper, "Store:putValue", T_ONEWAY, 77123);
      std::optional<wire::MessageInfo> info = wire::PeekMessageHeader(bytes);
      ASSERT_TRUE(info.has_value())
          << static_cast<int>(protocol) << "/" << static_cast<int>(wrapper);
      EXPECT_EQ(info->name, "Store:putValue");
      EXPECT_EQ(info->seqid, 77123);
      EXPECT_EQ(info->type, wire::kTypeOneway);
    }
  }
}

TEST(PeekMessageHeader, ReadsNonStrictBinaryAndRejectsGarbage) {
  auto memory = std::make_shared<TMemoryBuffer>();
  apache::thrift::protocol::TBinaryProtocol old(memory, 0, 0, false, false);
  old.writeMessageBegin("legacy", T_CALL, -3);
  uint8_t* data = nullptr;
  uint32_t length = 0;
  memory->getBuffer(&data, &length);
  std::optional<wire::MessageInfo> info =
      wire::PeekMessageHeader(absl::MakeConstSpan(data, length));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->name, "legacy");
  EXPECT_EQ(info->seqid, -3);
  EXPECT_EQ(info->type, wire::kTypeCall);

  const std::vector<uint8_t> garbage = {0x80, 0x01, 0x00, 0x09, 0xff,
                                        0xff, 0xff, 0xff, 0x00};
  EXPECT_FALSE(wire::PeekMessageHeader(garbage).has_value());
  EXPECT_FALSE(wire::PeekMessageHeader({}).has_value());
}

TEST(ThriftMessageXdr, EncodesReducedAndDecodesWithChunks) {
  const std::string leading = "head";
  const std::string bulk = test::Pattern(10000, 1);
  const std::string following = "tail!";
  wire::OutgoingMessage out;
  out.info = {"echo", 5, wire::kTypeCall};
  out.leading = absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(leading.data()), leading.size());
  out.bulk.push_back(
      {absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bulk.data()),
                           bulk.size()),
       absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(following.data()),
                           following.size())});
  std::vector<uint8_t> xdr;
  std::vector<uint32_t> positions;
  wire::EncodeMessage(out, xdr, positions);
  ASSERT_EQ(positions.size(), 1u);
  EXPECT_EQ(positions[0] % 4, 0u);
  EXPECT_EQ(xdr.size(), wire::EncodedMessageSize(out, 1));

  // The bulk item comes apart (a write chunk): decoded in order.
  std::vector<absl::Span<const uint8_t>> chunks = {out.bulk[0].data};
  wire::XdrReader in(xdr);
  absl::StatusOr<wire::IncomingMessage> m =
      wire::DecodeMessage(in, chunks, 1 << 20);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->info, out.info);
  EXPECT_EQ(m->size, leading.size() + bulk.size() + following.size());
  std::string joined;
  for (auto piece : m->pieces) joined.append(piece.begin(), piece.end());
  EXPECT_EQ(joined, leading + bulk + following);

  // Over the MaxMessageSize: RESOURCE_EXHAUSTED before anything is read.
  wire::XdrReader again(xdr);
  EXPECT_EQ(wire::DecodeMessage(again, chunks, 1000).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A write chunk whose length disagrees with its length word.
  std::vector<absl::Span<const uint8_t>> short_chunk = {
      out.bulk[0].data.subspan(1)};
  wire::XdrReader wrong(xdr);
  EXPECT_EQ(wire::DecodeMessage(wrong, short_chunk, 1 << 20).status().code(),
            absl::StatusCode::kDataLoss);
  // Truncated anywhere: DATA_LOSS, never a read past the end.
  for (size_t cut = 0; cut < xdr.size(); cut += 3) {
    wire::XdrReader truncated(absl::MakeConstSpan(xdr).subspan(0, cut));
    EXPECT_FALSE(wire::DecodeMessage(truncated, chunks, 1 << 20).ok()) << cut;
  }
}

TEST(PeekCall, NamesTheMethodAndSequenceId) {
  std::vector<uint8_t> call = wire::CallHeader(42, wire::Procedure::kCall);
  wire::XdrWriter(call).Uint32(4000);
  wire::OutgoingMessage m;
  m.info = {"Admin:add", 9, wire::kTypeCall};
  std::vector<uint32_t> positions;
  wire::EncodeMessage(m, call, positions);
  std::optional<wire::CallPeek> peek = wire::PeekCall(call);
  ASSERT_TRUE(peek.has_value());
  EXPECT_EQ(peek->procedure, 1u);
  ASSERT_TRUE(peek->info.has_value());
  EXPECT_EQ(peek->info->name, "Admin:add");
  EXPECT_EQ(peek->info->seqid, 9);
  // Another program is not the bridge's.
  std::vector<uint8_t> other = call;
  other[15] ^= 1;
  EXPECT_FALSE(wire::PeekCall(other).has_value());
}

WriterLimits SmallLimits() {
  WriterLimits l;
  l.bulk_threshold = 1000;
  l.inline_budget = 600;
  l.max_bulk_items = 3;
  l.max_message_size = 1 << 20;
  return l;
}

TEST(MessageWriter, LendsLargeWritesAndCopiesSmallOnes) {
  MessageWriter w;
  w.set_limits(SmallLimits());
  const std::string small = "0123456789";
  const std::string large = test::Pattern(5000, 7);
  ASSERT_TRUE(
      w.Write(reinterpret_cast<const uint8_t*>(small.data()), small.size())
          .ok());
  ASSERT_TRUE(
      w.Write(reinterpret_cast<const uint8_t*>(large.data()), large.size())
          .ok());
  EXPECT_TRUE(w.borrows());
  wire::OutgoingMessage m = w.View();
  ASSERT_EQ(m.bulk.size(), 1u);
  // The caller's own memory, not a copy.
  EXPECT_EQ(m.bulk[0].data.data(),
            reinterpret_cast<const uint8_t*>(large.data()));
  EXPECT_EQ(m.leading.size(), small.size());
}

TEST(MessageWriter, RunsBecomeItemsAndTheLastItemGathersTheRest) {
  MessageWriter w;
  w.set_limits(SmallLimits());
  std::string all;
  for (int i = 0; i < 500; ++i) {
    const std::string piece = test::Pattern(20, static_cast<uint8_t>(i));
    all += piece;
    ASSERT_TRUE(
        w.Write(reinterpret_cast<const uint8_t*>(piece.data()), piece.size())
            .ok());
  }
  EXPECT_FALSE(w.borrows());
  wire::OutgoingMessage m = w.View();
  EXPECT_LE(m.bulk.size(), 3u);
  std::string joined(m.leading.begin(), m.leading.end());
  size_t inline_octets = m.leading.size();
  for (const auto& b : m.bulk) {
    joined.append(b.data.begin(), b.data.end());
    joined.append(b.following.begin(), b.following.end());
    inline_octets += b.following.size();
  }
  EXPECT_EQ(joined, all);
  EXPECT_LE(inline_octets, 600u);
  // The runs outlive the writer's reset.
  std::shared_ptr<void> owned = w.TakeOwned();
  std::string again;
  for (const auto& b : m.bulk) again.append(b.data.begin(), b.data.end());
  EXPECT_FALSE(again.empty());
}

TEST(MessageWriter, RefusesAMessageOverTheLimit) {
  MessageWriter w;
  WriterLimits l = SmallLimits();
  l.max_message_size = 100;
  w.set_limits(l);
  const std::string data(101, 'x');
  absl::Status s =
      w.Write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("MaxMessageSize"), std::string::npos);
  EXPECT_TRUE(w.empty());
}

TEST(MessageReader, ReadsBorrowsAndConsumesAcrossPieces) {
  const std::string a = "abc";
  const std::string b = test::Pattern(100, 2);
  wire::IncomingMessage m;
  m.pieces = {
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(a.data()), a.size()),
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(b.data()),
                          b.size())};
  m.size = a.size() + b.size();
  MessageReader r;
  r.Reset(m, std::make_shared<int>(0));
  uint8_t buf[2];
  EXPECT_EQ(r.Read(buf, 2), 2u);
  uint32_t want = 50;
  EXPECT_EQ(r.Borrow(&want), nullptr);  // crosses into the next piece
  uint8_t one;
  EXPECT_EQ(r.Read(&one, 1), 1u);
  want = 100;
  const uint8_t* p = r.Borrow(&want);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, reinterpret_cast<const uint8_t*>(b.data()));
  EXPECT_TRUE(r.Consume(100));
  EXPECT_TRUE(r.exhausted());
  EXPECT_FALSE(r.Consume(1));
  EXPECT_EQ(r.Read(buf, 2), 0u);
}

}  // namespace
}  // namespace rpcrdma::thrift
