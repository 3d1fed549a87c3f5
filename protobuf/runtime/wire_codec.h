// The protobuf Upper Layer Binding's message bodies after the RFC 5531
// headers (protobuf/README.md, "Call and reply bodies"):
//
//   call body:   uint32 timeout_ms (0: none); metadata; payload
//   reply body:  uint32 code; string message<kMaxStatusMessage>; metadata;
//                payload when code is 0 (OK)
//   metadata:    uint32 count (at most kMaxMetadataEntries);
//                { string key<kMaxMetadataKey>; opaque value<...> } * count
//   payload:     opaque message<> (the serialized message less its bulk
//                fields); uint32 bulk_count;
//                { uint32 steps; { uint32 field; uint32 index } * steps;
//                  opaque value<> (DDP-eligible) } * bulk_count
//
// Streams (protobuf/README.md, "Streams"):
//   open reply:  as the reply body; stream_id (uint64) in place of the
//                payload when code is 0
//   NEXT call:   uint64 stream_id; uint64 seq
//   NEXT reply:  uint32 kind; kind 0 (a message): payload;
//                kind 1 (the end): uint32 code; string message; metadata
//   CANCEL call: uint64 stream_id; its reply: code, message, metadata
//   SEND call:   uint64 stream_id; uint64 seq; payload; its reply: code,
//                message, metadata
//   HALF_CLOSE:  uint64 stream_id; uint64 count; its reply as SEND's
#ifndef RPCRDMA_PROTOBUF_RUNTIME_WIRE_CODEC_H_
#define RPCRDMA_PROTOBUF_RUNTIME_WIRE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "google/protobuf/message.h"
#include "protobuf/runtime/bulk_fields.h"
#include "rpcrdma/protobuf/metadata.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::protobuf::runtime {

inline constexpr uint32_t kMaxStatusMessage = 65536;

// The RFC 5531 call header of every call the adapter makes (version
// kProgramVersion, AUTH_NONE both ways), encoded into a new call stream;
// the caller appends the procedure's arguments.
std::vector<uint8_t> AdapterCallHeader(uint32_t xid, uint32_t program,
                                       uint32_t procedure);

// A DDP-eligible item: its position in the reduced stream (after its
// length word, RFC 8166 §3.4.5) and the octets, which stay in the
// BulkValue they came from.
struct BulkItem {
  uint32_t position = 0;
  absl::Span<const uint8_t> octets;
};

// What a NEXT reply carries.
enum class StreamItem : uint32_t { kMessage = 0, kEnd = 1 };

struct NextArgs {
  uint64_t stream_id = 0;
  uint64_t seq = 0;
};
void AppendNextArgs(const NextArgs& args, std::vector<uint8_t>& out);
// Refuses octets after the arguments.
absl::Status ReadNextArgs(XdrReader& in, NextArgs& out);
absl::Status ReadStreamId(XdrReader& in, uint64_t& out);

// SEND's head (the payload follows) and HALF_CLOSE's arguments: a stream
// and a number, the message's seq or the count of messages sent.
struct StreamNumberArgs {
  uint64_t stream_id = 0;
  uint64_t number = 0;
};
void AppendStreamNumberArgs(const StreamNumberArgs& args,
                            std::vector<uint8_t>& out);
// Leaves what follows to the caller (SEND's payload; HALF_CLOSE checks
// that nothing does).
absl::Status ReadStreamNumberArgs(XdrReader& in, StreamNumberArgs& out);

// A status word, its message and metadata: the client's side of a reply
// body's head. `status` is the peer's; the result is the decoding's.
absl::Status ReadStatus(XdrReader& in, absl::Status& status,
                        Metadata& trailing);

void AppendMetadata(const Metadata& metadata, XdrWriter& out);
absl::Status ReadMetadata(XdrReader& in, Metadata& out);

// Appends `message` (its bulk fields already moved into `bulk`) and the
// bulk values' paths to `out`, leaving each value's octets out of the
// stream (its length word stays) and naming it in `items`.
// RESOURCE_EXHAUSTED when the message is too large for XDR's length word.
absl::Status AppendPayload(const google::protobuf::Message& message,
                           const std::vector<BulkValue>& bulk,
                           std::vector<uint8_t>& out,
                           std::vector<BulkItem>& items);
// The bulk values a reply carried in write chunks (RFC 8166 §3.4.7): the
// first count() of the payload, of which the reduced stream keeps only the
// length word (protobuf/README.md, "Replies").
class ChunkedValues {
 public:
  virtual ~ChunkedValues() = default;
  virtual uint32_t count() const = 0;
  // Value `index` (below count()), `length` octets as its length word
  // says: its octets into `bulk.value` (whose path is read), or why the
  // write chunk does not hold them.
  virtual absl::Status Take(uint32_t index, uint32_t length,
                            BulkValue& bulk) = 0;
};

// Parses a payload (with every value back in the stream, or the first
// ones in `chunked`'s write chunks) into `message`.
absl::Status ReadPayload(XdrReader& in, google::protobuf::Message& message,
                         ChunkedValues* chunked = nullptr);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_WIRE_CODEC_H_
