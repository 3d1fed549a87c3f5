#include "bridge/message_buffers.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::thrift::internal {

absl::Status MessageWriter::Write(const uint8_t* data, size_t length) {
  if (length == 0) return absl::OkStatus();
  if (size_ + length > limits_.max_message_size) {
    const uint64_t size = size_ + length;
    Reset();
    return absl::ResourceExhaustedError(absl::StrCat(
        "Thrift message of at least ", size,
        " octets exceeds the MaxMessageSize of ", limits_.max_message_size));
  }
  size_ += length;
  if (gathering_) {
    std::vector<uint8_t>& last = bulk_.back().owned;
    last.insert(last.end(), data, data + length);
    bulk_.back().data = last;
    return absl::OkStatus();
  }
  if (limits_.borrow && length >= limits_.bulk_threshold &&
      bulk_.size() + 1 < limits_.max_bulk_items) {
    Bulk item;
    item.data = absl::MakeConstSpan(data, length);
    bulk_.push_back(std::move(item));
    ++borrowed_items_;
    return absl::OkStatus();
  }
  std::vector<uint8_t>& run = CurrentRun();
  run.insert(run.end(), data, data + length);
  inline_size_ += length;
  if (inline_size_ > limits_.inline_budget) RunToItem();
  return absl::OkStatus();
}

// The current run becomes a bulk item, moved rather than copied; the last
// item a message may have gathers the rest of it.
void MessageWriter::RunToItem() {
  std::vector<uint8_t>& run = CurrentRun();
  inline_size_ -= run.size();
  Bulk item;
  item.owned = std::move(run);
  run.clear();
  item.data = item.owned;
  bulk_.push_back(std::move(item));
  if (bulk_.size() >= limits_.max_bulk_items) gathering_ = true;
}

wire::OutgoingMessage MessageWriter::View() const {
  wire::OutgoingMessage m;
  m.leading = leading_;
  for (const Bulk& b : bulk_) m.bulk.push_back({b.data, b.following});
  // The header is in the first octets, whichever runs hold them.
  uint8_t head[wire::kPeekLength];
  size_t have = 0;
  auto take = [&](absl::Span<const uint8_t> piece) {
    const size_t n = std::min(piece.size(), sizeof(head) - have);
    if (n > 0) std::memcpy(head + have, piece.data(), n);
    have += n;
  };
  take(m.leading);
  for (const wire::OutgoingMessage::Bulk& b : m.bulk) {
    if (have == sizeof(head)) break;
    take(b.data);
    take(b.following);
  }
  if (std::optional<wire::MessageInfo> info =
          wire::PeekMessageHeader(absl::MakeConstSpan(head, have))) {
    m.info = *std::move(info);
  }
  return m;
}

std::shared_ptr<void> MessageWriter::TakeOwned() {
  struct Owned {
    std::vector<uint8_t> leading;
    std::vector<Bulk> bulk;
  };
  auto owned = std::make_shared<Owned>();
  owned->leading = std::move(leading_);
  owned->bulk = std::move(bulk_);
  Reset();
  return owned;
}

void MessageWriter::Reset() {
  leading_.clear();
  bulk_.clear();
  size_ = 0;
  inline_size_ = 0;
  borrowed_items_ = 0;
  gathering_ = false;
}

void MessageReader::Reset(wire::IncomingMessage message,
                          std::shared_ptr<void> keep) {
  message_ = std::move(message);
  keep_ = std::move(keep);
  piece_ = 0;
  offset_ = 0;
  consumed_ = 0;
}

uint32_t MessageReader::Read(uint8_t* buffer, uint32_t length) {
  uint32_t done = 0;
  while (done < length && piece_ < message_.pieces.size()) {
    absl::Span<const uint8_t> piece = message_.pieces[piece_];
    const size_t n = std::min<size_t>(length - done, piece.size() - offset_);
    std::memcpy(buffer + done, piece.data() + offset_, n);
    done += static_cast<uint32_t>(n);
    offset_ += n;
    if (offset_ == piece.size()) {
      ++piece_;
      offset_ = 0;
    }
  }
  consumed_ += done;
  return done;
}

const uint8_t* MessageReader::Borrow(uint32_t* length) const {
  if (piece_ >= message_.pieces.size()) return nullptr;
  absl::Span<const uint8_t> piece = message_.pieces[piece_];
  const size_t available = piece.size() - offset_;
  if (available < *length) return nullptr;
  *length = static_cast<uint32_t>(
      std::min<size_t>(available, std::numeric_limits<uint32_t>::max()));
  return piece.data() + offset_;
}

bool MessageReader::Consume(uint32_t length) {
  if (message_.size - consumed_ < length) return false;
  consumed_ += length;
  while (length > 0) {
    absl::Span<const uint8_t> piece = message_.pieces[piece_];
    const size_t n = std::min<size_t>(length, piece.size() - offset_);
    offset_ += n;
    length -= static_cast<uint32_t>(n);
    if (offset_ == piece.size()) {
      ++piece_;
      offset_ = 0;
    }
  }
  return true;
}

}  // namespace rpcrdma::thrift::internal
