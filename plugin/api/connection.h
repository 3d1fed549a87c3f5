// The driver of one RPC-over-RDMA connection: one protocol engine, one
// fabric endpoint, buffer pools for Sends and Receives, and a registration
// cache for caller and engine memory. Carries out the engine's actions on
// the fabric and turns fabric completions into engine events. Used from one
// thread only (the owning loop's).
#ifndef RPCRDMA_PLUGIN_API_CONNECTION_H_
#define RPCRDMA_PLUGIN_API_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/api/latency_recorder.h"
#include "plugin/config/config_loader.h"
#include "plugin/engine/engine.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/fabric_factory.h"
#include "plugin/fabric/registered_slot_pool.h"
#include "plugin/fabric/registration_cache.h"
#include "plugin/memory/ring_queue.h"
#include "rpcrdma/metrics.h"
#include "rpcrdma/types.h"

namespace rpcrdma::api_internal {

enum class Role { kRequester, kResponder };

// Where a URI points: which fabric and its address syntax.
struct ParsedUri {
  config::TransportConfig::Fabric fabric =
      config::TransportConfig::FABRIC_UNSPECIFIED;
  std::string address;  // as the fabric expects it
};
absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri);
// The fabric (fabric_factory.h) of a parsed URI. Fault injection for tests:
// fabric_factory_testing.h.
fabric::FabricKind FabricKindOf(const ParsedUri& uri);
// Validates `config` against the URI and makes the fabric.
absl::StatusOr<std::unique_ptr<fabric::Fabric>> MakeFabricFor(
    const ParsedUri& uri, const config::TransportConfig& config);

// `backward_service`: a requester that serves backward calls (RFC 8167).
engine::Config EngineConfigFor(const config::ResolvedConfig& resolved,
                               Role role, bool backward_service = false);
fabric::EndpointOptions EndpointOptionsFor(const engine::Config& config);

class Connection : public engine::MemoryExposer {
 public:
  struct Hooks {
    // When set, sees every message this side sends (`sent`) or receives,
    // with the R_Key of a Send With Invalidate (capture_tap.h).
    std::function<void(bool sent, absl::Span<const uint8_t> message,
                       std::optional<uint32_t> invalidate_rkey)>
        capture;
  };

  // `shared_budget` (optional, not owned): reassembly memory shared with
  // the other connections of a Server.
  Connection(std::unique_ptr<fabric::Endpoint> endpoint, engine::Config config,
             Role role, Hooks hooks,
             engine::ReassemblyBudget* shared_budget = nullptr);
  ~Connection() override;

  fabric::Endpoint& endpoint() { return *endpoint_; }
  engine::Engine& engine() { return engine_; }

  // Tells the engine the connection is up (RFC 8797 private data of the
  // peer) and carries out what follows.
  // `version_probe_xid`: the XID of the version-two probe, when the
  // engine offers version two.
  void Connected(absl::Span<const uint8_t> peer_private_data,
                 uint32_t version_probe_xid = 0);
  // Carries out `actions` (and everything they lead to).
  void Run(engine::Actions& actions);
  // The engine's operations, carried out at once (engine.h).
  absl::StatusOr<engine::CallId> StartCall(engine::OutgoingCall call);
  // Version two (connection_v2.cc).
  absl::StatusOr<uint32_t> RequestProperties(wire::PropSet want);
  absl::StatusOr<uint32_t> UpdateProperties(wire::PropSet now);
  absl::StatusOr<uint32_t> StartOptional(uint32_t type,
                                         std::vector<uint8_t> info,
                                         std::vector<uint8_t> payload);
  absl::Status AnswerOptional(uint32_t xid,
                              absl::StatusOr<engine::DeliverOptional> answer);
  absl::Status DecideProperties(
      uint32_t xid, std::vector<engine::PropertyDecision> decisions);
  void Cancel(engine::CallId call, absl::Status status);
  // A reply's RDMA_ERROR answer is logged as not fitting the call's chunks.
  absl::Status Reply(engine::CallId call, engine::OutgoingReply reply);
  void OnBudgetReleased();
  // Consumes the endpoint's completions and connection events, and carries
  // out what follows. `readable`: the owner's loop saw event_fd() readable
  // (fabric.h OnEventFdReadable); otherwise only what this side's own
  // calls produced is consumed, without a system call. Owners call it after
  // every operation on the connection (fabric.h: the owner drains).
  void Poll(bool readable = false);
  // The same for busy polling (fabric.h OnSpin); true when it found work.
  bool Spin();
  // When set, Poll must run again by then (fabric.h poll_deadline).
  std::optional<std::chrono::steady_clock::time_point> poll_deadline() const {
    return endpoint_->poll_deadline();
  }
  // Starts an orderly disconnect.
  void Disconnect();
  // The engine's upcalls (DeliverCall, ReplySent, CompleteCall, FailCall)
  // since the last call, in order: the owner runs them once it has released
  // whatever lock guards this connection, so that a callback may call back
  // into it.
  // `out` should be empty; its capacity is kept for the next upcalls, so
  // an owner that passes the same vector each time allocates nothing.
  void TakeUpcalls(std::vector<engine::Action>& out) {
    out.clear();
    out.swap(upcalls_);
  }
  bool has_upcalls() const { return !upcalls_.empty(); }

  // Names the connection in log records: `id` as LogRecord::connection,
  // `description` (peer or listener) in every line about it.
  void SetLogContext(uint64_t id, std::string description);
  // The warning for a call whose Responder was dropped unanswered and which
  // was answered SYSTEM_ERR in its place (rpcrdma/responder.h).
  void LogDroppedResponder(uint32_t xid) const;
  // The first known cause of the connection's loss (empty while up).
  const std::string& lost_reason() const { return lost_reason_; }
  // Disconnected in the normal way: this side asked for it, or (a
  // responder) the client left without a failure before.
  bool orderly_end() const { return disconnected_ && orderly_end_; }

