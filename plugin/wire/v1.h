// RPC-over-RDMA version one transport header (RFC 5666 §4, as clarified by
// RFC 8166 §4 and §5).
#ifndef RPCRDMA_PLUGIN_WIRE_V1_H_
#define RPCRDMA_PLUGIN_WIRE_V1_H_

#include <cstdint>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/decode_error.h"

namespace rpcrdma::wire {

constexpr uint32_t kRpcRdmaVersion1 = 1;

enum class V1Proc : uint32_t {
  kMsg = 0,
  kNoMsg = 1,
  kMsgp = 2,  // deprecated by RFC 8166 §4.6, still decodable
  kDone = 3,  // deprecated by RFC 8166 §4.6, still decodable
  kError = 4,
};
absl::string_view V1ProcName(V1Proc proc);  // "RDMA_MSG", ...

enum class V1ErrorCode : uint32_t { kVers = 1, kChunk = 2 };
absl::string_view V1ErrorCodeName(V1ErrorCode code);  // "ERR_VERS", ...

struct V1Msg {  // RDMA_MSG: RPC message follows inline
  ChunkLists chunks;
  friend bool operator==(const V1Msg&, const V1Msg&) = default;
};
struct V1NoMsg {  // RDMA_NOMSG: RPC message is in a chunk
  ChunkLists chunks;
  friend bool operator==(const V1NoMsg&, const V1NoMsg&) = default;
};
struct V1Msgp {  // RDMA_MSGP (RFC 5666 §4.2): padded inline payload
  uint32_t align = 0;
  uint32_t thresh = 0;
  ChunkLists chunks;
  friend bool operator==(const V1Msgp&, const V1Msgp&) = default;
};
struct V1Done {  // RDMA_DONE: no body
  friend bool operator==(const V1Done&, const V1Done&) = default;
};
struct V1Error {  // RDMA_ERROR
  V1ErrorCode code = V1ErrorCode::kChunk;
  uint32_t vers_low = 0;   // ERR_VERS only
  uint32_t vers_high = 0;  // ERR_VERS only
  friend bool operator==(const V1Error&, const V1Error&) = default;
};

using V1Body = std::variant<V1Msg, V1NoMsg, V1Msgp, V1Done, V1Error>;

struct V1Header {
  uint32_t xid = 0;
  uint32_t vers = kRpcRdmaVersion1;
  uint32_t credits = 0;
  V1Body body;

  V1Proc proc() const { return static_cast<V1Proc>(body.index()); }
  // The chunk lists of MSG, NOMSG and MSGP; nullptr for DONE and ERROR.
  const ChunkLists* chunks() const;
  friend bool operator==(const V1Header&, const V1Header&) = default;
};

struct V1Decoded {
  V1Header header;
  // Octets of the transport header; for RDMA_MSG and RDMA_MSGP the RPC
  // payload starts here.
  size_t header_length = 0;
};

// Decodes the transport header at the start of `message`. Errors are
// classified: kBadVersion when rdma_vers != 1 (answer ERR_VERS), anything
// else answers ERR_CHUNK (RFC 8166 §4.5.2).
DecodeResult<V1Decoded> DecodeV1(absl::Span<const uint8_t> message,
                                 const ChunkLimits& limits = {});

// Encodes into `buffer`; returns the octets written or RESOURCE_EXHAUSTED
// when the buffer is too small.
absl::StatusOr<size_t> EncodeV1(const V1Header& header,
                                absl::Span<uint8_t> buffer);
std::vector<uint8_t> EncodeV1(const V1Header& header);
size_t V1EncodedSize(const V1Header& header);

// The RDMA_ERROR reply RFC 8166 §4.5.1-§4.5.2 require for a message that failed
// to decode: ERR_VERS carrying [supported_low, supported_high] for a bad
// version, ERR_CHUNK otherwise. rdma_xid is copied from the request (when at
// least 4 octets arrived); rdma_vers is always 1.
V1Header V1ErrorReplyFor(absl::Span<const uint8_t> bad_message,
                         const DecodeError& error, uint32_t credits,
                         uint32_t supported_low = 1,
                         uint32_t supported_high = 1);

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_V1_H_
