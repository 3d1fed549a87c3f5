// The state of one Channel (rpcrdma/channel.h): its connection, the calls
// it has pending, reconnects and the limits against hostile peers, driven by
// one event loop of its Runtime and by the threads that call into it.
//
// Concurrency: one mutex (the ConnectionDriver's) guards everything. The
// loop thread takes it when the connection's descriptor is readable or a
// deadline comes; a calling thread takes it to start or cancel a call, and
// sends the call itself, so a call costs no hand-over to the loop. Whatever a
// round of work produces for the user (callbacks, backward calls, replies to
// release) is run after the mutex is released.
#ifndef RPCRDMA_PLUGIN_API_CHANNEL_CORE_H_
#define RPCRDMA_PLUGIN_API_CHANNEL_CORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/connection.h"
#include "plugin/api/connection_driver.h"
#include "plugin/api/limits.h"
#include "plugin/api/promise_pool.h"
#include "plugin/api/reconnect_schedule.h"
#include "plugin/api/reply_target.h"
#include "plugin/api/version_two_user.h"
#include "plugin/runtime/event_loop.h"
#include "plugin/runtime/fd_watch.h"
#include "plugin/runtime/thread_wake.h"
#include "plugin/runtime/worker_pool.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/runtime.h"

namespace rpcrdma::api_internal {

class ChannelCore final : public ConnectionDriver::Owner,
                          public VersionTwoOperations<ChannelCore>,
                          public std::enable_shared_from_this<ChannelCore> {
 public:
  ChannelCore(std::shared_ptr<Runtime> runtime, CallHandler backward_handler);
  ~ChannelCore() override;

  // Connects (blocking, on the calling thread) and joins a loop.
  absl::Status Start(absl::string_view uri,
                     const config::TransportConfig& config);
  // `blocking`: made by BlockingCall, whose thread reads the reply.
  Channel::CallId Submit(CallRequest request, Channel::Callback done,
                         bool blocking = false);
  absl::StatusOr<Reply> BlockingCall(CallRequest request);
  // The promises of Channel::Call's futures (any thread).
  PromisePool& promises() { return promises_; }
  // BlockingCall in two steps (channel.h StartCall, Await).
  Channel::CallId StartCall(CallRequest request);
  absl::StatusOr<Reply> Await(Channel::CallId id);
  void Cancel(Channel::CallId id);
  // Channel::Shutdown (channel.h); OK at once after the first.
  absl::Status Shutdown(Deadline deadline);
  bool InLoopThread() const { return driver_.loop()->InLoopThread(); }
  // The loop or a backward handler thread: where Shutdown would wait for
  // itself.
  bool InOwnThread() const {
    return InLoopThread() ||
           (handler_pool_ != nullptr && handler_pool_->InWorkerThread());
  }

  Counters counters() const;
  Metrics metrics() const;
  bool connected() const { return connected_.load(); }
  ConnectionInfo connection_info() const;
  // Version two (channel_v2.cc; rpcrdma/version_two.h). The options are
  // set before Start().
  void SetVersionTwo(VersionTwoOptions options);
  absl::Status RequestPeerReceiveSize(uint32_t octets, Deadline deadline);
  absl::Status UpdateReceiveSize(uint32_t octets, Deadline deadline);
  // UpdateProperties, RequestPeerProperties, SendOptional: from
  // VersionTwoOperations.

 private:
  friend class VersionTwoOperations<ChannelCore>;
  using Outcomes = DriverOutcomes;

  // ConnectionDriver::Owner. The driver is the loop's source for the
  // Channel's deadlines (its descriptors have watches of their own) and
  // the target of backward replies (RFC 8167).
  std::weak_ptr<Owner> WeakOwner() override { return weak_from_this(); }
  // One round of the loop's work: the connection, reconnects, limits and
  // deadlines. Returns when to run again at the latest.
  std::optional<Clock::time_point> Drive(Clock::time_point now, bool readable,
                                         Outcomes& o) override;
  void OnUpcall(engine::Action& action, Outcomes& o) override;
  // The loop waits for what the endpoints now wait for (fabric.h
  // event_fd_events: writability while output is held back).
  void UpdateInterest() override;
  void RunHandler(HandlerJob& job) override;
  absl::Status Refuses(Use use) const override;

  struct Pending {
    // Unset while the call waits for a connection (held for a re-send).
    std::optional<engine::CallId> engine_id;
    Channel::Callback done;
    std::optional<Clock::time_point> deadline;
    // Kept for a re-send when the caller allows it; otherwise moved into
    // the engine when the call is started.
    CallRequest request;
    // Set when a deadline or Cancel() ended the call while the engine still
    // had it: the status it ends with, even if the connection goes first.
    std::optional<absl::Status> ending;
    Clock::time_point sent_at;  // handed to the current engine (call_rtt)
  };
  // What a BlockingCall waits for (guarded by mu_), and the callback that
  // fills it: run on whichever thread completes the call, the one reading
  // for blocking calls included (it only fills the slot).
  struct BlockingSlot {
    bool done = false;
    bool awaited = false;  // a thread is in Await for it
    std::optional<absl::StatusOr<Reply>> result;
  };
  struct BlockingCompletion {
    ChannelCore* core;
    BlockingSlot* slot;
    void operator()(absl::StatusOr<Reply> result) const;
  };
  // Wakes every thread waiting for a blocking call: the one that reads the
  // connection (asleep in poll(), where only its ThreadWake reaches it)
  // unless that is the calling thread, and those on blocking_cv_. mu_ held.
  void WakeBlockingCalls();
  // A blocking call's thread reads the connection until its own call is
  // done (channel.h BlockingCall); mu_ held on entry and exit.
  bool SpinForBlockingCall(std::unique_lock<std::mutex>& lock,
                           Connection* conn);
  void RunBlockingOutcomes(std::unique_lock<std::mutex>& lock);
  void ReadForBlockingCalls(std::unique_lock<std::mutex>& lock,
                            const BlockingSlot& slot);
  // The waiting half of BlockingCall and Await: until `slot` is done.
  absl::StatusOr<Reply> WaitForBlockingSlot(BlockingSlot& slot);

  // Starts a version-two operation on the connection (`start`, under the
  // lock) and waits for its answer until `deadline`.
  template <typename Answer, typename Operation>
  absl::StatusOr<Answer> AwaitVersionTwo(Operation start, Deadline deadline);

  // The rest runs with the driver's mu held.
  std::unique_ptr<Connection> MakeConnection(
      std::unique_ptr<fabric::Endpoint> endpoint);
  void Watch(std::unique_ptr<runtime::FdWatch>& watch,
             fabric::Endpoint& endpoint);
  void Unwatch(std::unique_ptr<runtime::FdWatch>& watch);
  void Complete(Channel::CallId id, absl::StatusOr<Reply> result, Outcomes& o);
  // `unsent_xdr`: the stream of a call the lost connection never sent.
  void Finish(engine::CallId engine_id, absl::StatusOr<Reply> result,
              Outcomes& o, std::vector<uint8_t>* unsent_xdr = nullptr);
  bool Up() const { return driver_.Up(); }
  void Accept(Channel::CallId id, CallRequest request, Channel::Callback done,
              Outcomes& o);
  void Send(Channel::CallId id, Outcomes& o);
  void CancelCall(Channel::CallId id, absl::Status status, Outcomes& o);
  std::optional<Clock::time_point> EnforceLimits(Clock::time_point now);
  void Retire(Clock::time_point now, Outcomes& o);
  void Backoff(Clock::time_point now, absl::string_view cause);
  // UNAVAILABLE for a call made while there is no connection, saying why
  // it was lost and when the next attempt is. mu_ held.
  absl::Status NotConnectedError(Clock::time_point now) const;
  // Whether a call made while there is no connection waits for one.
  static bool WaitsForConnection(const CallRequest& request) {
    return request.retry_on_reconnect || request.wait_for_ready;
  }
  void Reconnect(Clock::time_point now, Outcomes& o);
  absl::Status AwaitVersion(absl::string_view uri, Clock::time_point until);
  // Start's settings from the resolved configuration: deadlines, backoff,
  // the engine's configuration, the private data, the handler pool.
  void ApplySettings(const config::ResolvedConfig& resolved);
  // What Shutdown does, the one time it runs.
  absl::Status ShutdownOnce(Deadline deadline);
  uint32_t DrawXid();

  const std::shared_ptr<Runtime> runtime_;
  const CallHandler backward_handler_;
  std::unique_ptr<runtime::WorkerPool<HandlerJob>> handler_pool_;

  // Fixed once Start() returns.
  std::unique_ptr<fabric::Fabric> fabric_;
  std::shared_ptr<CaptureTap> capture_;
  std::string address_;
  std::string uri_;
  engine::Config ecfg_;
  std::vector<uint8_t> private_data_;
  std::chrono::milliseconds default_deadline_{0};
  std::chrono::milliseconds idle_timeout_{0};

  // The lock, the current connection and its generation, the loop's
  // rounds, backward replies and version two's waits.
  ConnectionDriver driver_;
  std::mt19937 rng_{std::random_device{}()};
  std::unique_ptr<runtime::FdWatch> conn_watch_;
  std::unique_ptr<fabric::Endpoint> connecting_;
  std::unique_ptr<runtime::FdWatch> connecting_watch_;
  absl::flat_hash_map<Channel::CallId, Pending> pending_;
  absl::flat_hash_map<engine::CallId, Channel::CallId> by_engine_;
  uint64_t next_id_ = 1;  // of the next Channel::CallId
  bool shutting_down_ = false;
  // Shutdown runs once; a second caller waits for it, then returns OK.
  std::once_flag shut_down_;
  // The connection was closed for idleness (timeouts.idle_ms): no
  // reconnect until a call is made, and calls wait for it.
  bool idle_closed_ = false;
  std::optional<Clock::time_point> lost_since_;
  ReconnectSchedule reconnect_;
  AbandonedCallWatch abandoned_{std::chrono::milliseconds(0)};
  std::optional<IdleWatch> idle_;  // of the current connection
  std::string last_loss_;          // why the latest connection was lost
  Counters past_;                  // connections lost
  ConnectionInfo last_info_;
  uint64_t reconnects_ = 0;
  std::atomic<bool> connected_{true};
  // Blocking calls: whether one of their threads reads the connection, and
  // where they wait for their completion or for the reading to be free.
  bool reading_for_blocking_calls_ = false;
  // The reading thread and its wake-up, while reading_for_blocking_calls_.
  std::thread::id blocking_reader_;
  const runtime::ThreadWake* waking_reader_ = nullptr;
  std::condition_variable blocking_cv_;
  // Between blocking calls the loop keeps not watching the connection
  // (each call would otherwise cost two epoll_ctl): until a call that is
  // not blocking, or a reconnect, needs it to. Deadlines still run, and a
  // lost connection (EPOLLHUP) is reported to the loop regardless.
  bool parked_for_blocking_calls_ = false;
  // Calls made by StartCall, until Await takes their outcome.
  absl::flat_hash_map<Channel::CallId, std::unique_ptr<BlockingSlot>> started_;
  // Slots Await is done with, for the next StartCall: a started call
  // allocates none in steady state. At most kMostSpareSlots are kept, so
  // that a burst of started calls leaves little behind.
  static constexpr size_t kMostSpareSlots = 64;
  std::vector<std::unique_ptr<BlockingSlot>> spare_slots_;
  PromisePool promises_;
};

// Testing: how long the thread that reads for blocking calls sleeps in
// poll() at most (20 ms by default; nullopt restores it). A test makes it
// long to show that no completion depends on that bound to be noticed.
void SetBlockingReadBoundForTesting(
    std::optional<std::chrono::milliseconds> bound);

// Instantiated in channel_v2.cc, beside ChannelCore::AwaitVersionTwo.
extern template class VersionTwoOperations<ChannelCore>;

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_CHANNEL_CORE_H_
