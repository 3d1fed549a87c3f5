// Write chunks for a unary reply's bulk values (protobuf/README.md,
// "Replies"; RFC 8166 §3.4.7): write chunk j takes the reply's bulk value
// j in path order; values beyond the chunks travel as before (inline or
// in the reply chunk). The client's half offers the chunks and reads the
// values back from them; the server's checks that each value fits its
// chunk before lending it to the transport.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_REPLY_CHUNKS_H_
#define RPCRDMA_PROTOBUF_RUNTIME_REPLY_CHUNKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "protobuf/runtime/bulk_fields.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/client_context.h"

namespace rpcrdma::protobuf::runtime {

// The client's offer, for one call: the context's ReceiveBulkInto memory,
// else buffers of its reply_bulk_sizes, else of the method's
// (rpcrdma.protobuf.reply_chunks).bulk_sizes, else none.
class ReplyChunkOffer : public ChunkedValues {
 public:
  // INVALID_ARGUMENT for a receive into what is not a singular `bytes`
  // field of the response, or two into one field.
  absl::Status Prepare(const google::protobuf::MethodDescriptor& method,
                       ClientContext& context,
                       google::protobuf::Message& response);
  // The memory of each write chunk, for CallRequest::results.
  std::vector<absl::Span<uint8_t>> results() const;
  // Before the reply is read: the octets the server wrote per chunk.
  void set_result_lengths(std::vector<uint32_t> lengths) {
    result_lengths_ = std::move(lengths);
  }

  uint32_t count() const override {
    return static_cast<uint32_t>(chunks_.size());
  }
  absl::Status Take(uint32_t index, uint32_t length, BulkValue& bulk) override;

  // After the reply was read: INTERNAL for a chunk written beyond the
  // reply's values (a server breaking this binding).
  absl::Status CheckUnusedChunks() const;
  // After an OK reply was read: each receive's value moves from the
  // response's field into its memory when it did not land there (it came
  // in the message, or its chunk took another field's value), and its
  // length is reported. RESOURCE_EXHAUSTED when it does not fit.
  absl::Status DeliverReceives();

 private:
  struct Chunk {
    // A receive's memory, or `owned`'s.
    absl::Span<uint8_t> memory;
    std::string owned;
    // The context's receive this chunk is, or -1.
    int receive = -1;
  };
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> result_lengths_;
  ClientContext* context_ = nullptr;
  google::protobuf::Message* response_ = nullptr;
  // Per receive: its value landed in its memory.
  std::vector<bool> landed_;
  uint32_t values_ = 0;
};

// The server's check of a reply against the write chunks the call offered
// (IncomingCall::write_chunk_capacities): RESOURCE_EXHAUSTED naming the
// value, its size and the chunk's when a value is larger than its chunk.
absl::Status CheckReplyFitsWriteChunks(
    const std::vector<BulkValue>& bulk, const std::vector<uint64_t>& capacities,
    const google::protobuf::Descriptor& response_type);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_REPLY_CHUNKS_H_
