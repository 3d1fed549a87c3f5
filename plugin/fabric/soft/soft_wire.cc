#include "plugin/fabric/soft/soft_wire.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::fabric::soft {
namespace {

// The frames' integers are big-endian (soft_wire.h). Their 32-bit words,
// and the two words of a 64-bit integer (most significant first), are
// loaded and stored as XDR's (RFC 4506 §4.1, §4.5); XDR has no 16-bit
// integer, so the private data length is put together here.
class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> data) : data_(data) {}
  size_t remaining() const { return data_.size() - pos_; }
  bool U8(uint8_t& v) {
    if (remaining() < 1) return false;
    v = data_[pos_++];
    return true;
  }
  bool U16(uint16_t& v) {
    if (remaining() < 2) return false;
    v = static_cast<uint16_t>((data_[pos_] << 8) | data_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = LoadBigEndian32(data_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t& v) {
    if (remaining() < 8) return false;
    v = (uint64_t{LoadBigEndian32(data_.data() + pos_)} << 32) |
        LoadBigEndian32(data_.data() + pos_ + 4);
    pos_ += 8;
    return true;
  }
  absl::Span<const uint8_t> Rest() {
    absl::Span<const uint8_t> rest = data_.subspan(pos_);
    pos_ = data_.size();
    return rest;
  }
  bool Take(size_t n, absl::Span<const uint8_t>& out) {
    if (remaining() < n) return false;
    out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  absl::Span<const uint8_t> data_;
  size_t pos_ = 0;
};

void PutU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

// Starts a frame; returns the offset of its length field.
size_t Begin(std::vector<uint8_t>& out, FrameType type) {
  size_t at = out.size();
  AppendBigEndian32(out, 0);
  out.push_back(static_cast<uint8_t>(type));
  return at;
}

void Finish(std::vector<uint8_t>& out, size_t at) {
  const uint64_t body = out.size() - at - 4;
  StoreBigEndian32(out.data() + at, static_cast<uint32_t>(body));
}

void PutBytes(std::vector<uint8_t>& out, absl::Span<const uint8_t> data) {
  out.insert(out.end(), data.begin(), data.end());
}

void PutPrivateData(std::vector<uint8_t>& out,
                    absl::Span<const uint8_t> private_data) {
  PutU16(out, static_cast<uint16_t>(private_data.size()));
  PutBytes(out, private_data);
}

absl::Status Truncated(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("soft frame: truncated ", what, " body"));
}

bool GetPrivateData(Reader& r, Frame& f) {
  uint16_t len = 0;
  if (!r.U16(len) || len > kMaxPrivateData) return false;
  return r.Take(len, f.data);
}

absl::Status DecodeConnect(Reader& r, Frame& f) {
  uint32_t magic = 0;
  uint8_t version = 0;
  if (!(r.U32(magic) && r.U8(version) && r.U32(f.initiator_depth) &&
        r.U32(f.responder_resources) && GetPrivateData(r, f))) {
    return Truncated("CONNECT");
  }
  if (magic != kMagic || version != kVersion) {
    return absl::InvalidArgumentError(
        "soft frame: CONNECT with unknown magic or version");
  }
  return absl::OkStatus();
}

absl::Status DecodeSend(Reader& r, Frame& f) {
  uint8_t flags = 0;
  uint32_t handle = 0;
  if (!(r.U64(f.id) && r.U8(flags) && r.U32(handle))) {
    return Truncated("SEND");
  }
  if ((flags & ~uint8_t{1}) != 0) {
    return absl::InvalidArgumentError("soft frame: unknown SEND flags");
  }
  if ((flags & 1) != 0) f.invalidate = handle;
  f.data = r.Rest();
  if (f.data.size() > kMaxSendPayload) {
    return absl::OutOfRangeError("soft frame: SEND payload too large");
  }
  return absl::OkStatus();
}

// The tail READ_RESP and WRITE share: the "last" flag, then the data.
absl::Status DecodeLastAndData(Reader& r, Frame& f, absl::string_view name) {
  uint8_t last = 0;
  if (!r.U8(last)) return Truncated(name);
  if (last > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft frame: bad ", name, " last"));
  }
  f.last = last == 1;
  f.data = r.Rest();
  if (f.data.size() > kMaxRdmaChunk) {
    return absl::OutOfRangeError(
        absl::StrCat("soft frame: ", name, " data too large"));
  }
  return absl::OkStatus();
}

absl::Status DecodeReadResponse(Reader& r, Frame& f) {
  if (!(r.U64(f.id) && r.U8(f.status))) return Truncated("READ_RESP");
  return DecodeLastAndData(r, f, "READ_RESP");
}

absl::Status DecodeWrite(Reader& r, Frame& f) {
  if (!(r.U64(f.id) && r.U32(f.handle) && r.U64(f.address))) {
    return Truncated("WRITE");
  }
  return DecodeLastAndData(r, f, "WRITE");
}

// READ_REQ_CMA and WRITE_CMA: the request, then its segment list.
absl::Status DecodeCrossMemoryRequest(Reader& r, Frame& f) {
  if (!(r.U64(f.id) && r.U32(f.handle) && r.U64(f.address) &&
        r.U32(f.length))) {
    return Truncated("cross-memory request");
  }
  if (r.remaining() % kCmaSegmentSize != 0) {
    return absl::InvalidArgumentError(
        "soft frame: cross-memory segment list of a partial segment");
  }
  const size_t count = r.remaining() / kCmaSegmentSize;
  if (count > kMaxCmaSegments) {
    return absl::OutOfRangeError(absl::StrCat("soft frame: ", count,
                                              " cross-memory segments exceed ",
                                              kMaxCmaSegments));
  }
  f.segments.resize(count);
  for (CmaSegment& seg : f.segments) {
    r.U64(seg.address);
    r.U32(seg.length);
  }
  return absl::OkStatus();
}

// The body after the type octet, by type.
absl::Status DecodeBody(uint8_t type, Reader& r, Frame& f) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kConnect:
      return DecodeConnect(r, f);
    case FrameType::kAccept:
      if (!(r.U32(f.initiator_depth) && r.U32(f.responder_resources) &&
            GetPrivateData(r, f))) {
        return Truncated("ACCEPT");
      }
      return absl::OkStatus();
    case FrameType::kReject:
      if (!GetPrivateData(r, f)) return Truncated("REJECT");
      return absl::OkStatus();
    case FrameType::kSend:
      return DecodeSend(r, f);
    case FrameType::kAck:
      if (!(r.U64(f.id) && r.U8(f.status))) return Truncated("ACK");
      return absl::OkStatus();
    case FrameType::kReadReq:
      if (!(r.U64(f.id) && r.U32(f.handle) && r.U64(f.address) &&
            r.U32(f.length))) {
        return Truncated("READ_REQ");
      }
      return absl::OkStatus();
    case FrameType::kReadResp:
      return DecodeReadResponse(r, f);
    case FrameType::kWrite:
      return DecodeWrite(r, f);
    case FrameType::kDisconnect:
      return absl::OkStatus();
    case FrameType::kCmaOffer:
      if (!(r.U64(f.address) && r.U64(f.cookie) && r.U32(f.gate_fd))) {
        return Truncated("CMA_OFFER");
      }
      return absl::OkStatus();
    case FrameType::kCmaAnswer:
      if (!r.U8(f.status)) return Truncated("CMA_ANSWER");
      if (f.status > 1) {
        return absl::InvalidArgumentError("soft frame: bad CMA_ANSWER");
      }
      return absl::OkStatus();
    case FrameType::kReadReqCma:
    case FrameType::kWriteCma:
      return DecodeCrossMemoryRequest(r, f);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("soft frame: unknown type ", type));
}

}  // namespace

