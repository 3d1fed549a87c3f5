#include "plugin/wire/private_data.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::wire {
namespace {

// Octet offsets inside the eight-octet message (RFC 8797 §4 diagram).
constexpr size_t kVersionOffset = 4;
constexpr size_t kFlagsOffset = 5;
constexpr size_t kSendSizeOffset = 6;
constexpr size_t kReceiveSizeOffset = 7;

// The R field is bit 15 of the second word in the §4 diagram, where bit 0 is
// the most significant bit of the word. Bits 8..15 form octet 5, so R is the
// least significant bit of that octet ("bit 15 of the Flags field", §5.1).
// The other seven bits of the octet are Reserved.
constexpr uint8_t kRemoteInvalidationBit = 0x01;

constexpr uint32_t kSizeUnit = 1024;

// §4.2: "dividing its actual buffer size, in octets, by 1024 and subtracting
// one from the result". Integer division rounds a size that is not a
// multiple of 1024 down, so the advertised size never exceeds the buffer.
uint8_t EncodeSize(uint32_t octets) {
  return static_cast<uint8_t>(octets / kSizeUnit - 1);
}

// §4.2: "adds one to the encoded value and then multiplies that result by
// 1024". Every octet value decodes into 1024..262144.
uint32_t DecodeSize(uint8_t value) { return (uint32_t{value} + 1) * kSizeUnit; }

absl::Status CheckSize(absl::string_view field, uint32_t octets) {
  if (octets < kMinInlineSize || octets > kMaxInlineSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("private data ", field, " ", octets, " octets is outside ",
                     kMinInlineSize, "..", kMaxInlineSize, " (RFC 8797 §4.2)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::array<uint8_t, kPrivateDataSize>> EncodePrivateData(
    const PrivateData& data) {
  if (absl::Status s = CheckSize("send size", data.send_size); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSize("receive size", data.receive_size); !s.ok()) {
    return s;
  }
  std::array<uint8_t, kPrivateDataSize> out{};
  StoreBigEndian32(out.data(), kPrivateDataFormatId);
  out[kVersionOffset] = kPrivateDataVersion;
  // §4: senders MUST set the Reserved bits to zero.
  out[kFlagsOffset] = data.remote_invalidation ? kRemoteInvalidationBit : 0;
  out[kSendSizeOffset] = EncodeSize(data.send_size);
  out[kReceiveSizeOffset] = EncodeSize(data.receive_size);
  return out;
}

// §5.2: the identifier may sit at any offset, with no alignment, because the
// buffer can hold private data of other layers (MPAv2 and others) and the
// CM pads it (to 56 octets in a connect request and 196 in a reply on
// InfiniBand and RoCE), so neither its start nor its length locate ours.
//
// An occurrence of the identifier that fails the §5.2 checks (a version
// other than one, or fewer than eight octets left in the buffer) does not
// end the search: those four octets may appear by chance inside another
// layer's data, and a genuine copy may follow. An occurrence with fewer than
// eight octets after its start is truncated, and so is every later one, so
// the scan stops at the last offset where eight octets fit.
std::optional<PrivateData> FindPrivateData(absl::Span<const uint8_t> buffer) {
  if (buffer.size() < kPrivateDataSize) return std::nullopt;
  const size_t last_start = buffer.size() - kPrivateDataSize;
  for (size_t i = 0; i <= last_start; ++i) {
    const uint8_t* p = buffer.data() + i;
    if (LoadBigEndian32(p) != kPrivateDataFormatId) continue;
    if (p[kVersionOffset] != kPrivateDataVersion) continue;
    PrivateData found;
    // §4: receivers MUST ignore the Reserved bits.
    found.remote_invalidation = (p[kFlagsOffset] & kRemoteInvalidationBit) != 0;
    found.send_size = DecodeSize(p[kSendSizeOffset]);
    found.receive_size = DecodeSize(p[kReceiveSizeOffset]);
    return found;
  }
  return std::nullopt;
}

PrivateData PrivateDataOrDefault(absl::Span<const uint8_t> buffer) {
  // §5.1: act as if R is clear and both Size fields are zero, which decode
  // to 1024 octets, the RFC 8166 §3.3.3 default inline threshold.
  return FindPrivateData(buffer).value_or(PrivateData{});
}

// §4.2 names the sending direction of each peer: "the smaller of its own
// send size and the [peer's] reported receive size". The receive threshold
// is the mirror image: the peer will not send more than it advertised as
// its send size, and this side need not accept more than its own receive
// size. §4.1: remote invalidation only when both peers set R.
InlineThresholds NegotiateInline(const PrivateData& local,
                                 const PrivateData& peer) {
  InlineThresholds out;
  out.send = std::min(local.send_size, peer.receive_size);
  out.receive = std::min(local.receive_size, peer.send_size);
  out.remote_invalidation =
      local.remote_invalidation && peer.remote_invalidation;
  return out;
}

}  // namespace rpcrdma::wire
