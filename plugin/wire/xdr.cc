// The XDR codec of <rpcrdma/xdr.h> (RFC 4506).
#include "rpcrdma/xdr.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rpcrdma {
namespace {

// Copies `bytes` to `p` and zeroes the padding after them (RFC 4506 §3).
void PutPadded(uint8_t* p, absl::Span<const uint8_t> bytes) {
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  const size_t pad = XdrPad(bytes.size());
  if (pad != 0) std::memset(p + bytes.size(), 0, pad);
}

}  // namespace

absl::Status XdrReader::Truncated(absl::string_view field,
                                  size_t needed) const {
  return absl::OutOfRangeError(
      absl::StrCat("truncated at ", field, " (offset ", offset_, "): need ",
                   needed, " octets, ", remaining(), " remain"));
}

absl::Status XdrReader::ReadUint32(absl::string_view field, uint32_t* out) {
  if (remaining() < 4) return Truncated(field, 4);
  *out = LoadBigEndian32(data_.data() + offset_);
  offset_ += 4;
  return absl::OkStatus();
}

absl::Status XdrReader::ReadInt32(absl::string_view field, int32_t* out) {
  uint32_t word = 0;
  if (absl::Status s = ReadUint32(field, &word); !s.ok()) return s;
  *out = static_cast<int32_t>(word);
  return absl::OkStatus();
}

absl::Status XdrReader::ReadUint64(absl::string_view field, uint64_t* out) {
  if (remaining() < 8) return Truncated(field, 8);
  const uint8_t* p = data_.data() + offset_;
  *out = (uint64_t{LoadBigEndian32(p)} << 32) | LoadBigEndian32(p + 4);
  offset_ += 8;
  return absl::OkStatus();
}

absl::Status XdrReader::ReadBool(absl::string_view field, bool* out) {
  if (remaining() < 4) return Truncated(field, 4);
  uint32_t v = LoadBigEndian32(data_.data() + offset_);
  if (v > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad boolean ", v, " at ", field, " (offset ", offset_, ")"));
  }
  *out = v == 1;
  offset_ += 4;
  return absl::OkStatus();
}

absl::Status XdrReader::ReadFixedOpaque(absl::string_view field, size_t length,
                                        absl::Span<const uint8_t>* out) {
  size_t padded = XdrRoundUp(length);
  if (padded < length || remaining() < padded) return Truncated(field, padded);
  *out = data_.subspan(offset_, length);
  offset_ += padded;
  return absl::OkStatus();
}

absl::Status XdrReader::ReadVarOpaque(absl::string_view field,
                                      uint32_t max_length,
                                      absl::Span<const uint8_t>* out) {
  if (remaining() < 4) return Truncated(field, 4);
  uint32_t length = LoadBigEndian32(data_.data() + offset_);
  if (length > max_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("length ", length, " of ", field, " (offset ", offset_,
                     ") exceeds the limit of ", max_length));
  }
  size_t padded = XdrRoundUp(length);
  if (remaining() - 4 < padded) {
    return absl::OutOfRangeError(absl::StrCat(
        "truncated at ", field, " (offset ", offset_, "): length ", length,
        " needs ", padded, " octets, ", remaining() - 4, " remain"));
  }
  *out = data_.subspan(offset_ + 4, length);
  offset_ += 4 + padded;
  return absl::OkStatus();
}

absl::Status XdrReader::ReadString(absl::string_view field, uint32_t max_length,
                                   std::string* out) {
  absl::Span<const uint8_t> bytes;
  if (absl::Status s = ReadVarOpaque(field, max_length, &bytes); !s.ok()) {
    return s;
  }
  out->assign(bytes.begin(), bytes.end());
  return absl::OkStatus();
}

absl::Span<const uint8_t> XdrWriter::written() const {
  if (out_ != nullptr) {
    return absl::Span<const uint8_t>(out_->data() + base_, offset());
  }
  return absl::Span<const uint8_t>(buffer_.data(), offset_);
}

uint8_t* XdrWriter::Reserve(absl::string_view field, size_t needed,
                            absl::Status* status) {
  if (out_ != nullptr) {
    // Always at the vector's end: the caller may have appended to it.
    const size_t at = out_->size();
    out_->resize(at + needed);
    return out_->data() + at;
  }
  if (buffer_.size() - offset_ < needed) {
    *status = absl::ResourceExhaustedError(
        absl::StrCat("no room for ", field, " at offset ", offset_, ": need ",
                     needed, " octets, buffer has ", buffer_.size() - offset_));
    return nullptr;
  }
  return buffer_.data() + offset_;
}

absl::Status XdrWriter::WriteUint32(absl::string_view field, uint32_t value) {
  absl::Status status;
  uint8_t* p = Reserve(field, 4, &status);
  if (p == nullptr) return status;
  StoreBigEndian32(p, value);
  Commit(4);
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteInt32(absl::string_view field, int32_t value) {
  return WriteUint32(field, static_cast<uint32_t>(value));
}

absl::Status XdrWriter::WriteUint64(absl::string_view field, uint64_t value) {
  absl::Status status;
  uint8_t* p = Reserve(field, 8, &status);
  if (p == nullptr) return status;
  StoreBigEndian32(p, static_cast<uint32_t>(value >> 32));
  StoreBigEndian32(p + 4, static_cast<uint32_t>(value));
  Commit(8);
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteBool(absl::string_view field, bool value) {
  return WriteUint32(field, value ? 1 : 0);
}

absl::Status XdrWriter::WriteFixedOpaque(absl::string_view field,
                                         absl::Span<const uint8_t> bytes) {
  const size_t padded = XdrRoundUp(bytes.size());
  absl::Status status;
  uint8_t* p = Reserve(field, padded, &status);
  if (p == nullptr) return status;
  PutPadded(p, bytes);
  Commit(padded);
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteVarOpaque(absl::string_view field,
                                       absl::Span<const uint8_t> bytes) {
  if (bytes.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is longer than XDR can express"));
  }
  // Room for the whole item first, so that a failure writes nothing.
  const size_t needed = 4 + XdrRoundUp(bytes.size());
  absl::Status status;
  uint8_t* p = Reserve(field, needed, &status);
  if (p == nullptr) return status;
  StoreBigEndian32(p, static_cast<uint32_t>(bytes.size()));
  PutPadded(p + 4, bytes);
  Commit(needed);
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteString(absl::string_view field,
                                    absl::string_view text) {
  return WriteVarOpaque(
      field, absl::Span<const uint8_t>(
                 reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace rpcrdma
