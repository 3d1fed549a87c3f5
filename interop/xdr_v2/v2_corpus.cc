#include "interop/xdr_v2/v2_corpus.h"

#include <utility>

#include "rpcrdma/xdr.h"

namespace rpcrdma::test {
namespace {

using wire::MsgDirection;
using wire::PropVal;
using wire::ReadSegment;
using wire::Segment;
using wire::V2ChunkLists;
using wire::V2ErrorCode;
using wire::V2Header;

// NFS (RFC 1813): Wireshark's RPC dissector decodes only programs it knows.
constexpr uint32_t kProgram = 100003;
constexpr uint32_t kCredits = 32;

// RFC 5531 §9 call: xid, CALL, rpcvers 2, NFSv3 NULL (the one procedure
// whose arguments Wireshark does not parse), AUTH_NONE credential and
// verifier, then `args` octets.
std::vector<uint8_t> RpcCall(uint32_t xid, size_t args) {
  std::vector<uint8_t> m(40 + args);
  const uint32_t words[] = {xid, 0, 2, kProgram, 3, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) StoreBigEndian32(&m[4 * i], words[i]);
  for (size_t i = 0; i < args; ++i) m[40 + i] = static_cast<uint8_t>(i * 5);
  return m;
}

// Accepted, successful reply: xid, REPLY, MSG_ACCEPTED, AUTH_NONE
// verifier, SUCCESS, then `results` octets.
std::vector<uint8_t> RpcReply(uint32_t xid, size_t results) {
  std::vector<uint8_t> m(24 + results);
  const uint32_t words[] = {xid, 1, 0, 0, 0, 0};
  for (size_t i = 0; i < 6; ++i) StoreBigEndian32(&m[4 * i], words[i]);
  for (size_t i = 0; i < results; ++i) m[24 + i] = static_cast<uint8_t>(i);
  return m;
}

V2ChunkLists Lists(MsgDirection direction, uint32_t inv_handle,
                   wire::ChunkLists lists) {
  return V2ChunkLists{direction, inv_handle, std::move(lists)};
}

PropVal Raw(uint32_t which, std::vector<uint8_t> data) {
  return PropVal{which, std::move(data)};
}

V2Header Header(uint32_t xid, wire::V2Body body) {
  return V2Header{xid, wire::kRpcRdmaVersion2, kCredits, std::move(body)};
}

wire::V2Error Error(V2ErrorCode code) {
  wire::V2Error e;
  e.code = code;
  return e;
}

}  // namespace

std::vector<uint8_t> V2CorpusMessage::Encode() const {
  std::vector<uint8_t> m = wire::EncodeV2(header);
  m.insert(m.end(), rpc.begin(), rpc.end());
  return m;
}

std::vector<V2CorpusMessage> V2Corpus() {
  using pcap::Direction;
  std::vector<V2CorpusMessage> c;
  auto add = [&c](std::string name, Direction d, V2Header h,
                  std::vector<uint8_t> rpc = {},
                  std::optional<uint32_t> inv = std::nullopt) {
    c.push_back(
        V2CorpusMessage{std::move(name), d, std::move(h), std::move(rpc), inv});
  };
  const Direction kOut = Direction::kToResponder;
  const Direction kBack = Direction::kToRequester;

  // §7: the connection opens with both sides' properties.
  add("connprop_requester", kOut,
      Header(0x100,
             wire::V2ConnProp{
                 {wire::MakeRbsizProperty(8192),
                  wire::MakeBrsProperty(wire::BackwardRequestSupport::kGeneral),
                  // An unknown id (§5.3.1) with an unaligned value.
                  Raw(0x40000001, {1, 2, 3, 4, 5, 6})},
                 {0x2}}));
  add("connprop_responder_empty", kBack, Header(0x100, wire::V2ConnProp{}));

  // §4.2: calls and replies with every chunk form.
  add("msg_inline_call", kOut,
      Header(0x101, wire::V2Msg{Lists(MsgDirection::kCall, 0, {})}),
      RpcCall(0x101, 12));
  add("msg_inline_reply", kBack,
      Header(0x101, wire::V2Msg{Lists(MsgDirection::kReply, 0, {})}),
      RpcReply(0x101, 8));
  add("msg_call_every_chunk", kOut,
      Header(0x102,
             wire::V2Msg{
                 Lists(MsgDirection::kCall, 0x0000A001,
                       {{ReadSegment{52, Segment{0xA001, 4096, 0x7F0000001000}},
                         ReadSegment{52, Segment{0xA002, 1000, 0x7F0000100000}},
                         ReadSegment{60, Segment{0xA003, 65536, 0x10}}},
                        {{Segment{0xB001, 8192, 0xFFFFFFFF00000000},
                          Segment{0xB002, 4096, 0x2000}},
                         {Segment{0xB003, 1048576, 0x123456789ABCDEF0}}},
                        std::vector<Segment>{Segment{0xC001, 2048, 0x3000},
                                             Segment{0xC002, 2048, 0x4000}}})}),
      RpcCall(0x102, 20));
  add("msg_reply_written_chunks", kBack,
      Header(0x102,
             wire::V2Msg{Lists(MsgDirection::kReply, 0,
                               {{},
                                {{Segment{0xB001, 8192, 0xFFFFFFFF00000000},
                                  Segment{0xB002, 100, 0x2000}},
                                 {Segment{0xB003, 0, 0x123456789ABCDEF0}}},
                                std::nullopt})}),
      RpcReply(0x102, 4), 0x0000A001);
  add("nomsg_long_call", kOut,
      Header(0x103, wire::V2NoMsg{Lists(
                        MsgDirection::kCall, 0x0000D001,
                        {{ReadSegment{0, Segment{0xD001, 6000, 0x5000}}},
                         {},
                         std::vector<Segment>{Segment{0xD002, 16384, 0}}})}));
  add("nomsg_long_reply", kBack,
      Header(0x103,
             wire::V2NoMsg{Lists(
                 MsgDirection::kReply, 0,
                 {{}, {}, std::vector<Segment>{Segment{0xD002, 9000, 0}}})}),
      {}, 0x0000D001);
  // RFC 8167 semantics in version two: a backward call travels from the
  // responder to the requester, marked by rdma_direction alone (§6.2.2).
  add("msg_backward_call", kBack,
      Header(0x9001, wire::V2Msg{Lists(MsgDirection::kCall, 0, {})}),
      RpcCall(0x9001, 0));
  add("msg_backward_reply", kOut,
      Header(0x9001, wire::V2Msg{Lists(MsgDirection::kReply, 0, {})}),
      RpcReply(0x9001, 0));

  // §6.2.4: every error code with its arm.
  wire::V2Error vers = Error(V2ErrorCode::kVers);
  vers.vers_low = 1;
  vers.vers_high = 2;
  add("error_vers", kBack, Header(0x200, vers));
  add("error_bad_xdr", kBack, Header(0x201, Error(V2ErrorCode::kBadXdr)));
  add("error_invalid_proc", kBack,
      Header(0x202, Error(V2ErrorCode::kInvalidProc)));
  wire::V2Error reads = Error(V2ErrorCode::kReadChunks);
  reads.max_chunks = 8;
  add("error_read_chunks", kBack, Header(0x203, reads));
  wire::V2Error writes = Error(V2ErrorCode::kWriteChunks);
  writes.max_chunks = 4;
  add("error_write_chunks", kBack, Header(0x204, writes));
  wire::V2Error segments = Error(V2ErrorCode::kSegments);
  segments.max_segments = 16;
  add("error_segments", kBack, Header(0x205, segments));
  wire::V2Error write_resource = Error(V2ErrorCode::kWriteResource);
  write_resource.chunk_index = 1;
  write_resource.length_needed = 65536;
  add("error_write_resource", kBack, Header(0x206, write_resource));
  wire::V2Error reply_resource = Error(V2ErrorCode::kReplyResource);
  reply_resource.length_needed = 1 << 20;
  add("error_reply_resource", kBack, Header(0x207, reply_resource));
  add("error_invalid_option", kBack,
      Header(0x208, Error(V2ErrorCode::kInvalidOption)));
  add("error_system", kOut, Header(0x209, Error(V2ErrorCode::kSystem)));

  // §4.1: optional messages, an experimental type (§5.4.2) with data and
  // one without.
  add("optional_with_info", kOut,
      Header(0x300,
             wire::V2Optional{
                 MsgDirection::kCall, 0xF0000001, {9, 8, 7, 6, 5, 4, 3}}));
  add("optional_empty", kBack,
      Header(0x301, wire::V2Optional{MsgDirection::kReply, 0xF0000002, {}}));

  // §5.3: property exchange; §5.1.1: a zero-length value is the default.
  add("reqprop", kOut,
      Header(0x400, wire::V2ReqProp{{wire::MakeRbsizProperty(65536),
                                     Raw(wire::kPropIdBrs, {})}}));
  add("resprop", kBack,
      Header(0x400,
             wire::V2ResProp{{0x1}, {0x2}, {wire::MakeRbsizProperty(16384)}}));
  add("resprop_multiword", kBack,
      Header(0x401, wire::V2ResProp{{0x1, 0x80000000}, {}, {}}));
  add("updprop", kBack,
      Header(0x402,
             wire::V2UpdProp{
                 {wire::MakeRbsizProperty(16384),
                  wire::MakeBrsProperty(wire::BackwardRequestSupport::kNone),
                  Raw(wire::kPropIdRbsiz, {}), Raw(0x12345678, {0xAA})}}));
  return c;
}

wire::V1Header V1Neighbour() {
  return wire::V1Header{0x500, wire::kRpcRdmaVersion1, kCredits, wire::V1Msg{}};
}

std::vector<uint8_t> V1NeighbourRpc() { return RpcCall(0x500, 4); }

absl::Status WriteV2CorpusPcap(const std::string& path,
                               const std::vector<V2CorpusMessage>& corpus) {
  pcap::PcapWriterOptions options;
  options.pmtu = 4096;
  absl::StatusOr<std::unique_ptr<pcap::PcapWriter>> writer =
      pcap::PcapWriter::Open(path, options);
  if (!writer.ok()) return writer.status();
  for (const V2CorpusMessage& m : corpus) {
    pcap::SendOptions send;
    send.invalidate_rkey = m.invalidate;
    absl::Status s = (*writer)->Send(m.direction, m.Encode(), send);
    if (!s.ok()) return s;
  }
  std::vector<uint8_t> v1 = wire::EncodeV1(V1Neighbour());
  const std::vector<uint8_t> rpc = V1NeighbourRpc();
  v1.insert(v1.end(), rpc.begin(), rpc.end());
  absl::Status s = (*writer)->Send(pcap::Direction::kToResponder, v1);
  if (!s.ok()) return s;
  return (*writer)->Close();
}

}  // namespace rpcrdma::test
