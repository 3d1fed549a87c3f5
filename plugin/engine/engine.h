// The RPC-over-RDMA version one protocol engine: a deterministic, sans-I/O
// state machine for one connection (RFC 8166, the published clarification of
// RFC 5666, with RFC 8797 connection private data).
//
// Layering (docs/architecture.md): the engine sits on wire (pure codecs)
// beside the fabric (drivers), which it never sees; the api joins the two.
// The engine performs no I/O, owns no threads, reads no clock and never calls
// the fabric. The api layer feeds it events (connection established, receive
// and work completions, cancellation, disconnect) and carries out the actions
// it returns (post receives, Send, Send With Invalidate, RDMA Read/Write,
// invalidate a handle, deliver/complete/fail a call).
//
// Both roles live in one connection engine, each in a class of its own
// that Engine routes to (docs/architecture.md):
// - requester (requester.h): StartCall() sends forward calls, replies
//   complete them;
// - responder (responder.h): incoming calls are fetched, reassembled and
//   delivered (DeliverCall); Reply() answers them;
// - in version two, the control (control.h) keeps the properties and the
//   messages without RPC.
// A received message is a reply when its XID matches a call this side sent
// and still awaits, unless it is an RDMA_MSG whose RPC msg_type is CALL or
// an RDMA_NOMSG with a read list (RFC 8167 §4: forward and backward XIDs
// are independent, direction is told by msg_type); everything else is a
// call for the responder role (an engine without it drops it).
//
// Backchannel (RFC 8167), roles by configuration:
// - Client: requester role with Config::backchannel_credits > 0. Its
//   responder role (implied, even with Config::responder false) serves
//   backward calls; it posts credits + backchannel_credits receives
//   (§3.2) and grants backchannel_credits in every backward reply and
//   error (§3.1). With backchannel_credits 0 and the responder role off,
//   backward calls are dropped (their receive is replaced), as the Linux
//   client does without a backchannel service.
// - Server: responder role only (Config::requester false) with
//   Config::peer_backchannel_credits > 0. StartCall then issues backward
//   calls through the requester role: one outstanding until the first
//   backward reply, thereafter that reply's grant clamped to
//   [1, peer_backchannel_credits]; the rest wait in the queue. Every
//   backward call requests peer_backchannel_credits. The server posts
//   credits + peer_backchannel_credits receives so that every backward
//   reply finds one (§3.2). Forward replies keep granting Config::credits.
// - RPC-over-RDMA v1 has no transport-level negotiation of backchannel
//   resources: the upper layer settles them (NFSv4.1 CREATE_SESSION's
//   back-channel attributes) and configures both ends with the same value.
// - Backward calls and replies use the same code paths as forward ones,
//   so read, write and reply chunks work in the backward direction too
//   (RFC 8167 §4.3 allows them); a ULB that wants inline-only backward
//   operation simply names no DDP items.
//
// Upper Layer Binding contract (RFC 8166 §6), as this engine implements it:
// - A call is its XDR stream *reduced* by its DDP-eligible items: the stream
//   with the content octets and the XDR roundup of every DDP-eligible opaque
//   item removed (the item's length word stays). Each item is given as a
//   DdpArgument: its XDR position in the reduced stream (a multiple of four,
//   non-decreasing along the list) and a span of the caller's memory. The
//   engine inserts the items back (with zero roundup, RFC 4506 §4.10) when it
//   sends inline, or exposes them as read chunks at those positions (no
//   roundup in the chunk, RFC 8166 §3.4.6).
// - The caller names its DDP-eligible results, in XDR order, as spans of its
//   own memory: each becomes one write chunk (RFC 8166 §3.4.7) the responder
//   writes directly (zero copy). It also states the largest *reduced* reply
//   (the reply stream without the write-chunk results) it may receive; when
//   that reply plus its transport header may exceed the receive threshold,
//   the engine provisions a reply chunk of that size (RFC 8166 §3.5.4).
// - The completed reply is the reduced reply stream plus, per returned write
//   chunk, the actual number of octets the responder wrote (no roundup).
// - On the responder, DeliverCall carries the complete, reassembled call
//   stream (read chunks inserted at their positions with XDR roundup, or the
//   position-zero chunk as the whole message). A reply is again a reduced
//   stream plus DdpResult items at positions: item i goes into write chunk i
//   when the call offered one, otherwise inline at its position.
//
// Protocol decisions (RFC 8166 section numbers; "Linux" is the kernel's
// net/sunrpc/xprtrdma, the behavioural reference for v1):
// - Requester call form, first that fits the send threshold: inline
//   RDMA_MSG; RDMA_MSG with every non-empty DDP argument in a read chunk at
//   its position (§3.4.5); RDMA_NOMSG with the whole call in a position-zero
//   read chunk (§3.5.3). Nothing is exposed for a form that is not used.
//   A transport header that alone exceeds the threshold fails the call
//   with RESOURCE_EXHAUSTED.
// - Reply chunk (§3.5.4) when max_reply_size plus the reply header (which
//   echoes the write list) exceeds the receive threshold.
// - Reply checks: returned chunks must match the offered handles, not
//   exceed offered lengths, and no more chunks than offered; a reply with
//   a read list, an RDMA_MSG that also used the reply chunk, an RDMA_NOMSG
//   without a used reply chunk, RDMA_MSGP/RDMA_DONE, or an undecodable
//   header fails the call with DATA_LOSS. RDMA_ERROR: ERR_VERS ->
//   FAILED_PRECONDITION (message carries the peer's range), ERR_CHUNK ->
//   INVALID_ARGUMENT. Unmatched replies are dropped.
// - Credits (§3.3.1): one call until the first reply; thereafter the grant
//   of the latest reply, clamped to [1, Config::credits] (a zero grant would
//   deadlock; Linux also treats it as one). Every call requests
//   Config::credits; every reply grants Config::credits, the receives this
//   side keeps posted for forward calls (backward calls: see above).
// - Responder: messages shorter than 28 octets are dropped (§4.5); a wrong
//   version is answered ERR_VERS 1..1 (§4.5.1); RDMA_DONE and RDMA_ERROR
//   are dropped and RDMA_MSGP answered ERR_CHUNK (as Linux does; RDMA_MSGP
//   and RDMA_DONE are deprecated, §4.6); every list is validated before
//   anything is allocated and ERR_CHUNK answers: read positions not a
//   multiple of four or decreasing, position zero in RDMA_MSG, RDMA_NOMSG
//   without a position-zero chunk first, a position past the base stream,
//   a reassembled call over Config::max_call_size, any decode failure
//   (limits in Config::limits), a write or reply chunk with no segments
//   (it could convey nothing; Linux's svcrdma refuses it as well).
// - Responder reply: inline RDMA_MSG when it fits; else RDMA_NOMSG through
//   the reply chunk; results beyond their write chunk's capacity, or a long
//   reply without a large enough reply chunk, get ERR_CHUNK (as Linux).
//   Unused write chunks are returned with every segment length zero.
//   Send With Invalidate only when both sides set R and every segment of
//   the call names the same handle (RFC 8797 §4.1, Linux's rule).
//
// - Credit enforcement (RFC 8166 §3.3.1): the responder counts calls
//   received and not yet answered; a call's credit is free once its reply
//   or error Send is emitted (the requester may reuse it on seeing the
//   reply, before the send completes). A call beyond the grant this side
//   advertises (Config::credits; a client serving backward calls:
//   backchannel_credits) ends the connection: CloseConnection with
//   RESOURCE_EXHAUSTED, and every later receive is ignored. The advertised
//   grant applies from the first call (the one-credit start protects the
//   requester only). Calls answered at once with an error hold no credit.
//   Linux's svcrdma counts nothing; a client over its grant runs its
//   receive queue dry and the connection fails (see responder.cc).
// - Reassembly memory (RFC 5666 §11): before anything is allocated for an
//   incoming call (inline or chunked), its reassembled size is reserved in
//   Config::max_reassembly_bytes and in the shared ReassemblyBudget. A
//   call larger than either can ever hold is answered ERR_CHUNK, like one
//   over max_call_size. Otherwise, when memory is short, the call waits in
//   arrival order (later calls queue behind it even if they would fit)
//   holding only its inline payload, with no read issued; it starts when
//   this engine ends a call or OnBudgetReleased reports memory freed
//   elsewhere. Exactly the reservation is released when the call ends:
//   reply Send completed, ERR_CHUNK, failed read, discarded, disconnect
//   (a call whose read or send the fabric may still touch keeps it until
//   that completion). A delivered call dropped by a disconnect releases
//   its reservation at once, though the handler may still hold its Buffer.
// - What reaches the handler (RFC 8166 §4.1): a reassembled message shorter
//   than the six fixed words of an RPC call header, whose msg_type is not
//   CALL, or whose XID is not rdma_xid, is dropped without reply and
//   counted (calls_discarded()); Linux's svc_process drops short and
//   wrong-direction messages the same way.
// - An RDMA_ERROR is never answered: a malformed one is dropped like any
//   other RDMA_ERROR the responder receives.
// - A reply whose results cannot be conveyed (ERR_CHUNK) still emits
//   ReplySent, so the caller frees the reply's memory; the call's state is
//   gone with it.
// - Requester: an inline reply longer than the call's max_reply_size fails
//   the call with RESOURCE_EXHAUSTED (after its handles are invalidated).
// - Chunk capacities handed to the handler are 64-bit sums of segment
//   lengths (a chunk of many segments may exceed 4 GiB).
//
// Memory safety: every handle a call exposed is invalidated (Invalidate
// action, then OnInvalidated event) before CompleteCall or FailCall hands the
// caller its buffers back, whatever ended the call (reply, RDMA_ERROR,
// cancellation, disconnect). A handle the peer invalidated with Send With
// Invalidate (reported by the receive completion) is not invalidated again.
#ifndef RPCRDMA_PLUGIN_ENGINE_ENGINE_H_
#define RPCRDMA_PLUGIN_ENGINE_ENGINE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/engine/control.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/engine_types.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/engine/requester.h"
#include "plugin/engine/responder.h"
#include "plugin/engine/version_two.h"
#include "plugin/memory/ring_queue.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/private_data.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/buffer.h"

