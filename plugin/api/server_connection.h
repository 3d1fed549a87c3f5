// One connection a Server accepted: its protocol engine and endpoint, the
// limits against hostile peers for it, its backward calls (RFC 8167) and the
// replies on their way. It lives on one event loop of the Server's Runtime; the
// handler's Responder may send from any thread, and so may Server::Call.
//
// Concurrency as in connection_driver.h: one mutex, taken by the loop
// thread for readiness and deadlines and by the threads that reply or call
// back; what is meant for the user runs after it is released.
#ifndef RPCRDMA_PLUGIN_API_SERVER_CONNECTION_H_
#define RPCRDMA_PLUGIN_API_SERVER_CONNECTION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "plugin/api/budget.h"
#include "plugin/api/connection.h"
#include "plugin/api/connection_driver.h"
#include "plugin/api/limits.h"
#include "plugin/api/reply_target.h"
#include "plugin/api/version_two_user.h"
#include "plugin/config/config_loader.h"
#include "plugin/runtime/event_loop.h"
#include "rpcrdma/server.h"

namespace rpcrdma::api_internal {

class ServerCore;

// What the connections of one Server share, alive as long as any of them.
struct ServerShared {
  // The Server is gone: replies are refused (FAILED_PRECONDITION).
  std::atomic<bool> stopped{false};
  SharedReassemblyBudget budget;
  explicit ServerShared(uint64_t budget_bytes) : budget(budget_bytes) {}
};

class ServerConnection final
    : public ConnectionDriver::Owner,
      public VersionTwoOperations<ServerConnection>,
      public std::enable_shared_from_this<ServerConnection> {
 public:
  ServerConnection(ServerCore* server, std::shared_ptr<ServerShared> shared,
                   uint64_t id, runtime::EventLoop* loop,
                   const config::ResolvedConfig& resolved,
                   std::unique_ptr<Connection> conn);
  ~ServerConnection() override;

  uint64_t id() const { return id_; }
  // Posts its receives (the requester may send once it sees the connection
  // established) and joins its loop.
  absl::Status Start(absl::Span<const uint8_t> peer_private_data);
  // A backward call (Server::Call); `done` runs once, on a loop thread,
  // or on this one when refused (the id is then CallId()).
  CallId Call(CallRequest request, Server::Callback done);
  // Server::Cancel: ends the backward call with CANCELLED if still pending.
  void Cancel(CallId call);
  // Calls waited for reassembly memory that another connection released.
  void ResumeAwaitingMemory();
  // The Server goes: disconnect (any thread); the loop retires it once
  // drained. With `force`, retired now, drained or not (on its loop).
  void BeginShutdown();
  // Server::Disconnect: closes the connection for `reason`; false when it
  // is already closing.
  bool Close(absl::string_view reason);
  void ForceRetire();

  Counters counters() const;
  ConnectionMetrics metrics() const;
  // Null once retired.
  std::optional<ConnectionInfo> info() const;

  // Version two (server_v2.cc; server.h): UpdateProperties,
  // RequestPeerProperties, SendOptional from VersionTwoOperations.

 private:
  friend class VersionTwoOperations<ServerConnection>;

  struct Backward {
    Server::Callback done;
    std::optional<Clock::time_point> deadline;
    bool ending = false;        // cancelled for its deadline
    Clock::time_point started;  // call_rtt
  };
  using Outcomes = DriverOutcomes;
  template <typename Answer, typename Operation>
  absl::StatusOr<Answer> AwaitVersionTwo(Operation start, Deadline deadline);

  // ConnectionDriver::Owner
  std::weak_ptr<Owner> WeakOwner() override { return weak_from_this(); }
  // A round, then what the Server learns of it: memory awaited or
  // released, the connection retired.
  std::optional<Clock::time_point> Drive(Clock::time_point now, bool readable,
                                         Outcomes& o) override;
  void OnUpcall(engine::Action& action, Outcomes& o) override;
  // The loop waits for what the endpoint now waits for (mu held).
  void UpdateInterest() override;
  void RunHandler(HandlerJob& job) override;
  absl::Status Refuses(Use use) const override;
  uint64_t budget_releases() const override;

  // With the driver's mu held.
  std::optional<Clock::time_point> DriveConnection(Clock::time_point now,
                                                   bool readable, Outcomes& o);
  // Tells the Server (after the round) whether calls await memory, and
  // whether memory was released.
  void ReportMemory(Outcomes& o);
  void EnforceLimits(Clock::time_point now);
  void ExpireBackward(Clock::time_point now);
  void Retire(Outcomes& o);
  // ServerConnectionEvent::kClosed, once, after the calls that arrived.
  void ReportClosed(Outcomes& o);
  absl::Status ClosedStatus() const;

  ServerCore* const server_;  // alive while this connection is registered
  const std::shared_ptr<ServerShared> shared_;
  const uint64_t id_;
  const std::chrono::milliseconds idle_timeout_;
  const std::chrono::milliseconds request_deadline_;
  const bool backchannel_enabled_;

  // The lock, the connection (null once retired), the loop's rounds.
  ConnectionDriver driver_;
  Counters final_counters_;  // once retired
  IdleWatch idle_;
  AbandonedCallWatch abandoned_;
  uint64_t calls_in_progress_ = 0;  // delivered, reply not yet sent
  bool closed_reported_ = false;
  std::string closed_why_;  // this side closed it for a limit
  std::optional<Clock::time_point> lost_since_;
  bool shutting_down_ = false;
  bool awaiting_memory_ = false;  // reported to the Server
  uint64_t budget_releases_seen_ = 0;
  absl::flat_hash_map<engine::CallId, Backward> backward_;
};

// Instantiated in server_v2.cc, beside ServerConnection::AwaitVersionTwo.
extern template class VersionTwoOperations<ServerConnection>;

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_SERVER_CONNECTION_H_
