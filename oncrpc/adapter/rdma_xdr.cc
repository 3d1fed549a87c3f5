#include "oncrpc/adapter/rdma_xdr.h"

#include <cstring>
#include <type_traits>
#include <utility>

#include "rpcrdma/xdr.h"

namespace rpcrdma::oncrpc {
namespace {

// The padding octets libtirpc's xdr_opaque reads or writes after `length`
// octets (RFC 4506 §4.10): its second GETBYTES/PUTBYTES call.
u_int Roundup(u_int length) { return static_cast<u_int>(XdrPad(length)); }

// An encoder is never asked to decode, nor a decoder to encode.
bool_t RefuseGetLong(XDR*, long*) { return FALSE; }
bool_t RefusePutLong(XDR*, const long*) { return FALSE; }
bool_t RefuseGetBytes(XDR*, char*, u_int) { return FALSE; }
bool_t RefusePutBytes(XDR*, const char*, u_int) { return FALSE; }
void DestroyNothing(XDR*) {}

}  // namespace

RdmaXdrEncoder::RdmaXdrEncoder(Message message) : message_(message) {
  static const __rpc_xdr::xdr_ops kOps = {RefuseGetLong,
                                          &RdmaXdrEncoder::PutLong,
                                          RefuseGetBytes,
                                          &RdmaXdrEncoder::PutBytes,
                                          &RdmaXdrEncoder::GetPosition,
                                          &RdmaXdrEncoder::SetPosition,
                                          &RdmaXdrEncoder::Inline,
                                          DestroyNothing,
                                          &RdmaXdrEncoder::Control};
  xdr_.x_op = XDR_ENCODE;
  xdr_.x_ops = &kOps;
  xdr_.x_private = this;
  stream_.reserve(256);
}

std::vector<uint8_t> RdmaXdrEncoder::TakeStream() {
  stream_.resize(cursor_);
  std::vector<uint8_t> out = std::move(stream_);
  stream_.clear();
  cursor_ = 0;
  return out;
}

RdmaXdrEncoder& RdmaXdrEncoder::Of(XDR* xdrs) {
  return *static_cast<RdmaXdrEncoder*>(xdrs->x_private);
}

void RdmaXdrEncoder::Write(const void* data, size_t length) {
  if (cursor_ + length > stream_.size()) stream_.resize(cursor_ + length);
  if (length != 0) std::memcpy(stream_.data() + cursor_, data, length);
  cursor_ += length;
}

bool_t RdmaXdrEncoder::PutLong(XDR* xdrs, const long* value) {
  RdmaXdrEncoder& self = Of(xdrs);
  uint8_t word[4];
  StoreBigEndian32(word, static_cast<uint32_t>(*value));
  self.Write(word, sizeof word);
  self.length_word_ = static_cast<uint32_t>(*value);
  self.roundup_to_drop_ = 0;
  return TRUE;
}

bool RdmaXdrEncoder::Eligible(u_int length, bool marked) const {
  // An empty opaque has nothing to place; a misaligned one (after a
  // fixed-length opaque) cannot have an XDR position.
  if (!ddp_ || length == 0 || cursor_ % 4 != 0) return false;
  if (!marked && (threshold_ == 0 || length < threshold_)) return false;
  if (!bounded_) return true;
  return items_.size() < capacities_.size() &&
         length <= capacities_[items_.size()];
}

bool_t RdmaXdrEncoder::PutBytes(XDR* xdrs, const char* data, u_int length) {
  RdmaXdrEncoder& self = Of(xdrs);
  // xdr_opaque puts an item's roundup right after its content; the reduced
  // stream has none (RFC 8166 §3.4.5).
  if (self.roundup_to_drop_ != 0) {
    const bool is_roundup = length == self.roundup_to_drop_;
    self.roundup_to_drop_ = 0;
    if (is_roundup) return TRUE;
  }
  // Only a variable-length opaque (its length word just put) is eligible:
  // the decoder finds write-chunk data by that word.
  const bool after_length_word =
      self.length_word_.has_value() && *self.length_word_ == length;
  self.length_word_.reset();
  if (after_length_word) {
    const bool marked = std::exchange(self.marked_, false);
    if (self.Eligible(length, marked)) {
      self.items_.push_back(
          {static_cast<uint32_t>(self.cursor_),
           absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data),
                               length)});
      self.roundup_to_drop_ = Roundup(length);
      return TRUE;
    }
  }
  self.Write(data, length);
  return TRUE;
}

