// The server side under TRdmaServerSocket and TRdmaServer: an
// rpcrdma::Server serving the bridge program, its connections, and where
// their calls go.
#ifndef RPCRDMA_BRIDGE_LISTENER_H_
#define RPCRDMA_BRIDGE_LISTENER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "bridge/responder_core.h"
#include "rpcrdma/server.h"

namespace rpcrdma::thrift::internal {

// A THRIFT_CALL (with its responder) or THRIFT_ONEWAY (answered on
// receipt: none, unless over its connection's OnewayBudget), and where
// its arguments start.
struct QueuedCall {
  IncomingCall call;
  std::optional<Responder> responder;
  size_t args_offset = 0;
  bool oneway = false;
  // A oneway's share of its connection's OnewayBudget, given back when
  // the processor is done with it (or the call is dropped).
  std::shared_ptr<void> acknowledged;
};

// Oneways of one connection answered on receipt and not yet processed.
// RFC 8166 §3.3.1: an answered call returns its credit, so without a bound
// a client could queue any amount of work and memory on the server. Within
// the bound a oneway is answered on receipt; beyond it, once processed,
// holding the client's credit meanwhile: the client waits.
class OnewayBudget : public std::enable_shared_from_this<OnewayBudget> {
 public:
  static constexpr uint32_t kMaxCalls = 64;
  static constexpr uint64_t kMaxOctets = uint64_t{8} << 20;
  // A share for a oneway of `octets`, or null when the bound is reached.
  std::shared_ptr<void> Take(uint64_t octets);

 private:
  std::mutex mu_;
  uint32_t calls_ = 0;
  uint64_t octets_ = 0;
};

// Answers what a bridge endpoint answers by itself on a loop thread (NULL,
// FETCH, other programs and procedures, ONEWAY's early reply within
// `oneways`, always without it) and hands THRIFT_CALL and THRIFT_ONEWAY
// calls to `serve`. RFC 5531 errors for what it does not serve.
void Dispatch(IncomingCall call, Responder responder, ReplyStash& stash,
              const std::function<void(QueuedCall)>& serve,
              OnewayBudget* oneways = nullptr);

class Listener;

// One connection of a Listener.
class ConnectionState {
 public:
  ConnectionState(ConnectionId connection, std::string client,
                  std::weak_ptr<Listener> owner)
      : id(connection),
        peer(std::move(client)),
        listener(std::move(owner)),
        stash(std::make_shared<ReplyStash>()),
        oneways(std::make_shared<OnewayBudget>()) {}

  const ConnectionId id;
  const std::string peer;
  const std::weak_ptr<Listener> listener;
  const std::shared_ptr<ReplyStash> stash;
  const std::shared_ptr<OnewayBudget> oneways;
  std::atomic<uint32_t> next_xid{0};

  // Calls waiting for the connection's transport (TRdmaServerSocket).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<QueuedCall> calls;
  bool closed = false;
  bool interrupted = false;
  std::string closed_why;
  // Accepted after the server stopped listening: its calls are refused.
  bool refused = false;
};

// The connection whose call the calling thread serves.
std::shared_ptr<ConnectionState>& CurrentConnectionState();

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  struct Hooks {
    std::function<void(const std::shared_ptr<ConnectionState>&)> accepted;
    std::function<void(const std::shared_ptr<ConnectionState>&, QueuedCall)>
        call;
    std::function<void(const std::shared_ptr<ConnectionState>&)> closed;
  };
  static absl::StatusOr<std::shared_ptr<Listener>> Start(
      const std::string& uri, const config::TransportConfig& config,
      std::shared_ptr<Runtime> runtime, Hooks hooks);
  ~Listener();

  // Stops listening and closes every connection; their states are closed
  // when it returns.
  void Stop();
  std::string uri() const { return uri_; }
  // The configuration's limits.max_header_segments (backward calls).
  uint32_t header_segments() const { return header_segments_; }
  Counters counters() const;
  size_t connections() const;
  // The Server, for backward calls; null once stopped.
  std::shared_ptr<Server> server() const;
  absl::Status Disconnect(ConnectionId connection, absl::string_view reason);
  // Every connection's transport, now and later, is interrupted.
  void InterruptChildren();
  // Connections accepted from now on get their calls refused.
  void RefuseNewConnections();

 private:
  explicit Listener(Hooks hooks) : hooks_(std::move(hooks)) {}
  void OnEvent(const ServerConnectionEvent& event);
  void OnCall(IncomingCall call, Responder responder);
  void Close(const std::shared_ptr<ConnectionState>& state,
             const std::string& why);

  const Hooks hooks_;
  std::string uri_;
  uint32_t header_segments_ = 8;
  mutable std::mutex mu_;
  std::shared_ptr<Server> server_;
  std::map<ConnectionId, std::shared_ptr<ConnectionState>> connections_;
  Counters final_counters_;
  bool children_interrupted_ = false;
  bool refusing_ = false;
  bool stopped_ = false;
};

// A fixed pool of threads for processors.
class WorkerPool {
 public:
  WorkerPool(uint32_t threads, const std::string& name);
  // Runs what was submitted, then joins the threads.
  ~WorkerPool();
  void Submit(std::function<void()> job);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_LISTENER_H_