  bool disconnected() const { return disconnected_; }
  // Disconnected, or going down: this side has seen a fatal failure (and
  // asked the endpoint to disconnect) whose connection event is not polled
  // yet. A call failed meanwhile failed because of the loss.
  bool lost() const { return disconnected_ || going_down_; }
  // Disconnected and every posted operation has completed: safe to destroy.
  bool finished() const { return disconnected_ && outstanding_ == 0; }
  Counters counters() const;
  // Adds one to a counter of this connection (e.g. idle_closes).
  void Count(uint64_t Counters::*field);
  ConnectionInfo info() const;
  // Grows with every completion and connection event: the owner tells a
  // silent connection by an unchanged value (idle timeout).
  uint64_t activity() const { return activity_; }
  // Latencies (rpcrdma/metrics.h), recorded by the owning loop thread.
  void RecordCallRtt(std::chrono::nanoseconds rtt) { call_rtt_.Record(rtt); }
  void RecordReplyTime(std::chrono::nanoseconds t) { reply_time_.Record(t); }
  // Any thread; the id is the one given to SetLogContext.
  ConnectionMetrics metrics() const;

  absl::StatusOr<wire::Segment> Expose(absl::Span<uint8_t> memory,
                                       uint32_t access) override;

 private:
  enum Kind : uint64_t {
    kRecvKind = 1,
    kSendKind,
    kReadKind,
    kWriteKind,
    kBindKind,
    kInvalidateKind
  };
  static uint64_t WrId(Kind kind, uint64_t value) {
    return (uint64_t{kind} << 56) | value;
  }

  void Execute(engine::Action& action, engine::Actions& out);
  void DoPostReceives(const engine::PostReceives& p);
  void DoSend(engine::Send& s, engine::Actions& out);
  void DoRdmaRead(const engine::RdmaRead& r, engine::Actions& out);
  void DoRdmaWrite(const engine::RdmaWrite& w);
  void DoInvalidate(const engine::Invalidate& i, engine::Actions& out);
  void DoCloseConnection(const engine::CloseConnection& cc);
  void TrySends(engine::Actions& out);
  void OnCompletion(const fabric::Completion& c, engine::Actions& out);
  // Ends the connection; `what` becomes the reason reported with the
  // calls it fails, unless one is known already.
  void Fatal(absl::string_view what);
  void FatalCompletion(absl::string_view what, const fabric::Completion& c);
  void NoteLoss(absl::string_view what);
  // Counts one transport message this side sent or received;
  // `remote_invalidation`: it was (or came as) a Send With Invalidate.
  void CountMessage(const engine::MessageSeen& seen);

  std::unique_ptr<fabric::Endpoint> endpoint_;
  engine::Config config_;
  Role role_;
  Hooks hooks_;
  fabric::RegistrationCache cache_;
  engine::Engine engine_;
  std::unique_ptr<fabric::RegisteredSlotPool> recv_pool_;
  std::unique_ptr<fabric::RegisteredSlotPool> send_pool_;
  uint32_t receive_deficit_ = 0;
  // Hash tables and ring queues, so that a connection in steady use
  // allocates nothing per message.
  memory::RingQueue<engine::Send> pending_sends_;
  struct SendInFlight {
    uint32_t slot = 0;
    engine::OpId op = 0;
  };
  absl::flat_hash_map<uint64_t, SendInFlight> sends_;
  uint64_t next_send_ = 1;
  absl::flat_hash_map<uint64_t, fabric::RegistrationCache::Lease> read_leases_;
  absl::flat_hash_map<uint64_t, fabric::RegistrationCache::Lease> write_leases_;
  absl::flat_hash_map<uint32_t, fabric::RegistrationCache::Lease> windows_;
  uint64_t outstanding_ = 0;
  uint64_t activity_ = 0;
  bool disconnected_ = false;
  bool going_down_ = false;        // see lost()
  std::string lost_reason_;        // the first known cause of the loss
  bool local_disconnect_ = false;  // Disconnect() was asked for
  bool orderly_end_ = false;       // see orderly_end()
  bool replying_ = false;          // inside Reply
  uint64_t log_id_ = 0;
  std::string log_description_;
  // The latest received message that did not decode, which the engine
  // answers with RDMA_ERROR (RFC 8166 §4.5): the reason logged with it.
  std::optional<std::pair<uint32_t, std::string>> undecodable_;
  // `why`: the engine's words for an error this side sends
  // (engine::MessageSeen::why), added to the log line.
  void LogRdmaError(bool sent, uint32_t xid, absl::string_view what,
                    absl::string_view why);
  void LogSetUp(const ConnectionInfo& info);
  bool running_ = false;
  memory::RingQueue<engine::Action> queue_;
  std::vector<engine::Action> upcalls_;
  // Reused for what one action, or one completion, leads to.
  engine::Actions scratch_;
  engine::Actions completion_actions_;
  engine::Actions operation_actions_;  // of StartCall, Cancel, Reply...

  ConnectionInfo ComputeInfo() const;

  LatencyRecorder call_rtt_;
  LatencyRecorder reply_time_;

  mutable std::mutex counters_mu_;
  Counters counters_;
  ConnectionInfo info_;  // as of the end of the latest Run() that changed it
  // Loop thread only: what Run() has published.
  uint32_t peak_outstanding_ = 0;
  bool info_settled_ = false;
  uint64_t info_epoch_ = 0;  // the engine's version-two epoch published
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_CONNECTION_H_