u_int RdmaXdrEncoder::GetPosition(XDR* xdrs) {
  return static_cast<u_int>(Of(xdrs).cursor_);
}

bool_t RdmaXdrEncoder::SetPosition(XDR* xdrs, u_int position) {
  RdmaXdrEncoder& self = Of(xdrs);
  // Rewinding over an item would leave it at a position past the end.
  if (position > self.stream_.size() ||
      (!self.items_.empty() && position < self.items_.back().position)) {
    return FALSE;
  }
  self.cursor_ = position;
  self.length_word_.reset();
  self.roundup_to_drop_ = 0;
  return TRUE;
}

int32_t* RdmaXdrEncoder::Inline(XDR* xdrs, u_int length) {
  RdmaXdrEncoder& self = Of(xdrs);
  // rpcgen's inline fast paths must not bypass the DDP decision.
  if (length % 4 != 0 || self.cursor_ % 4 != 0 ||
      (self.ddp_ && self.threshold_ != 0 && length >= self.threshold_)) {
    return nullptr;
  }
  if (self.cursor_ + length > self.stream_.size()) {
    self.stream_.resize(self.cursor_ + length);
  }
  auto* out = reinterpret_cast<int32_t*>(self.stream_.data() + self.cursor_);
  self.cursor_ += length;
  self.length_word_.reset();
  self.roundup_to_drop_ = 0;
  return out;
}

bool_t RdmaXdrEncoder::Control(XDR* xdrs, int request, void* argument) {
  RdmaXdrEncoder& self = Of(xdrs);
  switch (request) {
    case XDR_RDMA_WRITE_CHUNK:
      if (self.message_ != Message::kCall || argument == nullptr) {
        return FALSE;
      }
      self.write_chunks_.push_back(
          *static_cast<const xdr_rdma_write_chunk*>(argument));
      return TRUE;
    case XDR_RDMA_REPLY_CHUNK:
      if (self.message_ != Message::kCall || argument == nullptr) {
        return FALSE;
      }
      self.reply_chunk_ = *static_cast<const u_int*>(argument);
      return TRUE;
    case XDR_RDMA_GET_DDP_THRESHOLD:
      if (argument == nullptr) return FALSE;
      *static_cast<u_int*>(argument) = self.ddp_ ? self.threshold_ : 0;
      return TRUE;
    case XDR_RDMA_DDP_NEXT:
      self.marked_ = true;
      return TRUE;
    default:
      return FALSE;
  }
}

RdmaXdrDecoder::RdmaXdrDecoder(absl::Span<const uint8_t> stream,
                               std::vector<Chunk> chunks,
                               uint32_t min_chunked_length, uint32_t threshold)
    : stream_(stream),
      chunks_(std::move(chunks)),
      min_chunked_length_(min_chunked_length),
      threshold_(threshold) {
  static const __rpc_xdr::xdr_ops kOps = {
      &RdmaXdrDecoder::GetLong,     RefusePutLong,
      &RdmaXdrDecoder::GetBytes,    RefusePutBytes,
      &RdmaXdrDecoder::GetPosition, &RdmaXdrDecoder::SetPosition,
      &RdmaXdrDecoder::Inline,      DestroyNothing,
      &RdmaXdrDecoder::Control};
  xdr_.x_op = XDR_DECODE;
  xdr_.x_ops = &kOps;
  xdr_.x_private = this;
}

void RdmaXdrDecoder::SetPosition(size_t position) {
  cursor_ = std::min(position, stream_.size());
  length_word_.reset();
  roundup_to_fill_ = 0;
}

void RdmaXdrDecoder::SkipEmptyChunks() {
  while (next_chunk_ < chunks_.size() && chunks_[next_chunk_].empty()) {
    ++next_chunk_;
  }
}

size_t RdmaXdrDecoder::unconsumed_chunks() const {
  size_t left = 0;
  for (size_t i = next_chunk_; i < chunks_.size(); ++i) {
    if (!chunks_[i].empty()) ++left;
  }
  return left;
}

RdmaXdrDecoder& RdmaXdrDecoder::Of(XDR* xdrs) {
  return *static_cast<RdmaXdrDecoder*>(xdrs->x_private);
}

