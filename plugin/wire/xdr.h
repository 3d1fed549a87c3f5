// XDR (RFC 4506) primitives over bounded buffers.
//
// Every read and write is checked against the end of its buffer; a failure
// names the field, the offset and how many octets were needed, so a decoder
// built on these can say exactly what was wrong with a peer's message.
#ifndef RPCRDMA_PLUGIN_WIRE_XDR_H_
#define RPCRDMA_PLUGIN_WIRE_XDR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma::wire {

// XDR items are padded to a multiple of four octets (RFC 4506 §3).
constexpr size_t XdrPad(size_t length) { return (4 - (length & 3)) & 3; }
constexpr size_t XdrRoundUp(size_t length) { return length + XdrPad(length); }

class XdrReader {
 public:
  explicit XdrReader(absl::Span<const uint8_t> data) : data_(data) {}

  // Each Read* consumes its item only on success. On failure the reader is
  // unchanged and the status (OUT_OF_RANGE for truncation, INVALID_ARGUMENT
  // for a bad value) names `field` and the offset.
  absl::Status ReadUint32(absl::string_view field, uint32_t* out);
  absl::Status ReadUint64(absl::string_view field, uint64_t* out);
  // RFC 4506 §4.4: a boolean is 0 or 1; anything else is an error.
  absl::Status ReadBool(absl::string_view field, bool* out);
  // Fixed-length opaque (§4.9): `length` octets plus padding. Padding content
  // is not checked, as the Linux kernel does not check it either.
  absl::Status ReadFixedOpaque(absl::string_view field, size_t length,
                               absl::Span<const uint8_t>* out);
  // Variable-length opaque (§4.10) with at most `max_length` octets.
  absl::Status ReadVarOpaque(absl::string_view field, uint32_t max_length,
                             absl::Span<const uint8_t>* out);

  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }
  absl::Span<const uint8_t> rest() const { return data_.subspan(offset_); }

 private:
  absl::Status Truncated(absl::string_view field, size_t needed) const;

  absl::Span<const uint8_t> data_;
  size_t offset_ = 0;
};

// Writes into a caller-owned buffer of fixed size (for example a registered
// send buffer). Writes past the end fail with RESOURCE_EXHAUSTED and leave
// the buffer's written prefix intact.
class XdrWriter {
 public:
  explicit XdrWriter(absl::Span<uint8_t> buffer) : buffer_(buffer) {}

  absl::Status WriteUint32(absl::string_view field, uint32_t value);
  absl::Status WriteUint64(absl::string_view field, uint64_t value);
  absl::Status WriteBool(absl::string_view field, bool value);
  absl::Status WriteFixedOpaque(absl::string_view field,
                                absl::Span<const uint8_t> bytes);
  absl::Status WriteVarOpaque(absl::string_view field,
                              absl::Span<const uint8_t> bytes);

  size_t offset() const { return offset_; }
  absl::Span<const uint8_t> written() const {
    return absl::Span<const uint8_t>(buffer_.data(), offset_);
  }

 private:
  absl::Status Reserve(absl::string_view field, size_t needed);

  absl::Span<uint8_t> buffer_;
  size_t offset_ = 0;
};

// Big-endian load/store helpers shared by codecs that work on raw octets.
inline uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline void StoreBigEndian32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_XDR_H_