namespace rpcrdma::engine {

// ---- The engine ------------------------------------------------------------
// Its types (actions, calls, configuration) are in engine_types.h.

class Engine : private BackwardCallGate {
 public:
  // `shared_budget` (optional, not owned): the reassembly memory shared
  // with other connections (a Server's), besides
  // Config::max_reassembly_bytes.
  Engine(Config config, MemoryExposer* exposer,
         ReassemblyBudget* shared_budget = nullptr);

  // Called for every version-one message sent and every message received
  // while connected, before the engine acts on it.
  void set_message_observer(MessageObserver observer) {
    ctx_.observer = std::move(observer);
  }

  // The eight octets of RFC 8797 private data to send on connect/accept.
  std::array<uint8_t, wire::kPrivateDataSize> LocalPrivateData() const;

  // Connection established (also after every reconnect): negotiates the
  // inline thresholds (RFC 8797 §4.2), posts receives, resets the credit
  // grant to one (RFC 8166 §3.3.1) and sends queued calls.
  void OnConnected(const ConnectionParams& params, Actions& out);
  // Connection lost: every call fails with UNAVAILABLE (after invalidation
  // of its handles), incoming calls are dropped.
  void OnDisconnected(Actions& out);

  // Requester: queues `call`; it is sent as soon as the connection is up and
  // a credit is free. Errors: INVALID_ARGUMENT for a malformed call,
  // ALREADY_EXISTS for an XID already in flight.
  absl::StatusOr<CallId> StartCall(OutgoingCall call, Actions& out) {
    return requester_.StartCall(std::move(call), out);
  }
  // Requester: ends a call early (deadline or cancellation) with `status`.
  // A call already sent keeps its credit until its reply arrives (and is
  // dropped), so the grant is never exceeded; calls_abandoned() counts
  // them, so the driver can tell when they hold every credit.
  void Cancel(CallId call, absl::Status status, Actions& out) {
    requester_.Cancel(call, std::move(status), out);
  }

