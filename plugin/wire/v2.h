// RPC-over-RDMA version two transport header, exactly as
// draft-cel-nfsv4-rpcrdma-version-two-04 §6.2 defines it, with transport
// properties (§5).
#ifndef RPCRDMA_PLUGIN_WIRE_V2_H_
#define RPCRDMA_PLUGIN_WIRE_V2_H_

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/decode_error.h"

namespace rpcrdma::wire {

constexpr uint32_t kRpcRdmaVersion2 = 2;

enum class MsgDirection : uint32_t { kCall = 0, kReply = 1 };  // RFC 5531 §9
absl::string_view MsgDirectionName(MsgDirection d);  // "CALL" / "REPLY"

enum class V2Proc : uint32_t {
  kMsg = 0,
  kNoMsg = 1,
  kError = 4,
  kOptional = 5,
  kConnProp = 6,
  kReqProp = 7,
  kResProp = 8,
  kUpdProp = 9,
};
absl::string_view V2ProcName(V2Proc proc);  // "RDMA2_MSG", ...

enum class V2ErrorCode : uint32_t {
  kVers = 1,
  kBadXdr = 2,
  kInvalidProc = 3,
  kReadChunks = 4,
  kWriteChunks = 5,
  kSegments = 6,
  kWriteResource = 7,
  kReplyResource = 8,
  kInvalidOption = 9,
  kSystem = 10,
};
absl::string_view V2ErrorCodeName(V2ErrorCode code);  // "RDMA2_ERR_VERS", ...

// §5.2: property ids and the BRS enumeration.
constexpr uint32_t kPropIdRbsiz = 1;
constexpr uint32_t kPropIdBrs = 2;
enum class BackwardRequestSupport : uint32_t {
  kNone = 0,
  kInline = 1,
  kGeneral = 2,
};
// §5.2 Table 1 defaults.
constexpr uint32_t kDefaultRbsiz = 4096;
constexpr BackwardRequestSupport kDefaultBrs = BackwardRequestSupport::kInline;
// §5.4.2: property ids 4,294,967,040 to 4,294,967,295 are reserved for
// experimental use.
constexpr uint32_t kFirstExperimentalPropId = 4294967040u;
constexpr bool IsExperimentalPropId(uint32_t id) {
  return id >= kFirstExperimentalPropId;
}
// Table 2 (§5.3) numbers the four property operations as optional types
// 1..4, while §6.2 makes them procedures of their own (RDMA2_CONNPROP ..
// RDMA2_UPDPROP). We send them as the procedures; the four types are kept
// from any other use.
constexpr bool IsPropertyOperationOptType(uint32_t type) {
  return type >= 1 && type <= 4;
}

struct PropVal {  // rpcrdma2_propval
  uint32_t which = 0;
  std::vector<uint8_t> data;  // XDR of the property's type; empty = default
  friend bool operator==(const PropVal&, const PropVal&) = default;
};
using PropSet = std::vector<PropVal>;      // rpcrdma2_propset
using PropSubset = std::vector<uint32_t>;  // rpcrdma2_propsubset (bit mask)

// Known properties interpreted from a PropSet. Unknown ids are skipped
// (§5.1.1); a zero-length value means "the default" (§5.1.1).
struct KnownProperties {
  std::optional<uint32_t> rbsiz;
  std::optional<BackwardRequestSupport> brs;
  friend bool operator==(const KnownProperties&,
                         const KnownProperties&) = default;
};
// kBadPropertyValue if a known property's value is the wrong length or out
// of range.
DecodeResult<KnownProperties> InterpretProperties(const PropSet& set);
PropVal MakeRbsizProperty(uint32_t octets);
PropVal MakeBrsProperty(BackwardRequestSupport brs);
// §5.1.1: bit N mod 32 of word N div 32 selects element N.
bool SubsetContains(const PropSubset& subset, size_t index);
void SubsetAdd(PropSubset& subset, size_t index);

struct V2ChunkLists {  // rpcrdma2_chunk_lists
  MsgDirection direction = MsgDirection::kCall;
  uint32_t inv_handle = 0;  // §6.2.3; zero = no remote invalidation
  ChunkLists lists;
  friend bool operator==(const V2ChunkLists&, const V2ChunkLists&) = default;
};

struct V2Msg {
  V2ChunkLists chunks;
  friend bool operator==(const V2Msg&, const V2Msg&) = default;
};
struct V2NoMsg {
  V2ChunkLists chunks;
  friend bool operator==(const V2NoMsg&, const V2NoMsg&) = default;
};
struct V2Error {  // rpcrdma2_error; only the fields of `code`'s arm are used
  V2ErrorCode code = V2ErrorCode::kSystem;
  uint32_t vers_low = 0, vers_high = 0;  // kVers
  uint32_t max_chunks = 0;               // kReadChunks, kWriteChunks
  uint32_t max_segments = 0;             // kSegments
  uint32_t chunk_index = 0;              // kWriteResource
  uint32_t length_needed = 0;            // kWriteResource, kReplyResource
  friend bool operator==(const V2Error&, const V2Error&) = default;
};
struct V2Optional {
  MsgDirection optdir = MsgDirection::kCall;
  uint32_t opttype = 0;
  std::vector<uint8_t> optinfo;
  friend bool operator==(const V2Optional&, const V2Optional&) = default;
};
struct V2ConnProp {
  PropSet start;
  PropSubset nochg;
  friend bool operator==(const V2ConnProp&, const V2ConnProp&) = default;
};
struct V2ReqProp {
  PropSet want;
  friend bool operator==(const V2ReqProp&, const V2ReqProp&) = default;
};
struct V2ResProp {
  PropSubset done;
  PropSubset rejected;
  PropSet other;
  friend bool operator==(const V2ResProp&, const V2ResProp&) = default;
};
struct V2UpdProp {
  PropSet now;
  friend bool operator==(const V2UpdProp&, const V2UpdProp&) = default;
};

using V2Body = std::variant<V2Msg, V2NoMsg, V2Error, V2Optional, V2ConnProp,
                            V2ReqProp, V2ResProp, V2UpdProp>;

struct V2Header {
  uint32_t xid = 0;
  uint32_t vers = kRpcRdmaVersion2;
  uint32_t credits = 0;
  V2Body body;

