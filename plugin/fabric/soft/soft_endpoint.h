// One soft endpoint: the model of a reliable connected queue pair with its
// completion queue and protection domain, driven by the caller through
// event_fd() and the Poll* calls (no threads).
//
// event_fd() is an epoll descriptor holding the socket (readable, and
// writable while output is pending) and an eventfd that is kept readable
// while completions or connection events are queued.
#ifndef RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_ENDPOINT_H_
#define RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_ENDPOINT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/fabric/fabric.h"
#include "plugin/fabric/soft/soft_cma_gate.h"
#include "plugin/fabric/soft/soft_fabric.h"
#include "plugin/fabric/soft/soft_memory.h"
#include "plugin/fabric/soft/soft_socket.h"
#include "plugin/fabric/soft/soft_wire.h"
#include "plugin/memory/ring_queue.h"

namespace rpcrdma::fabric::soft {

// The status of a work request as one octet on the wire (soft_wire.h).
inline uint8_t StatusByte(WorkStatus status) {
  return static_cast<uint8_t>(status);
}
inline std::string Errno(int err) { return std::string(std::strerror(err)); }

// Checks endpoint options against the fabric's limits.
absl::Status ValidateEndpointOptions(const SoftFabricOptions& fabric,
                                     const EndpointOptions& options);

// The process at the other end of a Unix-domain connection, for the
// cross-memory path.
struct PeerProcess {
  int pid = 0;
  UniqueFd pidfd;  // invalid where pidfd_open(2) is not allowed
  // The shared one for `pid`.
  static std::shared_ptr<PeerProcess> Of(int pid);
  // True once it has exited (and its pid may name another process).
  bool Exited() const;
};

class SoftEndpoint : public Endpoint {
 public:
  // Active side: `stream` is connecting (or connected) to a listener;
  // `in_progress` when the socket connect has not finished. A CONNECT frame
  // carrying `private_data` is queued.
  static absl::StatusOr<std::unique_ptr<SoftEndpoint>> Connect(
      const SoftFabricOptions& fabric, const EndpointOptions& options,
      FrameStream stream, bool in_progress,
      absl::Span<const uint8_t> private_data);
  // Active side whose socket connect already failed: the endpoint reports
  // kUnreachable.
  static absl::StatusOr<std::unique_ptr<SoftEndpoint>> Unreachable(
      const SoftFabricOptions& fabric, const EndpointOptions& options,
      std::string detail);
  // Passive side: `stream` delivered `connect` (its CONNECT frame); an
  // ACCEPT carrying `private_data` is queued.
  static absl::StatusOr<std::unique_ptr<SoftEndpoint>> Accept(
      const SoftFabricOptions& fabric, const EndpointOptions& options,
      FrameStream stream, uint32_t peer_initiator_depth,
      uint32_t peer_responder_resources,
      absl::Span<const uint8_t> private_data);

  ~SoftEndpoint() override = default;

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
  // The socket itself for an owner-driven endpoint (EndpointOptions), an
  // epoll set of the socket and a signal otherwise.
  int event_fd() const override {
    if (!single_fd_) return epoll_.get();
    return stream_.open() ? stream_.fd() : held_fd_.get();
  }
  uint32_t event_fd_events() const override;
  size_t PollCompletions(absl::Span<Completion> out) override;
  std::optional<ConnectionEvent> PollConnectionEvent() override;
  void Disconnect() override;
  void OnEventFdReadable() override {
    owner_driven_ = true;
    input_ready_ = true;
  }
  std::optional<std::chrono::steady_clock::time_point> poll_deadline()
      const override {
    if (state_ == State::kConnecting && answer_due_ &&
        (!ack_due_ || *answer_due_ < *ack_due_)) {
      return answer_due_;
    }
    return ack_due_;
  }

  // True once the peer has accepted this side's offer of cross-memory
  // attach: this side's RDMA Reads and Writes then move by
  // process_vm_readv/process_vm_writev instead of through the socket.
  bool uses_cross_memory() const { return cma_out_; }
  // RDMA Reads and Writes this side sent as cross-memory requests.
  uint64_t cross_memory_operations() const { return cma_operations_; }

 private:
  enum class State { kConnecting, kEstablished, kClosed };

