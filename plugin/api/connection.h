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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plugin/config/config_loader.h"
#include "plugin/engine/engine.h"
#include "plugin/fabric/buffer_pool.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/registration_cache.h"
#include "plugin/include/rpcrdma/types.h"

namespace rpcrdma::api_internal {

enum class Role { kRequester, kResponder };

// Where a URI points: which fabric and its address syntax.
struct ParsedUri {
  config::TransportConfig::Fabric fabric =
      config::TransportConfig::FABRIC_UNSPECIFIED;
  std::string address;  // as the fabric expects it
};
absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri);
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
    std::function<void(engine::DeliverCall&)> deliver;
    std::function<void(engine::ReplySent&)> reply_sent;
    std::function<void(engine::CompleteCall&)> complete;
    std::function<void(engine::FailCall&)> fail;
    // When set, sees every message this side sends (`sent`) or receives,
    // with the R_Key of a Send With Invalidate (capture_tap.h).
    std::function<void(bool sent, absl::Span<const uint8_t> message,
                       std::optional<uint32_t> invalidate_rkey)>
        capture;
  };

  Connection(std::unique_ptr<fabric::Endpoint> endpoint, engine::Config config,
             Role role, Hooks hooks);
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
  // Consumes the endpoint's completions and connection events.
  void Poll();
  // Starts an orderly disconnect.
  void Disconnect();

  bool disconnected() const { return disconnected_; }
  // Disconnected and every posted operation has completed: safe to destroy.
  bool finished() const { return disconnected_ && outstanding_ == 0; }
  Counters counters() const;
  ConnectionInfo info() const;

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
  void TrySends(engine::Actions& out);
  void OnCompletion(const fabric::Completion& c, engine::Actions& out);
  // Ends the connection; `what` becomes the reason reported with the
  // calls it fails, unless one is known already.
  void Fatal(absl::string_view what);
  void FatalCompletion(absl::string_view what, const fabric::Completion& c);
  void NoteLoss(absl::string_view what);
  // Counts one transport message this side sent or received;
  // `remote_invalidation`: it was (or came as) a Send With Invalidate.
  void CountMessage(absl::Span<const uint8_t> bytes, bool remote_invalidation,
                    bool sent);

  std::unique_ptr<fabric::Endpoint> endpoint_;
  engine::Config config_;
  Role role_;
  Hooks hooks_;
  fabric::RegistrationCache cache_;
  engine::Engine engine_;
  std::unique_ptr<fabric::BufferPool> recv_pool_;
  std::unique_ptr<fabric::BufferPool> send_pool_;
  uint32_t receive_deficit_ = 0;
  std::deque<engine::Send> pending_sends_;
  struct SendInFlight {
    uint32_t slot = 0;
    engine::OpId op = 0;
  };
  std::map<uint64_t, SendInFlight> sends_;
  uint64_t next_send_ = 1;
  std::map<uint64_t, fabric::RegistrationCache::Lease> read_leases_;
  std::map<uint64_t, fabric::RegistrationCache::Lease> write_leases_;
  std::map<uint32_t, fabric::RegistrationCache::Lease> windows_;
  uint64_t outstanding_ = 0;
  bool disconnected_ = false;
  std::string lost_reason_;  // the first known cause of the loss
  bool running_ = false;
  std::deque<engine::Action> queue_;

  ConnectionInfo ComputeInfo() const;

  mutable std::mutex counters_mu_;
  Counters counters_;
  ConnectionInfo info_;  // as of the end of the latest Run() that changed it
  // Loop thread only: what Run() has published.
  uint32_t peak_outstanding_ = 0;
  bool info_settled_ = false;
};

}  // namespace rpcrdma::api_internal

#endif  // RPCRDMA_PLUGIN_API_CONNECTION_H_