  // Version two (version_two.h; FAILED_PRECONDITION on a connection that
  // is not in version two, UNAVAILABLE before it is up and has settled its
  // version). Each returns the XID whose answer comes as the action named.
  // Asks the peer to change its properties (RDMA2_REQPROP, §5.3.2):
  // PropertiesAnswered. Only properties the peer's RDMA2_CONNPROP lets
  // change (§5.3.1); a lower RBSIZ bounds this side's Sends at once, until
  // the answer (§5.2.1); a higher one than this side sends is refused.
  absl::StatusOr<uint32_t> RequestProperties(wire::PropSet want, Actions& out) {
    return control_.RequestProperties(std::move(want), out);
  }
  // Changes this side's properties and tells the peer (RDMA2_UPDPROP,
  // §5.3.4): RBSIZ only upward and only as far as every posted receive
  // holds (§5.2.1), experimental ones stated at connect. PropertiesAnswered
  // (with nothing accepted) once the peer has taken it.
  absl::StatusOr<uint32_t> UpdateProperties(wire::PropSet now, Actions& out) {
    return control_.UpdateProperties(std::move(now), out);
  }
  // Sends an RDMA2_OPTIONAL (CALL) of `type` (§4.1): OptionalAnswered.
  absl::StatusOr<uint32_t> StartOptional(uint32_t type,
                                         std::vector<uint8_t> info,
                                         std::vector<uint8_t> payload,
                                         Actions& out) {
    return control_.StartOptional(type, std::move(info), std::move(payload),
                                  out);
  }
  // Answers a DeliverOptional: its answer as an RDMA2_OPTIONAL (REPLY), or
  // with an error RDMA2_ERR_SYSTEM (§6.2.4). NOT_FOUND for an unknown XID.
  absl::Status AnswerOptional(uint32_t xid,
                              absl::StatusOr<DeliverOptional> answer,
                              Actions& out) {
    return control_.AnswerOptional(xid, std::move(answer), out);
  }
  // Decides a PropertiesRequested, one decision per item, in order.
  absl::Status DecideProperties(uint32_t xid,
                                std::vector<PropertyDecision> decisions,
                                Actions& out) {
    return control_.DecideProperties(xid, std::move(decisions), out);
  }

