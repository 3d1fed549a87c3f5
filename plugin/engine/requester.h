// The engine's requester role (RFC 8166 §3, §4): it owns the calls this
// side makes, their XIDs, the queue of calls waiting for a credit and the
// credit grant the peer's replies carry (§3.3.1). Engine routes replies to
// it; what it needs of the rest of the engine comes through EngineContext
// and the BackwardCallGate.
#ifndef RPCRDMA_PLUGIN_ENGINE_REQUESTER_H_
#define RPCRDMA_PLUGIN_ENGINE_REQUESTER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
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
#include "plugin/memory/ring_queue.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/v1.h"
#include "rpcrdma/buffer.h"

namespace rpcrdma::engine {

// Whether a backward call may go as planned (RFC 8167 server in version
// two: the client's Backward Request Support, draft-04 §5.2.2). The
// version-two control answers it; OK for every forward call.
class BackwardCallGate {
 public:
  virtual ~BackwardCallGate() = default;
  // `call`: what PlanCall decides the call's form from.
  virtual absl::Status BackwardCallAllowed(const CallPlanInput& call) const = 0;
};

class Requester : public LiveXids {
 public:
  Requester(EngineContext& context, const BackwardCallGate& gate)
      : ctx_(context), gate_(gate) {}
  Requester(const Requester&) = delete;
  Requester& operator=(const Requester&) = delete;

  // Queues `call`; it goes once the connection is up, the version settled
  // and a credit free. INVALID_ARGUMENT for a malformed call,
  // ALREADY_EXISTS for an XID in flight, FAILED_PRECONDITION without the
  // role.
  absl::StatusOr<CallId> StartCall(OutgoingCall call, Actions& out);
  // Ends a call early with `status` (Engine::Cancel).
  void Cancel(CallId call, absl::Status status, Actions& out);
  // A handle a finished call exposed is revoked.
  void OnInvalidated(uint32_t handle, Actions& out);
  // Sends queued calls as far as the grant allows (RFC 8166 §3.3.1), or
  // fails them all when version negotiation failed.
  void Dispatch(Actions& out);

  // A new connection: one credit until the first reply (§3.3.1).
  void OnConnected();
  // Every call not already finishing fails with UNAVAILABLE, in the order
  // the calls were made.
  void OnDisconnected(Actions& out);

  // The version-two probe (draft-04 §7) holds the one credit until its
  // answer; the answer may grant credits (an RDMA2_CONNPROP's).
  void HoldProbeCredit() { outstanding_ = 1; }
  void EndProbe(std::optional<uint32_t> credits);

  // True when a call sent with `xid` awaits its reply.
  bool AwaitsReply(uint32_t xid) const { return by_xid_.contains(xid); }
  // True when a call with `xid` is in flight (not finishing).
  bool IsLiveXid(uint32_t xid) const override {
    return live_xids_.contains(xid);
  }
  // The reply to the call awaiting `decoded`'s XID (AwaitsReply).
  void OnReply(const wire::V1Decoded& decoded, absl::Span<const uint8_t> bytes,
               std::optional<uint32_t> invalidated, Actions& out);
  // The reply awaited for `xid` did not decode: its call fails with
  // DATA_LOSS naming `why`.
  void FailUndecodableReply(uint32_t xid, const absl::Status& why,
                            std::optional<uint32_t> invalidated, Actions& out);
  // The peer answered the call awaiting `xid` with an error (version two,
  // draft-04 §6.2.4) granting `credits`. `reply_did_not_fit`: the status
  // gets what the call offered for its reply.
  void FailOnPeerError(uint32_t xid, uint32_t credits, absl::Status status,
                       bool reply_did_not_fit, Actions& out);
  // The late answer to a cancelled call: frees its credit and takes the
  // grant (`credits`, when it decoded). False when no cancelled call had
  // `xid`.
  bool DropLateReply(uint32_t xid, std::optional<uint32_t> credits,
                     Actions& out);

  uint32_t credit_grant() const { return grant_; }
  uint32_t calls_outstanding() const { return outstanding_; }
  // Sent calls that ended early and still hold their credit.
  uint32_t calls_abandoned() const {
    return static_cast<uint32_t>(cancelled_xids_.size());
  }
  size_t calls_queued() const { return queue_.size(); }

 private:
  enum class State { kQueued, kSent, kFinishing };
  struct Call {
    CallId id;
    uint32_t xid = 0;
    OutgoingCall call;
    State state = State::kQueued;
    bool holds_credit = false;
    std::vector<uint8_t> long_call;  // position-zero chunk contents
    Buffer reply_buffer;             // reply chunk target
    std::vector<wire::WriteChunk> write_chunks;
    std::optional<wire::WriteChunk> reply_chunk;
    std::vector<uint32_t> handles;  // every handle exposed
    size_t pending_invalidations = 0;
    std::optional<Action> outcome;  // CompleteCall or FailCall
  };

  void SendCall(Call& c, Actions& out);
  // Carries out `plan`: exposes what it uses and queues the Send.
  absl::Status MarshalCall(Call& c, const CallPlanInput& in, Actions& out);
  // A write chunk per result and, if `reply_chunk`, the reply chunk.
  absl::Status ExposeReplyRoom(Call& c, bool reply_chunk);
  absl::StatusOr<std::vector<wire::Segment>> ExposeSpan(
      Call& c, absl::Span<uint8_t> memory, uint32_t access);
  void Finish(Call& c, Action outcome,
              std::optional<uint32_t> remotely_invalidated, Actions& out);
  void MaybeComplete(Call& c, Actions& out);
  void ReleaseCredit(Call& c);
  // RFC 8166 §3.3.1: at least one (a zero grant would stall the
  // connection), at most what this side posts receives for.
  void TakeGrant(uint32_t credits);
  // `error` with what the call offered for its reply appended, for errors
  // that may mean the reply did not fit: the caller learns what to raise.
  absl::Status WithReplyRoom(const absl::Status& error, const Call& c) const;
  // What a reply to `c` completes it with, or why it fails the call.
  absl::StatusOr<CompleteCall> ReplyOutcome(const wire::V1Decoded& decoded,
                                            absl::Span<const uint8_t> bytes,
                                            Call& c) const;
  CallPlanInput PlanInputFor(const OutgoingCall& call) const;

  EngineContext& ctx_;
  const BackwardCallGate& gate_;
  uint32_t grant_ = 1;
  uint32_t outstanding_ = 0;
  // Hash tables and ring queues: once grown to its working size, the role
  // in steady use allocates nothing per call. Where the order of a walk
  // matters (a disconnect fails calls in the order they were made), the
  // ids are sorted first.
  absl::flat_hash_map<CallId, Call> calls_;
  absl::flat_hash_set<uint32_t> live_xids_;  // of calls_ not finishing
  memory::RingQueue<CallId> queue_;
  absl::flat_hash_map<uint32_t, CallId> by_xid_;  // sent, awaiting a reply
  // Sent, cancelled, still holding their credit.
  absl::flat_hash_set<uint32_t> cancelled_xids_;
  absl::flat_hash_map<uint32_t, CallId> by_handle_;  // awaiting invalidation
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_REQUESTER_H_
