#include "plugin/wire/xdr.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rpcrdma::wire {

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

absl::Status XdrWriter::Reserve(absl::string_view field, size_t needed) {
  if (buffer_.size() - offset_ < needed) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no room for ", field, " at offset ", offset_, ": need ",
                     needed, " octets, buffer has ", buffer_.size() - offset_));
  }
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteUint32(absl::string_view field, uint32_t value) {
  if (absl::Status s = Reserve(field, 4); !s.ok()) return s;
  StoreBigEndian32(buffer_.data() + offset_, value);
  offset_ += 4;
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteUint64(absl::string_view field, uint64_t value) {
  if (absl::Status s = Reserve(field, 8); !s.ok()) return s;
  StoreBigEndian32(buffer_.data() + offset_,
                   static_cast<uint32_t>(value >> 32));
  StoreBigEndian32(buffer_.data() + offset_ + 4, static_cast<uint32_t>(value));
  offset_ += 8;
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteBool(absl::string_view field, bool value) {
  return WriteUint32(field, value ? 1 : 0);
}

absl::Status XdrWriter::WriteFixedOpaque(absl::string_view field,
                                         absl::Span<const uint8_t> bytes) {
  size_t padded = XdrRoundUp(bytes.size());
  if (absl::Status s = Reserve(field, padded); !s.ok()) return s;
  if (!bytes.empty()) {
    std::memcpy(buffer_.data() + offset_, bytes.data(), bytes.size());
  }
  if (padded > bytes.size()) {
    std::memset(buffer_.data() + offset_ + bytes.size(), 0,
                padded - bytes.size());
  }
  offset_ += padded;
  return absl::OkStatus();
}

absl::Status XdrWriter::WriteVarOpaque(absl::string_view field,
                                       absl::Span<const uint8_t> bytes) {
  if (bytes.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is longer than XDR can express"));
  }
  if (absl::Status s = Reserve(field, 4 + XdrRoundUp(bytes.size())); !s.ok()) {
    return s;
  }
  StoreBigEndian32(buffer_.data() + offset_,
                   static_cast<uint32_t>(bytes.size()));
  offset_ += 4;
  return WriteFixedOpaque(field, bytes);
}

}  // namespace rpcrdma::wire
