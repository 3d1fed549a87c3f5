// The engine's vocabulary (engine.h): the memory and budget interfaces
// it calls, the actions it returns, the calls and replies it carries, its
// configuration and what it tells its owner about each message. engine.h
// describes the protocol decisions behind them.
#ifndef RPCRDMA_PLUGIN_ENGINE_ENGINE_TYPES_H_
#define RPCRDMA_PLUGIN_ENGINE_ENGINE_TYPES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/engine/version_two.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/private_data.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/buffer.h"
#include "rpcrdma/ids.h"

namespace rpcrdma::engine {

// A call the engine tracks, as a requester (a call it sent) or as a
// responder (a call it delivered): its own type, so that neither an XID, a
// handle nor an operation can be passed for it. Numbered from 1 per engine;
// CallId() names none.
struct CallTag;
using CallId = Id<CallTag>;
using OpId = uint64_t;

// Rights a peer gets on exposed memory (bit flags).
enum RemoteAccess : uint32_t {
  kRemoteRead = 1,   // the peer may RDMA Read it (read chunks)
  kRemoteWrite = 2,  // the peer may RDMA Write it (write and reply chunks)
};

// Gives memory a handle the peer can use. Implemented by the api layer on
// top of the fabric (a memory window bound before the Send that advertises
// it) and by a fake in tests. Expose is synchronous so the engine can encode
// the segment in the header it is building; revoking a handle is an action
// (Invalidate) whose completion comes back as OnInvalidated.
class MemoryExposer {
 public:
  virtual ~MemoryExposer() = default;
  // Returns the segment naming `memory` (handle, length, offset as the peer
  // must name it). `memory` stays valid until the handle is invalidated.
  virtual absl::StatusOr<wire::Segment> Expose(absl::Span<uint8_t> memory,
                                               uint32_t access) = 0;
};

// Memory the responder may hold for incoming calls, shared by several
// engines (a Server's connections): RFC 5666 §11 asks a responder to
// protect itself from a requester that names large chunks. Thread-safe when
// shared across threads. An engine reserves a call's reassembly size before
// it allocates anything for it and releases it once the call's reply has
// been sent (or the call is dropped).
class ReassemblyBudget {
 public:
  virtual ~ReassemblyBudget() = default;
  // Takes `bytes` when that much is free now.
  virtual bool TryReserve(uint64_t bytes) = 0;
  virtual void Release(uint64_t bytes) = 0;
  // The most that can ever be reserved: a call above it is never served.
  virtual uint64_t capacity() const = 0;
};

// ---- Actions -------------------------------------------------------------

// Post `count` more receive buffers of at least `buffer_size` octets.
// Receives are posted per credit (RFC 8166 §3.3.1); every consumed receive
// is replaced at once, so the posted count stays at Config::credits plus
// the backchannel receives (RFC 8167 §3.2; Engine::receives_posted()).
struct PostReceives {
  uint32_t count = 0;
  uint32_t buffer_size = 0;
};
// Send `bytes` (transport header plus any inline payload). With
// `invalidate`, a Send With Invalidate of that handle of the peer's
// (RFC 8797 §4.1). Completes with OnSendComplete(op).
struct Send {
  OpId op = 0;
  std::vector<uint8_t> bytes;
  std::optional<uint32_t> invalidate;
};
// RDMA Read the peer's `source` into `destination` (engine-owned memory,
// valid until OnReadComplete(op) or OnDisconnected). Completes with
// OnReadComplete(op).
struct RdmaRead {
  OpId op = 0;
  wire::Segment source;
  absl::Span<uint8_t> destination;
};
// RDMA Write `source` into the peer's `target` (source valid until the
// Send of the same reply completes). Ordered before the Send that follows
// it; no completion is required.
struct RdmaWrite {
  OpId op = 0;
  absl::Span<const uint8_t> source;
  wire::Segment target;
};
// Revoke a handle this side exposed. Report OnInvalidated(handle) only once
// the peer can no longer use it.
struct Invalidate {
  uint32_t handle = 0;
};
// Responder: a complete incoming call, ready for the upper layer.
struct DeliverCall {
  CallId call;
  uint32_t xid = 0;
  Buffer message;  // the reassembled RPC call stream
  // Capacities the requester offered for the reply (RFC 8166 §3.4.7,
  // §3.5.4): octets per write chunk, and of the reply chunk (0 if none).
  // 64 bits: a chunk of many segments may exceed 4 GiB.
  std::vector<uint64_t> write_chunk_capacities;
  uint64_t reply_chunk_capacity = 0;
};
// Responder: the reply to `call` has been sent; the DdpResult memory given
// to Reply() may be reused.
struct ReplySent {
  CallId call;
};
// Requester: the call completed. All its handles are invalidated.
struct CompleteCall {
  CallId call;
  uint32_t xid = 0;
  Buffer reply;  // the reduced reply stream
  // Octets written into each write chunk the reply returned, in write list
  // order (at most one per DdpResult the call named).
  std::vector<uint32_t> result_lengths;
};
// Requester: the call failed. All its handles are invalidated.
struct FailCall {
  CallId call;
  absl::Status status;
  // The call never left: it was still waiting for a credit when the
  // connection was lost, so the peer cannot have run it and the owner may
  // send it again on the next connection whatever its retry policy.
  bool never_sent = false;
  // For a call that never left, its stream, handed back (the owner gave
  // it to the engine without keeping a copy).
  std::vector<uint8_t> unsent_xdr = {};
};

// The peer broke a rule that leaves no way to go on with this connection
// (for example a requester that exceeds its credit grant, RFC 8166
// §3.3.1): the driver disconnects, naming `reason`, and then reports
// OnDisconnected as for any loss. The engine ignores further receives.
struct CloseConnection {
  absl::Status reason;
};
using Action =
    std::variant<PostReceives, Send, RdmaRead, RdmaWrite, Invalidate,
                 DeliverCall, ReplySent, CompleteCall, FailCall,
                 CloseConnection, PropertiesAnswered, PropertiesRequested,
                 DeliverOptional, OptionalAnswered>;
using Actions = std::vector<Action>;

// ---- Calls and replies -----------------------------------------------------

struct DdpArgument {
  uint32_t position = 0;  // XDR position in the reduced call stream
  absl::Span<uint8_t> data;
};

struct OutgoingCall {
  // The reduced RPC call stream; starts with the XID (rdma_xid is copied
  // from it, RFC 8166 §4.1) and msg_type CALL.
  std::vector<uint8_t> xdr;
  std::vector<DdpArgument> arguments;
  // Destinations of the DDP-eligible results, one write chunk each.
  std::vector<absl::Span<uint8_t>> results;
  // Largest reduced reply stream the caller accepts.
  uint32_t max_reply_size = 0;
};

struct DdpResult {
  uint32_t position = 0;  // XDR position in the reduced reply stream
  absl::Span<const uint8_t> data;
};

struct OutgoingReply {
  std::vector<uint8_t> xdr;  // the reduced RPC reply stream
  std::vector<DdpResult> results;
};

// ---- Configuration ----------------------------------------------------------

struct Config {
  // What this side offers in RFC 8797 private data.
  wire::PrivateData local = {.remote_invalidation = true,
                             .send_size = wire::kMinInlineSize,
                             .receive_size = wire::kMinInlineSize};
  // Receives posted and credits requested/granted (RFC 8166 §3.3.1).
  uint32_t credits = 32;
  bool requester = true;
  bool responder = true;
  // Responder decode limits, checked before anything is allocated.
  wire::ChunkLimits limits = {.max_read_segments = 16,
                              .max_write_chunks = 8,
                              .max_segments_per_chunk = 16};
  // Largest reassembled incoming call the responder accepts.
  uint32_t max_call_size = 1u << 20;
  // Responder: octets of incoming calls this connection may hold at once,
  // from reassembly until the reply has been sent (with the shared budget
  // given to the constructor, if any, on top). 0 = no per-connection bound.
  uint64_t max_reassembly_bytes = 0;
  // Largest segment one exposure may cover; longer buffers are split.
  uint32_t max_segment_size = 1u << 20;
  // Requester: segments one call's transport header may name, all lists
  // together (Linux: RPCRDMA_MAX_HDR_SEGS, 8). A call whose read chunks
  // would exceed it goes as a long call instead; one that still exceeds it
  // fails with RESOURCE_EXHAUSTED.
  uint32_t max_header_segments = 8;
  // Client (requester role): backward calls this side accepts at once
  // (RFC 8167 §3.1); that many receives are posted beyond `credits`.
  // 0 = no backchannel.
  uint32_t backchannel_credits = 0;
  // Server (responder role only): the client's backchannel_credits as the
  // upper layer learned it (e.g. NFSv4.1 CREATE_SESSION); the most backward
  // calls this side has outstanding. 0 = StartCall is refused.
  uint32_t peer_backchannel_credits = 0;
  // Requester: the RPC-over-RDMA version offered first on every connection
  // (draft-cel-nfsv4-rpcrdma-version-two-04 §7). With 2, the first message
  // is an RDMA2_CONNPROP with rdma_vers 2 and no call goes out until the
  // peer has answered it: its own RDMA2_CONNPROP selects version two for
  // the connection; ERR_VERS with a range holding 1 selects version one
  // when `version_fallback` allows it (§7.2).
  uint32_t offered_version = 1;
  bool version_fallback = true;
  // Responder: a client whose first message is an RDMA2_CONNPROP gets this
  // side's RDMA2_CONNPROP and is served in version two (§7.1); without it
  // the CONNPROP is answered ERR_VERS 1..1.
  bool serve_version_two = false;
  // Version two: the largest receive buffer size this side grants when the
  // peer asks for a larger one (RDMA2_REQPROP, §5.3.2). Its receives are
  // posted that large from the start, so a grant holds at once (§5.2.1:
  // every pre-posted receive is at least the size advertised). 0: every
  // request is rejected.
  uint32_t max_receive_size_granted = 0;
  // Responder: a client that opens in version one is answered RDMA_ERROR
  // ERR_VERS 2..2 for every call (version_policy V2).
  bool require_version_two = false;
  // Version two: experimental properties (§5.4.2) this side states in its
  // RDMA2_CONNPROP; optional message types it serves (§4.1: others are
  // answered RDMA2_ERR_INVALID_OPTION); whether its owner decides the
  // peer's requests to change experimental properties (PropertiesRequested;
  // otherwise they are rejected).
  wire::PropSet experimental_properties = {};
  std::set<uint32_t> optional_types = {};
  bool decides_properties = false;
};

struct ConnectionParams {
  // The peer's RDMA-CM private data (accept or connect request), searched
  // for the RFC 8797 magic; absent or invalid means the §5.1 defaults.
  std::vector<uint8_t> peer_private_data;
  // RDMA Reads this side may have outstanding (min of our ORD and the
  // peer's IRD as negotiated); at least 1 is used.
  uint32_t max_outstanding_reads = 1;
  // XID of the version-two probe (Config::offered_version 2); the api
  // layer draws it like any other XID.
  uint32_t version_probe_xid = 0;
};

// ---- What the engine tells its owner ---------------------------------------

// What the engine made of a message it sent or received, for its owner's
// counters and logs: the owner need not decode the message a second time.
struct MessageSeen {
  bool sent = false;
  uint32_t xid = 0;
  // The version-one header; null when the message was not one the engine
  // could decode (then `error` says why, for a received one) or was a
  // version-two RDMA2_ERROR (`v2_error`, draft-04 §7.2).
  const wire::V1Header* header = nullptr;
  // An RPC call (RFC 8167 §4: an RDMA_MSG whose msg_type is CALL, or an
  // RDMA_NOMSG with a read list), forward or backward.
  bool is_call = false;
  bool v2_error = false;
  const wire::DecodeError* error = nullptr;
  // With v2_error: the code of the RDMA2_ERROR.
  std::optional<wire::V2ErrorCode> v2_code = std::nullopt;
  // For an RDMA_ERROR this side sends: why, in words for the log (what did
  // not fit and what the peer should change); empty when there is nothing
  // to add to the error's code.
  absl::string_view why = {};
};
using MessageObserver = std::function<void(const MessageSeen&)>;

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_ENGINE_TYPES_H_
