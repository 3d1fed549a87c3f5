// Helpers shared by the engine's source files (requester, responder and
// connection handling); not part of the engine's interface.
#ifndef RPCRDMA_PLUGIN_ENGINE_ENGINE_UTIL_H_
#define RPCRDMA_PLUGIN_ENGINE_ENGINE_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

// RFC 8166 §4.5 and the Linux server: a call header shorter than the
// smallest RDMA_MSG header (four fixed words and three empty lists) is
// dropped without a reply.
inline constexpr size_t kMinCallHeader = 28;
// The smallest message a requester can receive: RDMA_ERROR with ERR_CHUNK
// (four fixed words and the error code), the Linux client's
// RPCRDMA_HDRLEN_ERR.
inline constexpr size_t kMinReplyHeader = 20;
// The shortest message delivered as an RPC call: the six fixed words of an
// RPC call header (RFC 5531 §9: XID, msg_type, rpcvers, prog, vers, proc).
// Linux's svc_process_common drops anything shorter; a missing credential
// or verifier is the RPC layer's to answer (with an RPC error reply).
inline constexpr size_t kMinRpcCallHeader = 24;
// RPC msg_type CALL (RFC 5531 §9), the word after the XID.
inline constexpr uint32_t kRpcCall = 0;

// Direction (RFC 8167 §4): forward and backward calls use independent XID
// spaces, so the XID alone cannot tell a reply. An RDMA_MSG whose RPC
// msg_type is CALL is a call, and so is an RDMA_NOMSG with a read list (a
// long call, RFC 8166 §3.5.3; a reply never carries a read list).
// `rpc_message`: what follows the transport header.
inline bool CarriesCall(const wire::V1Header& header,
                        absl::Span<const uint8_t> rpc_message) {
  if (header.proc() == wire::V1Proc::kMsg) {
    return rpc_message.size() >= 8 &&
           LoadBigEndian32(rpc_message.data() + 4) == kRpcCall;
  }
  return header.proc() == wire::V1Proc::kNoMsg &&
         !header.chunks()->reads.empty();
}

// rdma_vers and rdma_proc of a message, without decoding the rest.
inline bool IsV2Proc(absl::Span<const uint8_t> bytes, wire::V2Proc proc) {
  return bytes.size() >= 16 &&
         LoadBigEndian32(bytes.data() + 4) == wire::kRpcRdmaVersion2 &&
         LoadBigEndian32(bytes.data() + 12) == static_cast<uint32_t>(proc);
}

// A length as an XDR uint32, saturating (a reply's size in an error).
inline uint32_t Clamp32(uint64_t value) {
  return static_cast<uint32_t>(
      std::min<uint64_t>(value, std::numeric_limits<uint32_t>::max()));
}

// A version-one header in its version-two form (draft-04 §6.2): RDMA_MSG
// and RDMA_NOMSG carry the same chunk lists with the direction made
// explicit (§6.2.2) and `inv_handle` offered for remote invalidation
// (§6.2.3, 0 for none);
// RDMA_ERROR ERR_VERS keeps its range, ERR_CHUNK becomes RDMA2_ERR_BAD_XDR.
// Responder::SendError builds the other version-two errors itself.
inline wire::V2Header ToV2Header(const wire::V1Header& header, bool is_call,
                                 uint32_t inv_handle = 0) {
  wire::V2Header v2;
  v2.xid = header.xid;
  v2.vers = wire::kRpcRdmaVersion2;
  v2.credits = header.credits;
  const wire::MsgDirection direction =
      is_call ? wire::MsgDirection::kCall : wire::MsgDirection::kReply;
  if (const auto* msg = std::get_if<wire::V1Msg>(&header.body)) {
    v2.body = wire::V2Msg{{direction, inv_handle, msg->chunks}};
  } else if (const auto* nomsg = std::get_if<wire::V1NoMsg>(&header.body)) {
    v2.body = wire::V2NoMsg{{direction, inv_handle, nomsg->chunks}};
  } else if (const auto* err = std::get_if<wire::V1Error>(&header.body)) {
    wire::V2Error e;
    e.code = err->code == wire::V1ErrorCode::kVers ? wire::V2ErrorCode::kVers
                                                   : wire::V2ErrorCode::kBadXdr;
    e.vers_low = err->vers_low;
    e.vers_high = err->vers_high;
    v2.body = e;
  }
  return v2;
}

// memcpy that accepts an empty copy from or to a null pointer (an empty
// Buffer or vector has one), which memcpy itself leaves undefined.
inline void CopyBytes(void* to, const void* from, size_t n) {
  if (n != 0) std::memcpy(to, from, n);
}

// A DDP item at its XDR position in a reduced stream.
struct Item {
  uint32_t position;
  absl::Span<const uint8_t> data;
};

// Rebuilds an XDR stream from its reduced form by inserting each item with
// its XDR roundup (RFC 4506 §4.10) at its position. Positions are validated
// (non-decreasing, within the stream) by the caller.
std::vector<uint8_t> InsertItems(absl::Span<const uint8_t> reduced,
                                 absl::Span<const Item> items);
// The same into `out`, which must hold InsertedSize(reduced, items) octets.
size_t InsertedSize(absl::Span<const uint8_t> reduced,
                    absl::Span<const Item> items);
void InsertItemsInto(absl::Span<const uint8_t> reduced,
                     absl::Span<const Item> items, absl::Span<uint8_t> out);

uint64_t ChunkLength(const wire::WriteChunk& chunk);

// Checks a chunk the responder returned against the one this side offered
// (same handles, lengths within what was offered) and returns the octets it
// reports as written.
absl::StatusOr<uint32_t> ReturnedLength(const wire::WriteChunk& returned,
                                        const wire::WriteChunk& offered,
                                        absl::string_view what);

// Fills a returned chunk: the offered segments with the lengths actually
// used, `length` octets spread over them in order (RFC 8166 §3.4.7; an
// unused chunk comes back with every length zero, as the Linux server does).
wire::WriteChunk FillChunk(const wire::WriteChunk& offered, size_t length);

// What a caller sees for a version-two error (draft-04 §6.2.4): a status
// naming the code and its values (version_two.cc).
absl::Status V2ErrorStatus(const wire::V2Error& e);

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_ENGINE_UTIL_H_
