// The octets of one Thrift message between a protocol and the RPC layer.
//
// MessageWriter collects what a protocol stack writes and cuts it into the
// runs of a thrift_message (bridge/wire/thrift_xdr.h): small writes are
// copied into inline runs; a write of at least the bulk threshold becomes
// a bulk item that lends the writer's memory (with TBinaryProtocol and
// TCompactProtocol, the content of a binary or string field: the caller's
// own std::string), so it travels as a read or write chunk without a copy.
// An inline run that grows past the inline budget becomes a bulk item of
// its own (moved, not copied), which keeps the reduced stream within one
// RDMA Send. Bulk items are bounded (the transport header has room for so
// many segments, RFC 8166 §3.4); once they run out, the rest of the
// message is copied into one last item.
//
// MessageReader hands a received message to a protocol: read, and borrow
// / consume (the zero-copy read hook Thrift's readBinary tries first).
#ifndef RPCRDMA_BRIDGE_MESSAGE_BUFFERS_H_
#define RPCRDMA_BRIDGE_MESSAGE_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "bridge/wire/thrift_xdr.h"

namespace rpcrdma::thrift::internal {

struct WriterLimits {
  // A write this long or longer is a bulk item.
  size_t bulk_threshold = 4096;
  // Inline octets the message may hold before a run becomes an item.
  size_t inline_budget = 3072;
  size_t max_bulk_items = 5;
  // Whether large writes may lend their memory (until the message has been
  // sent and answered); otherwise they are copied.
  bool borrow = true;
  uint64_t max_message_size = 100u << 20;
};

class MessageWriter {
 public:
  void set_limits(const WriterLimits& limits) { limits_ = limits; }
  const WriterLimits& limits() const { return limits_; }

  // RESOURCE_EXHAUSTED (and the message is dropped) when the message would
  // exceed max_message_size.
  absl::Status Write(const uint8_t* data, size_t length);
  bool empty() const { return size_ == 0; }
  uint64_t size() const { return size_; }
  // Whether some bulk item lends memory the writer does not own.
  bool borrows() const { return borrowed_items_ > 0; }

  // The message as written, with its header read from its first octets.
  // Valid until the next Write, Take or Reset.
  wire::OutgoingMessage View() const;
  // The runs the writer copied: they must outlive every use of View().
  std::shared_ptr<void> TakeOwned();
  void Reset();

 private:
  struct Bulk {
    absl::Span<const uint8_t> data;  // borrowed, or the data of `owned`
    std::vector<uint8_t> owned;
    std::vector<uint8_t> following;
  };
  std::vector<uint8_t>& CurrentRun() {
    return bulk_.empty() ? leading_ : bulk_.back().following;
  }
  void RunToItem();

  WriterLimits limits_;
  std::vector<uint8_t> leading_;
  std::vector<Bulk> bulk_;
  uint64_t size_ = 0;
  size_t inline_size_ = 0;
  size_t borrowed_items_ = 0;
  bool gathering_ = false;  // the last item takes everything now
};

class MessageReader {
 public:
  // `keep` owns the memory the pieces point into.
  void Reset(wire::IncomingMessage message, std::shared_ptr<void> keep);
  void Clear() { Reset({}, nullptr); }
  // Up to `length` octets of the current piece; 0 at the message's end.
  uint32_t Read(uint8_t* buffer, uint32_t length);
  // TTransport::borrow: the next `*length` octets when one piece holds them
  // (then *length says how many it holds), else nullptr.
  const uint8_t* Borrow(uint32_t* length) const;
  // False when fewer octets remain.
  bool Consume(uint32_t length);
  bool exhausted() const { return consumed_ == message_.size; }
  bool active() const { return keep_ != nullptr; }
  uint64_t size() const { return message_.size; }
  uint64_t consumed() const { return consumed_; }
  const wire::MessageInfo& info() const { return message_.info; }

 private:
  wire::IncomingMessage message_;
  std::shared_ptr<void> keep_;
  size_t piece_ = 0;
  size_t offset_ = 0;  // within the current piece
  uint64_t consumed_ = 0;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_MESSAGE_BUFFERS_H_