  V2Proc proc() const;
  const V2ChunkLists* chunks() const;  // MSG and NOMSG; nullptr otherwise
  friend bool operator==(const V2Header&, const V2Header&) = default;
};

struct V2Decoded {
  V2Header header;
  size_t header_length = 0;  // the RPC payload of RDMA2_MSG starts here
};

// Limits beyond the chunk lists: bounds on property sets and opaque data.
struct V2Limits {
  ChunkLimits chunks;
  uint32_t max_properties = 64;
  uint32_t max_property_length = 1024;
  uint32_t max_subset_words = 64;
  uint32_t max_optinfo_length = 65536;
};

// kBadVersion when rdma_vers != 2 (RDMA2_ERR_VERS), kBadProc for an unknown
// proc (RDMA2_ERR_INVALID_PROC), kTooManyReadSegments / kTooManyWriteChunks /
// kTooManySegments (RDMA2_ERR_READ_CHUNKS / _WRITE_CHUNKS / _SEGMENTS), every
// other kind RDMA2_ERR_BAD_XDR. Known properties in property sets are
// validated (§5.1.1); unknown ones are kept but not interpreted.
DecodeResult<V2Decoded> DecodeV2(absl::Span<const uint8_t> message,
                                 const V2Limits& limits = {});

absl::StatusOr<size_t> EncodeV2(const V2Header& header,
                                absl::Span<uint8_t> buffer);
std::vector<uint8_t> EncodeV2(const V2Header& header);
size_t V2EncodedSize(const V2Header& header);

// The RDMA2_ERROR reply §6.2.4 requires for a message that failed to decode:
// xid and vers copied from the incoming header (vers only when it is
// readable), credits set to the connection's grant.
V2Header V2ErrorReplyFor(absl::Span<const uint8_t> bad_message,
                         const DecodeError& error, uint32_t credits,
                         uint32_t supported_low = 1,
                         uint32_t supported_high = 2);

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_V2_H_