  // Responder: memory was released in the shared ReassemblyBudget by
  // another engine; calls waiting for it are started if it now suffices.
  void OnBudgetReleased(Actions& out) { responder_.OnBudgetReleased(out); }

  // Responder: answers a delivered call. INVALID_ARGUMENT for an unknown
  // call or misplaced result positions. A reply that cannot be conveyed in
  // the chunks the requester offered is answered with RDMA_ERROR ERR_CHUNK.
  absl::Status Reply(CallId call, OutgoingReply reply, Actions& out) {
    return responder_.Reply(call, std::move(reply), out);
  }

  // A receive completed with `bytes`; `invalidated` is the handle a Send
  // With Invalidate revoked, if any.
  void OnReceive(absl::Span<const uint8_t> bytes,
                 std::optional<uint32_t> invalidated, Actions& out);
  void OnSendComplete(OpId op, bool /*success*/, Actions& out) {
    responder_.OnSendComplete(op, out);
  }
  void OnReadComplete(OpId op, bool success, Actions& out) {
    responder_.OnReadComplete(op, success, out);
  }
  void OnInvalidated(uint32_t handle, Actions& out) {
    requester_.OnInvalidated(handle, out);
  }

  // The driver is done with a Send's bytes (copied them into its send
  // buffer): the engine reuses the vector for a later message.
  void RecycleSendBuffer(std::vector<uint8_t> bytes) {
    ctx_.RecycleSendBuffer(std::move(bytes));
  }

