// The engine's responder role (RFC 8166 §3, §4.5): it owns the calls this
// side receives, the RDMA Reads that fetch their chunks, the reassembly
// memory they hold (RFC 5666 §11), the credits they take (§3.3.1) and the
// Sends of their replies. Engine routes calls to it; what it shares with
// the rest of the engine comes through EngineContext.
#ifndef RPCRDMA_PLUGIN_ENGINE_RESPONDER_H_
#define RPCRDMA_PLUGIN_ENGINE_RESPONDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/engine_types.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/memory/ring_queue.h"
#include "plugin/wire/chunks.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/buffer.h"

namespace rpcrdma::engine {

// The reassembled call: its base stream (the inline payload, or the
// position-zero chunk of RDMA_NOMSG) and its size with every chunk
// inserted.
struct CallLayout {
  uint64_t base = 0;
  uint64_t size = 0;
};

class Responder {
 public:
  // `shared_budget` (optional, not owned): reassembly memory shared with
  // other connections, besides Config::max_reassembly_bytes.
  Responder(EngineContext& context, ReassemblyBudget* shared_budget)
      : ctx_(context), shared_budget_(shared_budget) {}
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // A new connection: at most `max_reads` RDMA Reads outstanding (the
  // negotiated ORD), and receives count again.
  void OnConnected(uint32_t max_reads);
  // Calls not waiting for a read or send completion are dropped; no credit
  // survives the connection.
  void OnDisconnected(Actions& out);

  // A call (RDMA_MSG, RDMA_NOMSG, or a deprecated procedure) decoded from
  // `bytes`. `inv_handle`: in version two, the handle the requester named
  // for remote invalidation (draft-04 §6.2.3), 0 for none.
  void OnCall(const wire::V1Decoded& decoded, absl::Span<const uint8_t> bytes,
              uint32_t inv_handle, Actions& out);
  // A call that did not decode (`error`): answered ERR_VERS or ERR_CHUNK
  // (RFC 8166 §4.5.1, §4.5.2), unless it is itself an RDMA_ERROR.
  void OnUndecodableCall(absl::Span<const uint8_t> bytes,
                         const wire::DecodeError& error, Actions& out);
  // Answers a delivered call (Engine::Reply).
  absl::Status Reply(CallId call, OutgoingReply reply, Actions& out);
  void OnReadComplete(OpId op, bool success, Actions& out);
  void OnSendComplete(OpId op, Actions& out);
  // Memory was released in the shared budget: waiting calls may start.
  void OnBudgetReleased(Actions& out) { StartCallsAwaitingMemory(out); }
  // An RDMA_ERROR to `xid`. In version two, `v2` says the cause precisely
  // (draft-04 §6.2.4); without it ERR_CHUNK goes as RDMA2_ERR_BAD_XDR.
  // `why` is what the log says of it (MessageSeen::why).
  void SendError(uint32_t xid, wire::V1ErrorCode code, Actions& out,
                 std::optional<wire::V2Error> v2 = std::nullopt,
                 absl::string_view why = {});

  // CloseConnection was emitted (a requester over its grant): receives
  // are ignored until reconnected.
  bool closing() const { return closing_; }
  size_t calls_awaiting_memory() const { return awaiting_memory_.size(); }
  uint32_t calls_unanswered() const { return calls_unanswered_; }
  uint64_t reassembly_bytes_held() const { return reassembly_held_; }
  uint64_t calls_discarded() const { return calls_discarded_; }

 private:
  enum class State { kAwaitingMemory, kReading, kDelivered, kSending };
  struct Call {
    CallId id;
    uint32_t xid = 0;
    wire::ChunkLists chunks;
    bool nomsg = false;
    uint64_t size = 0;      // the reassembled call, octets
    uint64_t reserved = 0;  // of the budgets, released when the call ends
    bool holds_credit = false;
    std::vector<uint8_t> inline_payload;  // RDMA_MSG awaiting memory
    Buffer staging;                       // base stream then each chunk's data
    Buffer message;
    std::vector<uint8_t> reply_stream;  // kept until the Send completes
    size_t reads_pending = 0;
    bool failed = false;  // a read failed; never delivered
    State state = State::kReading;
    OpId send_op = 0;
    uint32_t base_length = 0;  // inline payload or position-zero chunk
    uint32_t inv_handle = 0;   // version two: rdma_inv_handle (§6.2.3)
    bool assembled = false;    // reads land in `message` directly
  };
  struct PendingRead {
    CallId call;
    wire::Segment source;
    absl::Span<uint8_t> destination;
  };

  // The steps of OnCall: each answers or ends the connection itself and
  // returns false (or nothing) when the call goes no further.
  bool TakesProcedure(const wire::V1Header& header, Actions& out);
  bool WithinGrant(Actions& out);
  std::optional<CallLayout> Validate(const wire::V1Header& header,
                                     uint64_t inline_length, Actions& out);
  void Admit(const wire::V1Header& header, const CallLayout& layout,
             absl::Span<const uint8_t> payload, uint32_t inv_handle,
             Actions& out);

  void BeginReassembly(Call& c, absl::Span<const uint8_t> inline_payload,
                       Actions& out);
  bool ReserveReassembly(uint64_t bytes);
  void StartCallsAwaitingMemory(Actions& out);
  void EndIncoming(CallId id, Actions& out);
  void ReleaseCredit(Call& c);
  void IssueReads(Actions& out);
  bool PlaceReadsDirectly(Call& c, absl::Span<const uint8_t> inline_payload,
                          bool nomsg, size_t total);
  void Assemble(Call& c);
  void Deliver(Call& c, Actions& out);
  std::optional<uint32_t> InvalidateHandleFor(const Call& c) const;
  // Carries out a PlanReply that conveys the reply: the RDMA Writes, then
  // the Send.
  void SendReply(Call& c, const ReplyPlan& plan, OutgoingReply& reply,
                 Actions& out);

  EngineContext& ctx_;
  ReassemblyBudget* shared_budget_;
  uint32_t max_reads_ = 1;
  uint32_t calls_unanswered_ = 0;
  uint64_t reassembly_held_ = 0;
  uint64_t calls_discarded_ = 0;
  bool closing_ = false;
  std::deque<CallId> awaiting_memory_;  // in arrival order (rare path)
  absl::flat_hash_map<CallId, Call> calls_;
  absl::flat_hash_map<OpId, CallId> reads_in_flight_;
  memory::RingQueue<PendingRead> read_queue_;
  absl::flat_hash_map<OpId, CallId> reply_sends_;
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_RESPONDER_H_