absl::StatusOr<DecodeResult> DecodeFrame(absl::Span<const uint8_t> input) {
  DecodeResult result;
  if (input.size() < 4) return result;
  const uint32_t body_length = LoadBigEndian32(input.data());
  if (body_length == 0) {
    return absl::InvalidArgumentError("soft frame: empty body");
  }
  if (body_length > kMaxFrameBody) {
    return absl::OutOfRangeError(absl::StrCat("soft frame: body of ",
                                              body_length, " octets exceeds ",
                                              kMaxFrameBody));
  }
  if (input.size() - 4 < body_length) return result;
  Reader r(input.subspan(4, body_length));
  uint8_t type = 0;
  r.U8(type);
  Frame& f = result.frame;
  if (absl::Status body = DecodeBody(type, r, f); !body.ok()) return body;
  if (r.remaining() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft frame: ", r.remaining(), " trailing octets after type ", type));
  }
  f.type = static_cast<FrameType>(type);
  result.consumed = 4 + size_t{body_length};
  return result;
}

void AppendConnect(std::vector<uint8_t>& out, uint32_t initiator_depth,
                   uint32_t responder_resources,
                   absl::Span<const uint8_t> private_data) {
  size_t at = Begin(out, FrameType::kConnect);
  AppendBigEndian32(out, kMagic);
  out.push_back(kVersion);
  AppendBigEndian32(out, initiator_depth);
  AppendBigEndian32(out, responder_resources);
  PutPrivateData(out, private_data);
  Finish(out, at);
}

