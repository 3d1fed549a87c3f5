// RPC-over-RDMA version one transport header codec (RFC 5666 §4.3, RFC 8166
// §4.1.2).
#include "plugin/wire/v1.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"

namespace rpcrdma::wire {
namespace {

// rdma_xid, rdma_vers, rdma_credit and rdma_proc (RFC 8166 §4.2).
constexpr size_t kFixedFieldsSize = 16;

// Turns a failed XdrReader call into a classified error. The reader reports
// truncation as OUT_OF_RANGE; the only reads here are plain words, so any
// other status cannot occur, but it is still classified rather than dropped.
DecodeError FromXdr(const absl::Status& status, size_t offset) {
  return DecodeError{absl::IsOutOfRange(status)
                         ? DecodeErrorKind::kTruncated
                         : DecodeErrorKind::kBadDiscriminant,
                     offset, std::string(status.message()), 0};
}

std::optional<DecodeError> ReadWord(XdrReader& r, absl::string_view field,
                                    uint32_t* out) {
  size_t at = r.offset();
  if (absl::Status st = r.ReadUint32(field, out); !st.ok()) {
    return FromXdr(st, at);
  }
  return std::nullopt;
}

// The body of RDMA_ERROR (RFC 8166 §4.1.2, rpcrdma1_error). RFC 5666 §4.3
// also had a default arm of eight opaque words; RFC 8166 removed it, so an
// unknown rdma_err is a bad discriminant.
DecodeResult<V1Error> DecodeErrorBody(XdrReader& r) {
  V1Error body;
  size_t at = r.offset();
  uint32_t err = 0;
  if (auto e = ReadWord(r, "rdma_err", &err)) return *e;
  switch (err) {
    case static_cast<uint32_t>(V1ErrorCode::kVers):
      body.code = V1ErrorCode::kVers;
      if (auto e = ReadWord(r, "rdma_vers_low", &body.vers_low)) return *e;
      if (auto e = ReadWord(r, "rdma_vers_high", &body.vers_high)) return *e;
      return body;
    case static_cast<uint32_t>(V1ErrorCode::kChunk):
      body.code = V1ErrorCode::kChunk;
      return body;
    default:
      return DecodeError{
          DecodeErrorKind::kBadDiscriminant, at,
          absl::StrCat("unknown rdma_err ", err, " (offset ", at, ")"), 0};
  }
}

absl::Status EncodeBody(const V1Body& body, XdrWriter& w) {
  if (const auto* msg = std::get_if<V1Msg>(&body)) {
    return EncodeChunkLists(msg->chunks, w);
  }
  if (const auto* nomsg = std::get_if<V1NoMsg>(&body)) {
    return EncodeChunkLists(nomsg->chunks, w);
  }
  if (const auto* msgp = std::get_if<V1Msgp>(&body)) {
    if (absl::Status st = w.WriteUint32("rdma_align", msgp->align); !st.ok()) {
      return st;
    }
    if (absl::Status st = w.WriteUint32("rdma_thresh", msgp->thresh);
        !st.ok()) {
      return st;
    }
    return EncodeChunkLists(msgp->chunks, w);
  }
  if (std::holds_alternative<V1Done>(body)) return absl::OkStatus();
  const V1Error& error = std::get<V1Error>(body);
  if (absl::Status st =
          w.WriteUint32("rdma_err", static_cast<uint32_t>(error.code));
      !st.ok()) {
    return st;
  }
  if (error.code == V1ErrorCode::kVers) {
    if (absl::Status st = w.WriteUint32("rdma_vers_low", error.vers_low);
        !st.ok()) {
      return st;
    }
    return w.WriteUint32("rdma_vers_high", error.vers_high);
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view V1ProcName(V1Proc proc) {
  switch (proc) {
    case V1Proc::kMsg:
      return "RDMA_MSG";
    case V1Proc::kNoMsg:
      return "RDMA_NOMSG";
    case V1Proc::kMsgp:
      return "RDMA_MSGP";
    case V1Proc::kDone:
      return "RDMA_DONE";
    case V1Proc::kError:
      return "RDMA_ERROR";
  }
  return "unknown";
}

absl::string_view V1ErrorCodeName(V1ErrorCode code) {
  switch (code) {
    case V1ErrorCode::kVers:
      return "ERR_VERS";
    case V1ErrorCode::kChunk:
      return "ERR_CHUNK";
  }
  return "unknown";
}

const ChunkLists* V1Header::chunks() const {
  if (const auto* msg = std::get_if<V1Msg>(&body)) return &msg->chunks;
  if (const auto* nomsg = std::get_if<V1NoMsg>(&body)) return &nomsg->chunks;
  if (const auto* msgp = std::get_if<V1Msgp>(&body)) return &msgp->chunks;
  return nullptr;
}

DecodeResult<V1Decoded> DecodeV1(absl::Span<const uint8_t> message,
                                 const ChunkLimits& limits) {
  XdrReader r(message);
  V1Decoded out;
  V1Header& h = out.header;
  if (auto e = ReadWord(r, "rdma_xid", &h.xid)) return *e;
  size_t vers_at = r.offset();
  if (auto e = ReadWord(r, "rdma_vers", &h.vers)) return *e;
  // RFC 8166 §4.5.1: nothing after rdma_vers can be interpreted without
  // knowing the version, so the mismatch is reported even when the rest of
  // the header is missing.
  if (h.vers != kRpcRdmaVersion1) {
    return DecodeError{DecodeErrorKind::kBadVersion, vers_at,
                       absl::StrCat("rdma_vers is ", h.vers, "; only version ",
                                    kRpcRdmaVersion1, " is decoded here"),
                       h.vers};
  }
  if (auto e = ReadWord(r, "rdma_credit", &h.credits)) return *e;
  size_t proc_at = r.offset();
  uint32_t proc = 0;
  if (auto e = ReadWord(r, "rdma_proc", &proc)) return *e;

  // RFC 8166 §4.2.4 lists the procedures; an unknown one is answered with
  // ERR_CHUNK (§4.5.2).
  switch (proc) {
    case static_cast<uint32_t>(V1Proc::kMsg):
    case static_cast<uint32_t>(V1Proc::kNoMsg): {
      DecodeResult<ChunkLists> lists = DecodeChunkLists(r, limits);
      if (!lists.ok()) return lists.error();
      if (proc == static_cast<uint32_t>(V1Proc::kMsg)) {
        h.body = V1Msg{std::move(lists).value()};
      } else {
        h.body = V1NoMsg{std::move(lists).value()};
      }
      break;
    }
    case static_cast<uint32_t>(V1Proc::kMsgp): {
      // RFC 5666 §4.3 rpc_rdma_header_padded; RFC 8166 §4.6.1 keeps it
      // decodable.
      V1Msgp msgp;
      if (auto e = ReadWord(r, "rdma_align", &msgp.align)) return *e;
      if (auto e = ReadWord(r, "rdma_thresh", &msgp.thresh)) return *e;
      DecodeResult<ChunkLists> lists = DecodeChunkLists(r, limits);
      if (!lists.ok()) return lists.error();
      msgp.chunks = std::move(lists).value();
      h.body = std::move(msgp);
      break;
    }
    case static_cast<uint32_t>(V1Proc::kDone):
      h.body = V1Done{};  // RFC 8166 §4.6.2: no body.
      break;
    case static_cast<uint32_t>(V1Proc::kError): {
      DecodeResult<V1Error> error = DecodeErrorBody(r);
      if (!error.ok()) return error.error();
      h.body = error.value();
      break;
    }
    default:
      return DecodeError{
          DecodeErrorKind::kBadProc, proc_at,
          absl::StrCat("unknown rdma_proc ", proc, " (offset ", proc_at, ")"),
          0};
  }
  out.header_length = r.offset();
  return out;
}

absl::StatusOr<size_t> EncodeV1(const V1Header& header,
                                absl::Span<uint8_t> buffer) {
  if (const auto* error = std::get_if<V1Error>(&header.body)) {
    if (error->code != V1ErrorCode::kVers &&
        error->code != V1ErrorCode::kChunk) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot encode rdma_err ", static_cast<uint32_t>(error->code)));
    }
  }
  XdrWriter w(buffer);
  if (absl::Status st = w.WriteUint32("rdma_xid", header.xid); !st.ok()) {
    return st;
  }
  if (absl::Status st = w.WriteUint32("rdma_vers", header.vers); !st.ok()) {
    return st;
  }
  if (absl::Status st = w.WriteUint32("rdma_credit", header.credits);
      !st.ok()) {
    return st;
  }
  if (absl::Status st =
          w.WriteUint32("rdma_proc", static_cast<uint32_t>(header.proc()));
      !st.ok()) {
    return st;
  }
  if (absl::Status st = EncodeBody(header.body, w); !st.ok()) return st;
  return w.offset();
}

// Returns an empty vector only for a header EncodeV1 rejects (an RDMA_ERROR
// with an rdma_err value outside the protocol); every valid header encodes
// to at least 16 octets.
std::vector<uint8_t> EncodeV1(const V1Header& header) {
  std::vector<uint8_t> out(V1EncodedSize(header));
  absl::StatusOr<size_t> written = EncodeV1(header, absl::MakeSpan(out));
  if (!written.ok()) return {};
  out.resize(*written);
  return out;
}

size_t V1EncodedSize(const V1Header& header) {
  size_t size = kFixedFieldsSize;
  if (const ChunkLists* lists = header.chunks()) {
    size += ChunkListsEncodedSize(*lists);
  }
  if (std::holds_alternative<V1Msgp>(header.body)) size += 8;
  if (const auto* error = std::get_if<V1Error>(&header.body)) {
    size += 4;
    if (error->code == V1ErrorCode::kVers) size += 8;
  }
  return size;
}

V1Header V1ErrorReplyFor(absl::Span<const uint8_t> bad_message,
                         const DecodeError& error, uint32_t credits,
                         uint32_t supported_low, uint32_t supported_high) {
  V1Header reply;
  reply.xid = bad_message.size() >= 4 ? LoadBigEndian32(bad_message.data()) : 0;
  // RFC 5666 §4.2 lets the ERR_VERS reply carry any version valid at the
  // receiver; version one is the one every peer of this codec can decode.
  // (RFC 8166 §4.5 asks for the request's rdma_vers, which is 1 anyway for
  // every error other than a version mismatch.)
  reply.vers = kRpcRdmaVersion1;
  reply.credits = credits;
  V1Error body;
  if (error.kind == DecodeErrorKind::kBadVersion) {
    // RFC 8166 §4.5.1: ERR_VERS with the inclusive range supported.
    body.code = V1ErrorCode::kVers;
    body.vers_low = supported_low;
    body.vers_high = supported_high;
  } else {
    // RFC 8166 §4.5.2: every other header decoding failure.
    body.code = V1ErrorCode::kChunk;
  }
  reply.body = body;
  return reply;
}

}  // namespace rpcrdma::wire
