// rpcrdma::XdrReader and rpcrdma::XdrWriter: XDR (RFC 4506) over bounded
// buffers, for the arguments and results of RPC programs carried by rpcrdma
// (and for the transport's own headers, which are XDR too).
//
// Every read and write is checked against the end of its buffer; a failure
// names the field, the offset and how many octets were needed, so a decoder
// built on these can say exactly what was wrong with a peer's message:
//
//   rpcrdma::XdrReader args(call.message);
//   uint32_t count = 0;
//   std::string key;
//   if (absl::Status s = args.ReadUint32("count", &count); !s.ok()) ...
//   if (absl::Status s = args.ReadString("key", 255, &key); !s.ok()) ...
//
//   std::vector<uint8_t> reply;
//   rpcrdma::XdrWriter out(&reply);       // appends, growing `reply`
//   (void)out.WriteUint32("status", 0);   // cannot fail when appending
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_XDR_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_XDR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma {

// XDR items are padded with zeros to a multiple of four octets (RFC 4506
// §3). XdrPad is the number of padding octets after `length` octets;
// XdrRoundUp the padded length.
constexpr size_t XdrPad(size_t length) { return (4 - (length & 3)) & 3; }
constexpr size_t XdrRoundUp(size_t length) { return length + XdrPad(length); }

// Big-endian (XDR, RFC 4506 §4.1) load and store of one 32-bit word, for
// codecs that work on raw octets they have already bounds-checked.
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
// Appends `v` to `out` as one big-endian word (an unsigned integer, RFC
// 4506 §4.2) or as two, most significant first (an unsigned hyper,
// §4.5), for encoders that build a message word by word in a vector
// without XdrWriter's per-item errors (frames, capture headers, tests).
inline void AppendBigEndian32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  StoreBigEndian32(out.data() + at, v);
}
inline void AppendBigEndian64(std::vector<uint8_t>& out, uint64_t v) {
  AppendBigEndian32(out, static_cast<uint32_t>(v >> 32));
  AppendBigEndian32(out, static_cast<uint32_t>(v));
}

// Reads XDR items from a span it does not own (the span must outlive it).
class XdrReader {
 public:
  explicit XdrReader(absl::Span<const uint8_t> data) : data_(data) {}

  // Each Read* consumes its item only on success. On failure the reader is
  // unchanged and the status (OUT_OF_RANGE for truncation, INVALID_ARGUMENT
  // for a bad value) names `field` and the offset.
  absl::Status ReadUint32(absl::string_view field, uint32_t* out);
  // RFC 4506 §4.1: a two's complement integer.
  absl::Status ReadInt32(absl::string_view field, int32_t* out);
  // RFC 4506 §4.5: unsigned hyper integer.
  absl::Status ReadUint64(absl::string_view field, uint64_t* out);
  // RFC 4506 §4.4: a boolean is 0 or 1; anything else is an error.
  absl::Status ReadBool(absl::string_view field, bool* out);
  // Fixed-length opaque (§4.9): `length` octets plus padding. Padding content
  // is not checked, as the Linux kernel does not check it either.
  absl::Status ReadFixedOpaque(absl::string_view field, size_t length,
                               absl::Span<const uint8_t>* out);
  // Variable-length opaque (§4.10) with at most `max_length` octets. `out`
  // points into the reader's span (nothing is copied).
  absl::Status ReadVarOpaque(absl::string_view field, uint32_t max_length,
                             absl::Span<const uint8_t>* out);
  // String (§4.11) of at most `max_length` octets, copied into `out`.
  absl::Status ReadString(absl::string_view field, uint32_t max_length,
                          std::string* out);

  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }
  absl::Span<const uint8_t> rest() const { return data_.subspan(offset_); }

 private:
  absl::Status Truncated(absl::string_view field, size_t needed) const;

  absl::Span<const uint8_t> data_;
  size_t offset_ = 0;
};

// Writes XDR items in one of two forms:
// - into a caller-owned buffer of fixed size (for example a registered send
//   buffer): a write past its end fails with RESOURCE_EXHAUSTED, naming the
//   field and offset, and leaves the written prefix intact;
// - appending to a std::vector<uint8_t>, which grows as needed: writes fail
//   only for a variable-length item longer than XDR's 32-bit length word.
// Padding is written as zeros (RFC 4506 §3). A failed write writes nothing.
class XdrWriter {
 public:
  explicit XdrWriter(absl::Span<uint8_t> buffer) : buffer_(buffer) {}
  // Appends to `out` (after what it already holds); `out` must outlive
  // the writer. The caller may append to `out` between writes (each item
  // goes at its end) but must not shrink it below its size at construction.
  explicit XdrWriter(std::vector<uint8_t>* out)
      : out_(out), base_(out->size()) {}

  absl::Status WriteUint32(absl::string_view field, uint32_t value);
  absl::Status WriteInt32(absl::string_view field, int32_t value);
  absl::Status WriteUint64(absl::string_view field, uint64_t value);
  absl::Status WriteBool(absl::string_view field, bool value);
  // §4.9: the octets and their padding (no length word).
  absl::Status WriteFixedOpaque(absl::string_view field,
                                absl::Span<const uint8_t> bytes);
  // §4.10: length word, octets, padding.
  absl::Status WriteVarOpaque(absl::string_view field,
                              absl::Span<const uint8_t> bytes);
  // §4.11: as WriteVarOpaque.
  absl::Status WriteString(absl::string_view field, absl::string_view text);

  // The octets written so far: from the start of the fixed buffer, or from
  // where the vector ended when the writer was made.
  size_t offset() const {
    return out_ != nullptr ? out_->size() - base_ : offset_;
  }
  absl::Span<const uint8_t> written() const;

 private:
  // Makes room for `needed` octets and returns where they go, or nullptr
  // (with `*status` set) when a fixed buffer is too small. Commit() then
  // counts them as written.
  uint8_t* Reserve(absl::string_view field, size_t needed,
                   absl::Status* status);
  void Commit(size_t octets) { offset_ += octets; }

  absl::Span<uint8_t> buffer_;
  std::vector<uint8_t>* out_ = nullptr;
  size_t base_ = 0;    // out_'s size when the writer was made
  size_t offset_ = 0;  // octets written into buffer_ (fixed form)
};

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_XDR_H_