void AppendAccept(std::vector<uint8_t>& out, uint32_t initiator_depth,
                  uint32_t responder_resources,
                  absl::Span<const uint8_t> private_data) {
  size_t at = Begin(out, FrameType::kAccept);
  AppendBigEndian32(out, initiator_depth);
  AppendBigEndian32(out, responder_resources);
  PutPrivateData(out, private_data);
  Finish(out, at);
}

void AppendReject(std::vector<uint8_t>& out,
                  absl::Span<const uint8_t> private_data) {
  size_t at = Begin(out, FrameType::kReject);
  PutPrivateData(out, private_data);
  Finish(out, at);
}

void AppendSend(std::vector<uint8_t>& out, uint64_t id,
                std::optional<uint32_t> invalidate,
                absl::Span<const absl::Span<const uint8_t>> pieces) {
  size_t at = Begin(out, FrameType::kSend);
  AppendBigEndian64(out, id);
  out.push_back(invalidate.has_value() ? 1 : 0);
  AppendBigEndian32(out, invalidate.value_or(0));
  for (absl::Span<const uint8_t> piece : pieces) PutBytes(out, piece);
  Finish(out, at);
}

void AppendAck(std::vector<uint8_t>& out, uint64_t id, uint8_t status) {
  size_t at = Begin(out, FrameType::kAck);
  AppendBigEndian64(out, id);
  out.push_back(status);
  Finish(out, at);
}

void AppendReadReq(std::vector<uint8_t>& out, uint64_t id, uint32_t handle,
                   uint64_t address, uint32_t length) {
  size_t at = Begin(out, FrameType::kReadReq);
  AppendBigEndian64(out, id);
  AppendBigEndian32(out, handle);
  AppendBigEndian64(out, address);
  AppendBigEndian32(out, length);
  Finish(out, at);
}

void AppendReadResp(std::vector<uint8_t>& out, uint64_t id, uint8_t status,
                    bool last, absl::Span<const uint8_t> data) {
  size_t at = Begin(out, FrameType::kReadResp);
  AppendBigEndian64(out, id);
  out.push_back(status);
  out.push_back(last ? 1 : 0);
  PutBytes(out, data);
  Finish(out, at);
}

void AppendWrite(std::vector<uint8_t>& out, uint64_t id, uint32_t handle,
                 uint64_t address, bool last,
                 absl::Span<const absl::Span<const uint8_t>> pieces) {
  size_t at = Begin(out, FrameType::kWrite);
  AppendBigEndian64(out, id);
  AppendBigEndian32(out, handle);
  AppendBigEndian64(out, address);
  out.push_back(last ? 1 : 0);
  for (absl::Span<const uint8_t> piece : pieces) PutBytes(out, piece);
  Finish(out, at);
}

void AppendDisconnect(std::vector<uint8_t>& out) {
  size_t at = Begin(out, FrameType::kDisconnect);
  Finish(out, at);
}

void AppendCmaOffer(std::vector<uint8_t>& out, uint64_t probe_address,
                    uint64_t probe_cookie, uint32_t gate_fd) {
  size_t at = Begin(out, FrameType::kCmaOffer);
  AppendBigEndian64(out, probe_address);
  AppendBigEndian64(out, probe_cookie);
  AppendBigEndian32(out, gate_fd);
  Finish(out, at);
}

void AppendCmaAnswer(std::vector<uint8_t>& out, bool accepted) {
  size_t at = Begin(out, FrameType::kCmaAnswer);
  out.push_back(accepted ? 1 : 0);
  Finish(out, at);
}

void AppendCmaRequest(std::vector<uint8_t>& out, FrameType type, uint64_t id,
                      uint32_t handle, uint64_t address, uint32_t length,
                      absl::Span<const CmaSegment> segments) {
  size_t at = Begin(out, type);
  AppendBigEndian64(out, id);
  AppendBigEndian32(out, handle);
  AppendBigEndian64(out, address);
  AppendBigEndian32(out, length);
  for (const CmaSegment& seg : segments) {
    AppendBigEndian64(out, seg.address);
    AppendBigEndian32(out, seg.length);
  }
  Finish(out, at);
}

}  // namespace rpcrdma::fabric::soft
