// The state of one Server (rpcrdma/server.h): its listener, on one loop of
// its Runtime, and the connections it accepted, each on a loop of its own
// (round robin), with what they share: the handler and its pool, the
// reassembly budget, the connection events, the counters of connections
// gone.
#ifndef RPCRDMA_PLUGIN_API_SERVER_CORE_H_
#define RPCRDMA_PLUGIN_API_SERVER_CORE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "plugin/api/capture_tap.h"
#include "plugin/api/channel_core.h"
#include "plugin/api/server_connection.h"
#include "plugin/config/config_loader.h"
#include "plugin/runtime/fd_watch.h"
#include "plugin/runtime/worker_pool.h"
#include "rpcrdma/server.h"

namespace rpcrdma::api_internal {

class ServerCore {
 public:
  ServerCore(std::shared_ptr<Runtime> runtime, Server::Handler handler,
             ServerOptions options);
  ~ServerCore();

  absl::Status Start(absl::string_view uri,
                     const config::TransportConfig& config);
  // Server::Shutdown (server.h); OK at once after the first.
  absl::Status Shutdown(Deadline deadline);
  // On a thread of this Server's loops or handler pool, where Shutdown
  // would wait for itself.
  bool InServerThread() const;

  std::string uri() const { return uri_; }
  Counters counters() const;
  Metrics metrics() const;
  size_t connections() const;
  absl::StatusOr<ConnectionInfo> connection_info(ConnectionId connection) const;
  CallId Call(ConnectionId connection, CallRequest request,
              Server::Callback done);
  void Cancel(ConnectionId connection, CallId call);
  absl::Status Disconnect(ConnectionId connection, absl::string_view reason);
  // Version two on one connection (server_v2.cc); NOT_FOUND without it.
  absl::StatusOr<std::shared_ptr<ServerConnection>> Find(
      ConnectionId connection) const;
  const std::shared_ptr<const VersionTwoOptions>& version_two() const {
    return v2_options_;
  }

  // For its connections.
  const CallHandler& handler() const { return handler_; }
  void RunHandler(HandlerJob& job);
  void Notify(const ServerConnectionEvent& event);
  // Loop threads: a connection has drained and left its loop.
  void Retired(uint64_t id);
  // A connection has (or no longer has) calls waiting for reassembly
  // memory; one that released memory asks the waiting ones to try again.
  void AwaitingMemory(const std::shared_ptr<ServerConnection>& connection,
                      bool awaiting);
  void BudgetReleased(ServerConnection* by);

 private:
  // What Shutdown does, the one time it runs.
  absl::Status ShutdownOnce(Deadline deadline);
  void Accept();
  void NoteListenerError(const absl::Status& st);
  void CountServer(uint64_t Counters::*field);
  std::string PeerUri(absl::string_view address) const;

  const std::shared_ptr<Runtime> runtime_;
  const Server::Handler handler_;
  const ServerOptions options_;
  const std::shared_ptr<const VersionTwoOptions> v2_options_;
  runtime::EventLoop* listener_loop_ = nullptr;
  std::unique_ptr<fabric::Fabric> fabric_;
  std::unique_ptr<fabric::Listener> listener_;
  std::unique_ptr<runtime::FdWatch> listener_watch_;
  config::ResolvedConfig resolved_;
  std::shared_ptr<CaptureTap> capture_;  // null without capture_path
  std::shared_ptr<ServerShared> shared_;
  std::unique_ptr<runtime::WorkerPool<HandlerJob>> pool_;
  std::string uri_;
  uint64_t next_conn_ = 1;       // listener loop only
  bool accept_failing_ = false;  // listener loop only

  mutable std::mutex mu_;
  std::condition_variable retired_cv_;
  std::map<uint64_t, std::shared_ptr<ServerConnection>> conns_;
  absl::flat_hash_map<ServerConnection*, std::weak_ptr<ServerConnection>>
      awaiting_;
  Counters closed_counters_;
  Counters server_counters_;  // the listener's: rejects, accept errors
  bool stopping_ = false;
  // Shutdown runs once; a second caller waits for it, then returns OK.
  std::once_flag shut_down_;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_SERVER_CORE_H_