  // Introspection for the api layer and tests.
  const wire::InlineThresholds& thresholds() const { return ctx_.thresholds; }
  // The largest reduced reply that arrives inline for a call without write
  // chunks: the receive threshold less the reply's transport header. A
  // call's max_reply_size at most this offers no reply chunk.
  uint32_t max_inline_reply() const;
  uint32_t credit_grant() const { return requester_.credit_grant(); }
  uint32_t calls_outstanding() const { return requester_.calls_outstanding(); }
  // Sent calls that ended early (Cancel) and still hold their credit,
  // awaiting a reply that may never come.
  uint32_t calls_abandoned() const { return requester_.calls_abandoned(); }
  // Responder: incoming calls waiting for reassembly memory.
  size_t calls_awaiting_memory() const {
    return responder_.calls_awaiting_memory();
  }
  // Responder: calls received and not yet answered (each holds one of the
  // credits this side granted, RFC 8166 §3.3.1).
  uint32_t calls_unanswered() const { return responder_.calls_unanswered(); }
  // Responder: octets reserved for incoming calls on this connection (in
  // the per-connection limit and the shared budget alike).
  uint64_t reassembly_bytes_held() const {
    return responder_.reassembly_bytes_held();
  }
  // Responder: incoming calls dropped without delivery or reply because
  // their RPC message is no RPC call (shorter than an RPC call header,
  // msg_type not CALL, or an RPC XID other than rdma_xid; RFC 8166 §4.1).
  uint64_t calls_discarded() const { return responder_.calls_discarded(); }
  size_t calls_queued() const { return requester_.calls_queued(); }
  bool connected() const { return ctx_.connected; }
  // Receives this side keeps posted (credits plus backchannel receives).
  uint32_t receives_posted() const { return ctx_.roles.receives; }
  // True when StartCall issues backward calls (RFC 8167 server).
  bool issues_backward_calls() const { return ctx_.roles.backward_requester; }
  // The peer's RFC 8797 private data on this connection, when valid.
  const std::optional<wire::PrivateData>& peer_private_data() const {
    return peer_private_data_;
  }
  // Version negotiation (Config::offered_version): true while the probe
  // awaits its answer; then version() is the version in use and
  // negotiation_status() says why calls cannot go out when it failed
  // (FAILED_PRECONDITION naming the peer's range). peer_versions() is the
  // range of the peer's ERR_VERS (0..0 when it sent none; 2..2 for a peer
  // that answered in version two).
  bool negotiating() const { return ctx_.negotiating; }
  uint32_t version() const { return ctx_.version; }
  const absl::Status& negotiation_status() const { return ctx_.negotiation; }
  std::pair<uint32_t, uint32_t> peer_versions() const {
    return control_.peer_versions();
  }
  // Version two: both sides' properties (version_two.h).
  const VersionTwoState& version_two() const { return control_.state(); }
  // The receives this configuration keeps posted (receives_posted()).
  static uint32_t ReceivesFor(const Config& config);

 private:
  // Routes a decoded message (version one, or version two in its
  // version-one form) to the requester or responder role.
  // `error`: why the message did not decode (then `decoded` is empty).
  void Route(const wire::V1Decoded& decoded, absl::Span<const uint8_t> bytes,
             bool is_call, std::optional<uint32_t> invalidated, Actions& out,
             const wire::DecodeError* error = nullptr);

  // Version two (version_two.cc).
  void OnReceiveV2(absl::Span<const uint8_t> bytes,
                   std::optional<uint32_t> invalidated, Actions& out);
  void HandleV2Error(const wire::V2Header& header, Actions& out);
  // BackwardCallGate, answered by the control.
  absl::Status BackwardCallAllowed(const CallPlanInput& call) const override;

  EngineContext ctx_;
  Requester requester_;
  Responder responder_;
  Control control_;
  std::optional<wire::PrivateData> peer_private_data_;
  // Version two: rdma_inv_handle of the call being routed (§6.2.3).
  uint32_t routing_inv_handle_ = 0;
  // Responder: nothing received yet on this connection (§7.1: only the
  // first message may open version two).
  bool first_message_ = true;
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_ENGINE_H_
