// The SVCXPRT behind svc_rdma_create and svc_rdma_backchannel: calls a
// Server (or a Channel's backward handler) delivers wait in a queue whose
// eventfd is the SVCXPRT's descriptor; libtirpc's svc_getreq_common takes
// them one at a time through the xp_ops below and dispatches them to the
// programs registered with svc_reg (svc_rdma.h says what each op does).
//
// The state of the call being dispatched lives with the SVCXPRT it is
// dispatched on: svc_run dispatches on the main one, and each thread of
// svc_rdma_run_threads has an SVCXPRT of its own (registered under a
// descriptor nothing signals), so that threads never share a call.
//
// A listening transport whose configuration names no Runtime runs its
// Server on a Runtime of its own without loop threads, driven by svc_run's
// own thread: a second SVCXPRT (the driver) is registered under the
// runtime's descriptor, and when svc_run finds it readable that thread
// reads the connections itself (Runtime::RunReady) and dispatches the
// calls it finds, as svc_vc reads its sockets: no other thread is woken
// between a call's arrival and its dispatch, nor for its reply. Until
// svc_run first does so, and once svc_rdma_run_threads hands the calls to
// threads, a keeper thread drives the runtime instead (connections are
// then accepted before svc_run starts, and served by the threads).
#ifndef RPCRDMA_ONCRPC_ADAPTER_RDMA_TRANSPORT_H_
#define RPCRDMA_ONCRPC_ADAPTER_RDMA_TRANSPORT_H_

#include <rpc/rpc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oncrpc/adapter/call_queue.h"
#include "oncrpc/adapter/kept_replies.h"
#include "oncrpc/adapter/reply_cache.h"
#include "rpcrdma/address.h"
#include "rpcrdma/oncrpc/config.h"
#include "rpcrdma/runtime.h"
#include "rpcrdma/server.h"

namespace rpcrdma::oncrpc {

struct DispatchState;

class RdmaTransport {
 public:
  // Listens on `uri` (svc_rdma_create): the SVCXPRT owns the transport,
  // svc_destroy deletes it.
  static absl::StatusOr<RdmaTransport*> Listen(absl::string_view uri,
                                               const AdapterConfig& config);
  // Serves the backward calls of a CLIENT's connection to `peer` (the
  // server's URI): Handler() is the Channel's backward handler. The CLIENT
  // owns it; svc_destroy only stops its dispatching.
  static absl::StatusOr<std::unique_ptr<RdmaTransport>> ForBackchannel(
      const AdapterConfig& config, absl::string_view peer);
  ~RdmaTransport();
  RdmaTransport(const RdmaTransport&) = delete;
  RdmaTransport& operator=(const RdmaTransport&) = delete;

  // Null when `xprt` is not an RPC-over-RDMA SVCXPRT.
  static RdmaTransport* Of(const SVCXPRT* xprt);
  SVCXPRT* xprt();
  CallHandler Handler();
  const std::string& uri() const { return uri_; }
  const AdapterConfig& config() const { return config_; }
  // Null for a backchannel.
  Server* server() { return server_.get(); }
  bool RunThreads(u_int threads);
  // svc_rdma_enablecache: once, before calls are dispatched.
  bool EnableCache(size_t entries, size_t max_bytes);
  ReplyCache* cache() { return cache_.load(std::memory_order_acquire); }
  // Replies too large for their call's chunks, until fetched
  // (kept_replies.h).
  KeptReplies& kept_replies() { return kept_replies_; }
  // The connection of the call being dispatched for `request`.
  static uint64_t ConnectionOf(const svc_req* request);
  // Where the client of `connection` connects from (the transport's own
  // address when unknown, or for a backchannel).
  SocketAddress PeerOf(uint64_t connection);
  // Where the client of `connection` connects from, when the Server said
  // so (neither for a connection gone nor for a backchannel).
  std::optional<SocketAddress> KnownPeerOf(uint64_t connection);

 private:
  friend struct DispatchState;
  enum class Dispatcher {
    kMain,    // svc_run's: takes calls from the queue
    kDriver,  // svc_run's too, under the runtime's descriptor (see above)
    kThread,  // one thread's of RunThreads
  };
  explicit RdmaTransport(const AdapterConfig& config, bool owned_by_xprt);
  absl::Status Start();
  DispatchState* AddDispatcher(Dispatcher kind);
  void Stop();
  void OnConnection(const ServerConnectionEvent& event);
  // Own runtime: the keeper drives it while svc_run does not.
  void Keep();
  // From svc_run's thread: the keeper gives way, then this thread reads
  // the connections (calls found wait in the queue without a wake-up).
  void DriveFromCaller(std::chrono::milliseconds timeout);
  // The keeper drives again (threads dispatch, or the Server stops).
  void DriveFromKeeper();
  bool caller_drives() const {
    return caller_drives_.load(std::memory_order_acquire);
  }

  const AdapterConfig config_;
  const bool owned_by_xprt_;
  std::string uri_;
  SocketAddress local_{};
  CallQueue queue_;
  // Set once; dispatch threads read it.
  std::unique_ptr<ReplyCache> cache_owner_;
  std::atomic<ReplyCache*> cache_{nullptr};
  KeptReplies kept_replies_;
  // The Server's runtime when the configuration names none (declared
  // before the Server, which it outlives).
  std::shared_ptr<Runtime> own_runtime_;
  std::unique_ptr<Server> server_;
  // [0] is the main SVCXPRT; then the driver, and one per thread of
  // RunThreads.
  std::vector<std::unique_ptr<DispatchState>> dispatchers_;
  DispatchState* driver_ = nullptr;
  std::vector<std::thread> threads_;
  bool stopped_ = false;

  std::thread keeper_;
  int keeper_wake_fd_ = -1;
  std::mutex keeper_mu_;
  std::condition_variable keeper_cv_;
  bool keeper_stop_ = false;  // guarded by keeper_mu_
  bool keeper_only_ = false;  // svc_run drives no more; keeper_mu_
  std::atomic<bool> caller_drives_{false};  // set under keeper_mu_

  std::mutex peers_mu_;
  // The connections open now, with the address each client connects from
  // when it resolves; the reply cache's set of open ones follows it.
  absl::flat_hash_map<uint64_t, std::optional<SocketAddress>> peers_;
  SocketAddress default_peer_{};
};

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_RDMA_TRANSPORT_H_
