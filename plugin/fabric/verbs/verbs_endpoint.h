// One reliable connected queue pair on rdma-core: its rdma-cm id and event
// channel, protection domain, completion queue with its completion
// channel, and the bookkeeping that turns work completions into fabric
// Completions (see verbs_fabric.h for the semantics).
#ifndef RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ENDPOINT_H_
#define RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ENDPOINT_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/verbs/cm_events.h"
#include "plugin/fabric/verbs/verbs_fabric.h"
#include "plugin/fabric/verbs/verbs_memory.h"
#include "plugin/fabric/verbs/verbs_resources.h"

namespace rpcrdma::fabric::verbs {

// What the passive side learned from the connect request: the read depths
// as the CM reports them from the receiver's point of view.
struct PeerDepths {
  uint32_t initiator_depth = 0;
  uint32_t responder_resources = 0;
};

class VerbsEndpoint final : public Endpoint {
 public:
  // An endpoint on `id`, whose route is resolved (active side) or which
  // came from a connect request (passive side); `channel` is the id's
  // event channel. Creates the protection domain, completion queue and
  // queue pair.
  static absl::StatusOr<std::unique_ptr<VerbsEndpoint>> Create(
      CmChannel channel, CmId id, const EndpointOptions& options,
      const VerbsFabricOptions& fabric_options);
  // An endpoint whose connect failed before it had a device; it reports
  // kUnreachable with `detail` and nothing else.
  static absl::StatusOr<std::unique_ptr<VerbsEndpoint>> CreateUnreachable(
      std::string detail);

  ~VerbsEndpoint() override;

  // Active side: rdma_connect with `private_data`.
  absl::Status Connect(absl::Span<const uint8_t> private_data);
  // Passive side: rdma_accept with `private_data`.
  absl::Status Accept(absl::Span<const uint8_t> private_data,
                      const PeerDepths& peer);

  const Capabilities& capabilities() const override { return caps_; }
  absl::StatusOr<std::unique_ptr<Registration>> Register(
      absl::Span<uint8_t> memory) override;
  absl::StatusOr<RemoteRegion> BindWindow(uint64_t wr_id,
                                          const LocalBuffer& buffer,
                                          uint32_t access) override;
  absl::Status InvalidateWindow(uint64_t wr_id, uint32_t handle) override;
  absl::Status PostReceive(uint64_t wr_id, const LocalBuffer& buffer) override;
  absl::Status PostSend(uint64_t wr_id, absl::Span<const LocalBuffer> gather,
                        std::optional<uint32_t> invalidate) override;
  absl::Status PostRdmaRead(uint64_t wr_id,
                            absl::Span<const LocalBuffer> scatter,
                            const RemoteRegion& source) override;
  absl::Status PostRdmaWrite(uint64_t wr_id,
                             absl::Span<const LocalBuffer> gather,
                             const RemoteRegion& target) override;
  int event_fd() const override { return epoll_.get(); }
  size_t PollCompletions(absl::Span<Completion> out) override;
  std::optional<ConnectionEvent> PollConnectionEvent() override;
  void OnEventFdReadable() override {
    cq_notified_ = true;
    cm_notified_ = true;
  }
  void OnSpin() override { spinning_ = true; }
  void Disconnect() override;

 private:
  enum class State { kConnecting, kConnected, kDisconnecting, kClosed };
  // A posted work request, by the wr_id the endpoint gave it.
  struct Work {
    uint64_t wr_id = 0;
    WorkType type = WorkType::kReceive;
    uint32_t handle = 0;  // windows: the handle bound or invalidated
  };

  explicit VerbsEndpoint(const VerbsFabricOptions& fabric_options)
      : fabric_options_(fabric_options) {}

  absl::Status InitEventFds();
  absl::Status WatchFd(int fd);
  absl::Status InitVerbs(const EndpointOptions& options);
  // The completion channel and queue, with room for `entries`.
  absl::Status CreateCompletionQueue(ibv_context* context, int entries);
  // The queue pair on the completion queue, with what it got of `asked`.
  absl::StatusOr<ibv_qp_cap> CreateQueuePair(const ibv_qp_cap& asked);
  absl::Status CheckDevice() const;
  absl::Status CheckConnected() const;
  absl::StatusOr<std::vector<ibv_sge>> Gather(
      absl::Span<const LocalBuffer> buffers, uint32_t max_sge,
      uint64_t* total) const;
  absl::StatusOr<ibv_sge> Element(const LocalBuffer& buffer) const;
  uint64_t Track(uint64_t wr_id, WorkType type, uint32_t handle = 0);
  // RDMA Read (type kRdmaRead) or Write (kRdmaWrite) of `local` from or
  // to `remote`.
  absl::Status PostRdma(uint64_t wr_id, absl::Span<const LocalBuffer> local,
                        const RemoteRegion& remote, WorkType type);
  absl::Status PostSendWr(ibv_send_wr& wr, absl::string_view verb,
                          uint64_t wr_id, WorkType type, uint32_t handle = 0);

  void ReapCompletions();
  void Complete(const ibv_wc& wc);
  void ReapCmEvents();
  void HandleCmEvent(const rdma_cm_event& event);
  void Emit(ConnectionEventType type, std::vector<uint8_t> private_data,
            std::string detail);
  void Fail(std::string why);
  void MoveQpToError();
  void UpdatePending();

  VerbsFabricOptions fabric_options_;
  Capabilities caps_;
  State state_ = State::kConnecting;
  bool active_ = false;
  bool accepted_ = false;  // passive side: rdma_accept succeeded
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Work> work_;
  std::deque<Completion> completions_;
  std::deque<ConnectionEvent> events_;
  bool pending_signalled_ = false;
  // Owner-driven (EndpointOptions, fabric.h): the completion and CM
  // channels are read only after the owner saw event_fd() readable, the
  // completion queue also when it spins; queued work needs no signal.
  bool owner_driven_ = false;
  bool cq_notified_ = false;
  bool cm_notified_ = false;
  bool spinning_ = false;
  std::string failure_;  // why this side started the disconnect

  // Destroyed in reverse order: the id (with its queue pair) before the
  // completion queue and the protection domain, and before its channel.
  Fd epoll_;
  Fd pending_;  // eventfd, readable while completions_/events_ hold work
  CmChannel channel_;
  std::shared_ptr<Domain> domain_;
  CompChannel comp_channel_;
  Cq cq_;
  CmId id_;
};

}  // namespace rpcrdma::fabric::verbs

#endif  // RPCRDMA_PLUGIN_FABRIC_VERBS_VERBS_ENDPOINT_H_
