// The engine's version-two control (draft-cel-nfsv4-rpcrdma-version-two-04):
// it owns both sides' transport properties (§5), the exchanges of messages
// without RPC this side starts (RDMA2_REQPROP, RDMA2_UPDPROP,
// RDMA2_OPTIONAL) and the window that bounds them, and the peer's requests
// and optional messages awaiting the owner. Engine routes version-two
// messages other than calls and replies to it.
#ifndef RPCRDMA_PLUGIN_ENGINE_CONTROL_H_
#define RPCRDMA_PLUGIN_ENGINE_CONTROL_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/engine/engine_context.h"
#include "plugin/engine/engine_types.h"
#include "plugin/engine/marshal_plan.h"
#include "plugin/engine/version_two.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::engine {

// XIDs the requester role has in flight: the control's own XIDs avoid
// them, so an answer is never taken for the other's.
class LiveXids {
 public:
  virtual ~LiveXids() = default;
  virtual bool IsLiveXid(uint32_t xid) const = 0;
};

// The answer to the version-two probe, once it came: the credits it
// granted (an RDMA2_CONNPROP's), if any.
struct ProbeAnswer {
  std::optional<uint32_t> credits;
};

class Control {
 public:
  Control(EngineContext& context, const LiveXids& requester_xids)
      : ctx_(context), requester_xids_(requester_xids) {}
  Control(const Control&) = delete;
  Control& operator=(const Control&) = delete;

  // At connect: this side's initial properties (§5.3.1).
  void OnConnected();

  // Version negotiation (§7, negotiation.cc). A requester offering version
  // two sends a single RDMA2_CONNPROP first, no larger than version one's
  // default inline threshold; the connection is negotiating until its
  // answer.
  void SendVersionProbe(uint32_t xid, Actions& out);
  // A message received while negotiating: nullopt when it is not the
  // answer (then it is ignored, §7); otherwise the version is settled, or
  // EngineContext::negotiation says why it failed.
  std::optional<ProbeAnswer> TakeProbeAnswer(absl::Span<const uint8_t> bytes);
  // A responder serving version two answers a client's opening
  // RDMA2_CONNPROP (§7.1) with its own: true when `bytes` was one.
  bool TryOpenVersionTwo(absl::Span<const uint8_t> bytes, Actions& out);
  // The range of the peer's ERR_VERS (0..0 when it sent none; 2..2 for a
  // peer that answered in version two).
  std::pair<uint32_t, uint32_t> peer_versions() const {
    return {peer_version_low_, peer_version_high_};
  }
  // Every exchange fails with UNAVAILABLE; what awaited the owner is gone.
  void OnDisconnected(Actions& out);

  // This side's RDMA2_CONNPROP (§5.3.1).
  wire::V2ConnProp LocalConnProp() const;
  // The peer's RDMA2_CONNPROP (§5.3.1).
  void AdoptPeerConnProp(const wire::V2ConnProp& connprop);
  // Properties the peer states (UPDPROP, §5.3.4): only those present
  // change.
  void AdoptPeerProperties(const wire::PropSet& properties);
  // The peer's RDMA2_REQPROP (§5.3.2), answered or handed to the owner.
  void OnPropertyRequest(uint32_t xid, const wire::V2ReqProp& request,
                         Actions& out);
  // The peer's RDMA2_RESPROP (§5.3.3) to one of this side's exchanges.
  void OnPropertyAnswer(uint32_t xid, const wire::V2ResProp& answer,
                        Actions& out);
  // An RDMA2_OPTIONAL (§4.1, §6.2.2).
  void OnOptional(uint32_t xid, const wire::V2Optional& optional,
                  absl::Span<const uint8_t> payload, Actions& out);
  // The peer's RDMA2_ERROR (§6.2.4) with `xid`: fails the exchange that
  // awaits it with `status`. False when none does.
  bool OnPeerError(uint32_t xid, absl::Status status, Actions& out);

  // The owner's operations (Engine's of the same names).
  absl::StatusOr<uint32_t> RequestProperties(wire::PropSet want, Actions& out);
  absl::StatusOr<uint32_t> UpdateProperties(wire::PropSet now, Actions& out);
  absl::StatusOr<uint32_t> StartOptional(uint32_t type,
                                         std::vector<uint8_t> info,
                                         std::vector<uint8_t> payload,
                                         Actions& out);
  absl::Status AnswerOptional(uint32_t xid,
                              absl::StatusOr<DeliverOptional> answer,
                              Actions& out);
  absl::Status DecideProperties(uint32_t xid,
                                std::vector<PropertyDecision> decisions,
                                Actions& out);

  // Why the client's Backward Request Support does not allow a backward
  // call (§5.2.2); OK when it does or outside version two.
  absl::Status BackwardCallAllowed(const CallPlanInput& call) const;

  const VersionTwoState& state() const { return v2_; }

 private:
  void UpdateSendThreshold();
  absl::Status CheckVersionTwo() const;
  // Queues `exchange` and sends what the window admits.
  void Enqueue(VersionTwoState::Exchange exchange, Actions& out);
  void AdmitExchanges(Actions& out);
  // The answer to exchange `xid` came (or the peer's error): its slots are
  // free. Returns it, or nullopt when none awaits an answer with `xid`.
  std::optional<VersionTwoState::Exchange> EndExchange(uint32_t xid,
                                                       Actions& out);
  uint32_t NextControlXid();
  // Fails exchange `x` with `status` (its owner's action).
  void FailExchange(const VersionTwoState::Exchange& x, absl::Status status,
                    Actions& out);

  EngineContext& ctx_;
  const LiveXids& requester_xids_;
  VersionTwoState v2_;
  uint32_t probe_xid_ = 0;
  uint32_t peer_version_low_ = 0;
  uint32_t peer_version_high_ = 0;
};

}  // namespace rpcrdma::engine

#endif  // RPCRDMA_PLUGIN_ENGINE_CONTROL_H_