bool_t RdmaXdrDecoder::GetLong(XDR* xdrs, long* value) {
  RdmaXdrDecoder& self = Of(xdrs);
  self.roundup_to_fill_ = 0;
  if (self.stream_.size() - self.cursor_ < 4) return FALSE;
  const uint32_t word = LoadBigEndian32(self.stream_.data() + self.cursor_);
  self.cursor_ += 4;
  *value = static_cast<int32_t>(word);
  self.length_word_ = word;
  return TRUE;
}

bool_t RdmaXdrDecoder::GetBytes(XDR* xdrs, char* data, u_int length) {
  RdmaXdrDecoder& self = Of(xdrs);
  if (self.roundup_to_fill_ != 0) {
    const bool is_roundup = length == self.roundup_to_fill_;
    self.roundup_to_fill_ = 0;
    if (is_roundup) {
      std::memset(data, 0, length);
      return TRUE;
    }
  }
  const bool after_length_word =
      self.length_word_.has_value() && *self.length_word_ == length;
  self.length_word_.reset();
  if (after_length_word) {
    const bool marked = std::exchange(self.marked_, false);
    self.SkipEmptyChunks();
    // The next write chunk's data takes the place of the next eligible
    // opaque of its length (RFC 8166 §3.4.7: its length word stayed in the
    // reply; rpcrdma/oncrpc/xdr_rdma.h has the rule).
    if (length != 0 && self.next_chunk_ < self.chunks_.size() &&
        self.chunks_[self.next_chunk_].size() == length &&
        (marked || length >= self.min_chunked_length_)) {
      const uint8_t* chunk = self.chunks_[self.next_chunk_++].data();
      ++self.chunks_taken_;
      if (reinterpret_cast<const uint8_t*>(data) != chunk) {
        std::memcpy(data, chunk, length);
      }
      self.roundup_to_fill_ = Roundup(length);
      return TRUE;
    }
  }
  if (self.stream_.size() - self.cursor_ < length) return FALSE;
  if (length != 0) {
    std::memcpy(data, self.stream_.data() + self.cursor_, length);
  }
  self.cursor_ += length;
  return TRUE;
}

u_int RdmaXdrDecoder::GetPosition(XDR* xdrs) {
  return static_cast<u_int>(Of(xdrs).cursor_);
}

bool_t RdmaXdrDecoder::SetPosition(XDR* xdrs, u_int position) {
  RdmaXdrDecoder& self = Of(xdrs);
  if (position > self.stream_.size()) return FALSE;
  self.SetPosition(position);
  return TRUE;
}

int32_t* RdmaXdrDecoder::Inline(XDR* xdrs, u_int length) {
  RdmaXdrDecoder& self = Of(xdrs);
  const uint8_t* at = self.stream_.data() + self.cursor_;
  if (self.stream_.size() - self.cursor_ < length ||
      reinterpret_cast<uintptr_t>(at) % alignof(int32_t) != 0) {
    return nullptr;
  }
  self.cursor_ += length;
  self.length_word_.reset();
  self.roundup_to_fill_ = 0;
  // libtirpc's inline interface hands out a writable pointer even when
  // decoding; rpcgen's routines only read through it.
  return reinterpret_cast<int32_t*>(const_cast<uint8_t*>(at));
}

bool_t RdmaXdrDecoder::Control(XDR* xdrs, int request, void* argument) {
  RdmaXdrDecoder& self = Of(xdrs);
  switch (request) {
    case XDR_RDMA_GET_DDP_THRESHOLD:
      if (argument == nullptr) return FALSE;
      *static_cast<u_int*>(argument) = self.threshold_;
      return TRUE;
    case XDR_RDMA_DDP_NEXT:
      self.marked_ = true;
      return TRUE;
    case XDR_RDMA_WRITE_CHUNKS_TAKEN:
      if (argument == nullptr) return FALSE;
      *static_cast<u_int*>(argument) = self.chunks_taken_;
      return TRUE;
    default:
      return FALSE;
  }
}

void FreeReplyVerifier(rpc_msg& reply) {
  // xdr_enum stores whatever integer the peer sent; reading it back as the
  // enum would be undefined for a value outside reply_stat.
  std::underlying_type_t<reply_stat> stat;
  std::memcpy(&stat, &reply.rm_reply.rp_stat, sizeof stat);
  opaque_auth& verifier = reply.acpted_rply.ar_verf;
  if (stat != MSG_ACCEPTED || verifier.oa_base == nullptr) return;
  XDR free_stream{};
  free_stream.x_op = XDR_FREE;
  (void)xdr_opaque_auth(&free_stream, &verifier);
}

}  // namespace rpcrdma::oncrpc