  // Send-queue work waiting for the peer's answer.
  struct Pending {
    uint64_t wr_id = 0;
    WorkType type = WorkType::kSend;
    absl::InlinedVector<absl::Span<uint8_t>, 2> scatter;  // RDMA Read target
    uint64_t expected = 0;                                // RDMA Read length
    uint64_t received = 0;
    bool cross_memory = false;  // sent as READ_REQ_CMA or WRITE_CMA
  };
  struct Receive {
    uint64_t wr_id = 0;
    absl::Span<uint8_t> buffer;
  };
  // Output that is produced piece by piece as the socket drains, kept in
  // order with whole frames.
  struct Outgoing {
    enum class Kind {
      kFrames,        // whole frames
      kReadRequest,   // a READ_REQ waiting for the initiator depth
      kWrite,         // an RDMA Write streamed as WRITE pieces
      kReadResponse,  // READ_RESP pieces answering a READ_REQ
    } kind = Kind::kFrames;
    std::vector<uint8_t> frames;  // kFrames
    uint64_t id = 0;
    uint32_t handle = 0;
    uint64_t address = 0;
    uint64_t length = 0;
    uint64_t done = 0;
    std::vector<absl::Span<const uint8_t>> gather;  // kWrite
  };
  struct Queued {
    Completion completion;
    uint64_t ready_at_poll = 0;
  };

  SoftEndpoint(const SoftFabricOptions& fabric, const EndpointOptions& options);
  absl::Status Init();

  // Moves bytes: finishes the socket connect, reads and handles frames,
  // produces and writes output.
  void Progress();
  // True when the socket's connect has finished; false while it is still
  // going (the wait for it is armed) or when it failed (the endpoint is
  // then closed).
  bool FinishConnect();
  // Reads slices of input up to kReadBudget, handling whole frames.
  void ReadInput();
  // Decodes and handles the whole frames in the input buffer.
  void HandleInput();
  // The socket ended or failed: how that ends the endpoint depends on
  // where the connection was.
  void StreamLost(std::string detail);
  // Produces output and writes it until the socket is full, nothing is
  // left, or what is left waits for the peer.
  void WriteOutput();
  void HandleFrame(const Frame& frame);
  void HandleSend(const Frame& frame);
  void HandleAck(const Frame& frame);
  void HandleReadReq(const Frame& frame);
  void HandleReadResp(const Frame& frame);
  void HandleWrite(const Frame& frame);
  void HandleCmaOffer(const Frame& frame);
  void HandleCmaAnswer(const Frame& frame);
  // READ_REQ_CMA and WRITE_CMA: checks the window, then copies.
  void HandleCmaRequest(const Frame& frame);
  // Queues CMA_OFFER when the options ask for it and the socket is a
  // Unix-domain one.
  void OfferCrossMemory();
  // Reads and writes back the peer's cookie; on success records its pid.
  // Then maps its gate (`gate_fd` in the peer).
  bool ProbePeer(uint64_t address, uint64_t cookie, uint32_t gate_fd);
  // True when the peer process is known to have exited.
  bool PeerExited() const;
  // Arms the gate slot of the operation `seq` before its cross-memory
  // request is sent; false when it has to go through the socket.
  bool ArmCrossMemory(uint64_t seq);
  // Called before `p` (operation `seq`) completes, however it does: once
  // this returns the peer can no longer copy for it.
  void WithdrawCrossMemory(uint64_t seq, const Pending& p);
  // The segments naming `list` in this process, or nullopt when there are
  // more than a cross-memory request carries.
  template <typename T>
  static std::optional<std::vector<CmaSegment>> SegmentsOf(
      absl::Span<const absl::Span<T>> list);
  // Appends as much output as the high-water mark allows; true when the
  // rest waits for the peer (a read beyond the initiator depth).
  bool Produce();
  enum class Produced { kMore, kDone, kBlocked, kFailed };
  Produced ProduceOne(Outgoing& item);
  Produced ProduceReadRequest(Outgoing& item);
  Produced ProduceWrite(Outgoing& item);
  Produced ProduceReadResponse(Outgoing& item);
  // Sends `item` as a cross-memory request (READ_REQ_CMA or WRITE_CMA)
  // naming `local` when the options, its length and the gate allow; false
  // when it has to go through the socket.
  template <typename T>
  bool SendCrossMemoryRequest(FrameType type, const Outgoing& item,
                              absl::Span<const absl::Span<T>> local);
  // Where a new whole frame goes so it stays in order behind queued
  // output.
  std::vector<uint8_t>& FrameBuffer();
  void CloseSocket();

  // Ends the connection: the operation `failed_seq` (if any) completes
  // with `status`, everything else outstanding with kFlushed, then
  // `event` is queued. With `orderly`, output already produced and then
  // `final_frame` are still sent and the socket is shut down after them;
  // otherwise the socket is cut at once.
  void Close(ConnectionEventType event, std::string detail, bool orderly,
             std::optional<uint64_t> failed_seq = {},
             WorkStatus status = WorkStatus::kFlushed,
             std::vector<uint8_t> private_data = {},
             std::vector<uint8_t> final_frame = {});
  void ProtocolError(std::string detail);

  // The connection handshake of the active side, in
  // soft_endpoint_handshake.cc: the bound on the listener's answer
  // (SoftFabricOptions::handshake_answer_timeout_ms), armed once the
  // socket has connected, and the failures that say the peer is not a
  // soft-fabric listener.
  void ArmAnswerDeadline();
  // True when the answer's bound has passed: the endpoint is then closed.
  bool AnswerOverdue();
  // The peer sent `input`, which does not begin with ACCEPT or REJECT.
  void NotAHandshake(absl::Span<const uint8_t> input);
  // The peer closed the socket before it answered.
  void ClosedDuringHandshake();
  // The peer reported a fatal error for `seq` (or a protocol error).
  void FailFromPeer(uint64_t seq, WorkStatus status);
  void Complete(uint64_t wr_id, WorkType type, WorkStatus status,
                uint32_t byte_length = 0,
                std::optional<uint32_t> invalidated = {});
  absl::Status CheckSendQueue(size_t sge_count, size_t max_sge) const;
  using Resolved = absl::InlinedVector<absl::Span<uint8_t>, 4>;
  absl::StatusOr<Resolved> ResolveAll(absl::Span<const LocalBuffer> list,
                                      uint64_t& total) const;
  // Counts a send-queue post for fault injection; true when it is the one
  // that breaks the connection.
  // Starts a posted operation: on a closed endpoint it completes as
  // flushed, and an injected break cuts the connection with it pending
  // (nullopt either way); otherwise its Pending entry is made and its
  // sequence number returned.
  std::optional<uint64_t> StartWork(uint64_t wr_id, WorkType type);
  bool InjectBreak();
  void UpdateSignals();
  // Acknowledges a SEND or the last piece of a WRITE of the peer's
  // (soft_wire.h ACK). For an owner-driven endpoint (fabric.h) the ACK
  // waits, to go out with the next output (the reply a responder sends
  // next, the call a requester sends next): a round trip then costs one
  // write per side instead of two.
  void Acknowledge(uint64_t id);
  // Moves the waiting ACKs to the output when something else goes out,
  // when enough wait, or when the oldest has waited long enough.
  void FlushAcks(bool force);

  SoftFabricOptions fabric_;
  EndpointOptions options_;
  Capabilities caps_;
  std::shared_ptr<ProtectionDomain> pd_;
  UniqueFd epoll_;
  UniqueFd signal_;
  bool signaled_ = false;
  uint32_t epoll_mask_ = 0;
  bool socket_in_epoll_ = false;

  FrameStream stream_;
  State state_ = State::kConnecting;
  bool active_ = false;
  bool connect_in_progress_ = false;
  bool write_shut_ = false;
  // Active side, while connecting: when the listener's answer is due.
  std::optional<std::chrono::steady_clock::time_point> answer_due_;

  // Ring queues and a hash table: an endpoint in steady use allocates
  // nothing per operation.
  memory::RingQueue<Receive> receives_;
  absl::flat_hash_map<uint64_t, Pending> pending_;  // by sequence number
  uint64_t next_seq_ = 1;
  uint64_t posted_ops_ = 0;
  // RDMA Reads issued and not yet answered (bounded by the initiator
  // depth), and READ_REQs of the peer's being answered (bounded by the
  // responder resources).
  uint32_t reads_in_flight_ = 0;
  uint32_t reads_answering_ = 0;
  std::deque<Outgoing> outgoing_;

  // Cross-memory attach. The probe cookie is the first word of this side's
  // gate (for its own requests); peer_gate_ is the peer's, for the
  // requests this side answers.
  CmaGate own_gate_;
  CmaGate peer_gate_;
  bool cma_offered_ = false;  // this side sent CMA_OFFER
  bool cma_awaiting_answer_ = false;
  bool cma_out_ = false;  // the peer accepted: this side's RDMA uses it
  bool cma_in_ = false;   // this side accepted the peer's offer
  bool peer_offer_seen_ = false;
  uint64_t cma_operations_ = 0;
  std::shared_ptr<PeerProcess> peer_process_;  // once the path is set up

  memory::RingQueue<Queued> completions_;
  std::deque<ConnectionEvent> events_;
  uint64_t polls_ = 0;

  // Owner-driven (fabric.h OnEventFdReadable): the socket is read only
  // after the owner saw it readable, until a read drains it.
  bool owner_driven_ = false;
  // event_fd() is the socket (EndpointOptions::owner_driven without
  // completion-delay fault injection, which needs the signal). A closed
  // socket is shut down but its descriptor kept until the endpoint goes,
  // so that the owner's registration never names a reused number.
  bool single_fd_ = false;
  UniqueFd held_fd_;
  bool input_ready_ = false;
  std::vector<uint8_t> waiting_acks_;  // encoded ACK frames
  size_t waiting_ack_count_ = 0;
  std::optional<std::chrono::steady_clock::time_point> ack_due_;
};

}  // namespace rpcrdma::fabric::soft

#endif  // RPCRDMA_PLUGIN_FABRIC_SOFT_SOFT_ENDPOINT_H_
