// A soft endpoint's life and its verbs: set-up (connect, accept), memory
// windows, posted work, completions and connection events, and its close.
// The socket pump is in soft_endpoint_io.cc, the peer's frames in
// soft_endpoint_frames.cc.
#include "plugin/fabric/soft/soft_endpoint.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rpcrdma::fabric::soft {

absl::Status ValidateEndpointOptions(const SoftFabricOptions& fabric,
                                     const EndpointOptions& options) {
  if (options.send_queue_depth == 0 ||
      options.send_queue_depth > fabric.max_queue_depth ||
      options.recv_queue_depth == 0 ||
      options.recv_queue_depth > fabric.max_queue_depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft fabric: queue depths must be 1..", fabric.max_queue_depth));
  }
  if (options.max_send_sge == 0 || options.max_send_sge > fabric.max_send_sge ||
      options.max_recv_sge == 0 || options.max_recv_sge > fabric.max_recv_sge) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft fabric: SGE limits are send 1..", fabric.max_send_sge,
        ", receive 1..", fabric.max_recv_sge));
  }
  return absl::OkStatus();
}

SoftEndpoint::SoftEndpoint(const SoftFabricOptions& fabric,
                           const EndpointOptions& options)
    : fabric_(fabric),
      options_(options),
      pd_(std::make_shared<ProtectionDomain>()) {
  caps_.device_name = "soft";
  caps_.max_send_sge = options.max_send_sge;
  caps_.max_recv_sge = options.max_recv_sge;
  caps_.max_inline_data = fabric.max_inline_data;
  caps_.max_rdma_read_sge = fabric.max_rdma_read_sge;
  caps_.initiator_depth =
      std::min(options.initiator_depth, fabric.max_rd_atomic);
  caps_.responder_resources =
      std::min(options.responder_resources, fabric.max_rd_atomic);
  caps_.max_send_queue = options.send_queue_depth;
  caps_.max_recv_queue = options.recv_queue_depth;
  caps_.max_message_size = fabric.max_message_size;
  // RDMA transfers move in pieces (soft_wire.h); one work request may move
  // up to 4 GiB - 1, of which a window (uint32 length) can name 2 GiB.
  caps_.max_rdma_size = 1u << 31;
  caps_.remote_invalidation = true;
}

absl::Status SoftEndpoint::Init() {
  owner_driven_ = options_.owner_driven;
  single_fd_ = options_.owner_driven && fabric_.completion_delay_polls == 0;
  if (single_fd_) return absl::OkStatus();
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) {
    return absl::UnavailableError(
        absl::StrCat("epoll_create1: ", Errno(errno)));
  }
  signal_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!signal_.valid()) {
    return absl::UnavailableError(absl::StrCat("eventfd: ", Errno(errno)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = signal_.get();
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signal_.get(), &ev) != 0) {
    return absl::UnavailableError(absl::StrCat("epoll_ctl: ", Errno(errno)));
  }
  UpdateSignals();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SoftEndpoint>> SoftEndpoint::Connect(
    const SoftFabricOptions& fabric, const EndpointOptions& options,
    FrameStream stream, bool in_progress,
    absl::Span<const uint8_t> private_data) {
  std::unique_ptr<SoftEndpoint> ep(new SoftEndpoint(fabric, options));
  ep->stream_ = std::move(stream);
  ep->active_ = true;
  ep->connect_in_progress_ = in_progress;
  AppendConnect(ep->stream_.output(), ep->caps_.initiator_depth,
                ep->caps_.responder_resources, private_data);
  ep->OfferCrossMemory();
  if (absl::Status s = ep->Init(); !s.ok()) return s;
  if (!in_progress) ep->ArmAnswerDeadline();
  ep->Progress();
  return ep;
}

absl::StatusOr<std::unique_ptr<SoftEndpoint>> SoftEndpoint::Unreachable(
    const SoftFabricOptions& fabric, const EndpointOptions& options,
    std::string detail) {
  std::unique_ptr<SoftEndpoint> ep(new SoftEndpoint(fabric, options));
  ep->active_ = true;
  if (absl::Status s = ep->Init(); !s.ok()) return s;
  ep->Close(ConnectionEventType::kUnreachable, std::move(detail),
            /*orderly=*/false);
  return ep;
}

absl::StatusOr<std::unique_ptr<SoftEndpoint>> SoftEndpoint::Accept(
    const SoftFabricOptions& fabric, const EndpointOptions& options,
    FrameStream stream, uint32_t peer_initiator_depth,
    uint32_t peer_responder_resources, absl::Span<const uint8_t> private_data) {
  std::unique_ptr<SoftEndpoint> ep(new SoftEndpoint(fabric, options));
  ep->stream_ = std::move(stream);
  ep->caps_.initiator_depth =
      std::min(ep->caps_.initiator_depth, peer_responder_resources);
  ep->caps_.responder_resources =
      std::min(ep->caps_.responder_resources, peer_initiator_depth);
  AppendAccept(ep->stream_.output(), ep->caps_.initiator_depth,
               ep->caps_.responder_resources, private_data);
  ep->OfferCrossMemory();
  ep->state_ = State::kEstablished;
  ConnectionEvent established;
  established.type = ConnectionEventType::kEstablished;
  ep->events_.push_back(std::move(established));
  if (absl::Status s = ep->Init(); !s.ok()) return s;
  ep->Progress();
  return ep;
}

absl::StatusOr<std::unique_ptr<Registration>> SoftEndpoint::Register(
    absl::Span<uint8_t> memory) {
  return pd_->Register(memory);
}

absl::StatusOr<RemoteRegion> SoftEndpoint::BindWindow(uint64_t wr_id,
                                                      const LocalBuffer& buffer,
                                                      uint32_t access) {
  if (state_ == State::kClosed) {
    return absl::FailedPreconditionError(
        "soft fabric: BindWindow after the connection has gone");
  }
  absl::StatusOr<RemoteRegion> region = pd_->Bind(buffer, access);
  if (!region.ok()) return region.status();
  Complete(wr_id, WorkType::kBindWindow, WorkStatus::kSuccess);
  UpdateSignals();
  return region;
}

absl::Status SoftEndpoint::InvalidateWindow(uint64_t wr_id, uint32_t handle) {
  if (!pd_->Invalidate(handle)) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft fabric: no valid window with handle ", handle));
  }
  Complete(
      wr_id, WorkType::kLocalInvalidate,
      state_ == State::kClosed ? WorkStatus::kFlushed : WorkStatus::kSuccess);
  UpdateSignals();
  return absl::OkStatus();
}

absl::Status SoftEndpoint::PostReceive(uint64_t wr_id,
                                       const LocalBuffer& buffer) {
  absl::StatusOr<absl::Span<uint8_t>> bytes = pd_->Resolve(buffer);
  if (!bytes.ok()) return bytes.status();
  if (state_ == State::kClosed) {
    Complete(wr_id, WorkType::kReceive, WorkStatus::kFlushed);
    UpdateSignals();
    return absl::OkStatus();
  }
  if (receives_.size() >= options_.recv_queue_depth) {
    return absl::ResourceExhaustedError("soft fabric: receive queue full");
  }
  receives_.push_back(Receive{wr_id, *bytes});
  return absl::OkStatus();
}

absl::Status SoftEndpoint::CheckSendQueue(size_t sge_count,
                                          size_t max_sge) const {
  if (sge_count > max_sge) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft fabric: ", sge_count, " SGEs exceed the limit of ", max_sge));
  }
  if (state_ == State::kConnecting) {
    return absl::FailedPreconditionError(
        "soft fabric: the connection is not established");
  }
  if (state_ == State::kEstablished &&
      pending_.size() >= options_.send_queue_depth) {
    return absl::ResourceExhaustedError("soft fabric: send queue full");
  }
  return absl::OkStatus();
}

absl::StatusOr<SoftEndpoint::Resolved> SoftEndpoint::ResolveAll(
    absl::Span<const LocalBuffer> list, uint64_t& total) const {
  Resolved out;
  total = 0;
  for (const LocalBuffer& b : list) {
    absl::StatusOr<absl::Span<uint8_t>> bytes = pd_->Resolve(b);
    if (!bytes.ok()) return bytes.status();
    total += bytes->size();
    out.push_back(*bytes);
  }
  return out;
}

bool SoftEndpoint::InjectBreak() {
  return fabric_.break_at_operation != 0 &&
         ++posted_ops_ == fabric_.break_at_operation;
}

std::optional<uint64_t> SoftEndpoint::StartWork(uint64_t wr_id, WorkType type) {
  if (state_ == State::kClosed) {
    Complete(wr_id, type, WorkStatus::kFlushed);
    UpdateSignals();
    return std::nullopt;
  }
  const uint64_t seq = next_seq_++;
  Pending& p = pending_[seq];
  p.wr_id = wr_id;
  p.type = type;
  if (InjectBreak()) {
    Close(ConnectionEventType::kDisconnected, "fault injection: connection cut",
          /*orderly=*/false, seq, WorkStatus::kTransportError);
    return std::nullopt;
  }
  return seq;
}

absl::Status SoftEndpoint::PostSend(uint64_t wr_id,
                                    absl::Span<const LocalBuffer> gather,
                                    std::optional<uint32_t> invalidate) {
  if (absl::Status s = CheckSendQueue(gather.size(), caps_.max_send_sge);
      !s.ok()) {
    return s;
  }
  uint64_t total = 0;
  absl::StatusOr<Resolved> pieces = ResolveAll(gather, total);
  if (!pieces.ok()) return pieces.status();
  if (total > caps_.max_message_size) {
    return absl::InvalidArgumentError(absl::StrCat("soft fabric: Send of ",
                                                   total, " octets exceeds ",
                                                   caps_.max_message_size));
  }
  const WorkType type =
      invalidate.has_value() ? WorkType::kSendWithInvalidate : WorkType::kSend;
  const std::optional<uint64_t> seq = StartWork(wr_id, type);
  if (!seq) return absl::OkStatus();
  absl::InlinedVector<absl::Span<const uint8_t>, 4> spans(pieces->begin(),
                                                          pieces->end());
  AppendSend(FrameBuffer(), *seq, invalidate, spans);
  Progress();
  return absl::OkStatus();
}

absl::Status SoftEndpoint::PostRdmaRead(uint64_t wr_id,
                                        absl::Span<const LocalBuffer> scatter,
                                        const RemoteRegion& source) {
  if (absl::Status s = CheckSendQueue(scatter.size(), caps_.max_rdma_read_sge);
      !s.ok()) {
    return s;
  }
  uint64_t total = 0;
  absl::StatusOr<Resolved> pieces = ResolveAll(scatter, total);
  if (!pieces.ok()) return pieces.status();
  if (state_ == State::kEstablished && caps_.initiator_depth == 0) {
    return absl::FailedPreconditionError(
        "soft fabric: RDMA Read with an initiator depth of 0");
  }
  if (total != source.length) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft fabric: RDMA Read scatter list of ", total,
                     " octets for a region of ", source.length));
  }
  const std::optional<uint64_t> seq = StartWork(wr_id, WorkType::kRdmaRead);
  if (!seq) return absl::OkStatus();
  Pending& p = pending_[*seq];
  p.scatter.assign(pieces->begin(), pieces->end());
  p.expected = total;
  Outgoing out;
  out.kind = Outgoing::Kind::kReadRequest;
  out.id = *seq;
  out.handle = source.handle;
  out.address = source.offset;
  out.length = source.length;
  outgoing_.push_back(std::move(out));
  Progress();
  return absl::OkStatus();
}

absl::Status SoftEndpoint::PostRdmaWrite(uint64_t wr_id,
                                         absl::Span<const LocalBuffer> gather,
                                         const RemoteRegion& target) {
  if (absl::Status s = CheckSendQueue(gather.size(), caps_.max_send_sge);
      !s.ok()) {
    return s;
  }
  uint64_t total = 0;
  absl::StatusOr<Resolved> pieces = ResolveAll(gather, total);
  if (!pieces.ok()) return pieces.status();
  if (total != target.length) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft fabric: RDMA Write gather list of ", total,
                     " octets for a region of ", target.length));
  }
  const std::optional<uint64_t> seq = StartWork(wr_id, WorkType::kRdmaWrite);
  if (!seq) return absl::OkStatus();
  Outgoing out;
  out.kind = Outgoing::Kind::kWrite;
  out.id = *seq;
  out.handle = target.handle;
  out.address = target.offset;
  out.length = total;
  out.gather.assign(pieces->begin(), pieces->end());
  outgoing_.push_back(std::move(out));
  Progress();
  return absl::OkStatus();
}

size_t SoftEndpoint::PollCompletions(absl::Span<Completion> out) {
  Progress();
  ++polls_;
  size_t n = 0;
  while (n < out.size() && !completions_.empty() &&
         completions_.front().ready_at_poll <= polls_) {
    out[n++] = completions_.pop_front().completion;
  }
  UpdateSignals();
  return n;
}

std::optional<ConnectionEvent> SoftEndpoint::PollConnectionEvent() {
  Progress();
  if (events_.empty()) return std::nullopt;
  ConnectionEvent ev = std::move(events_.front());
  events_.pop_front();
  UpdateSignals();
  return ev;
}

void SoftEndpoint::Disconnect() {
  if (state_ == State::kClosed) return;
  std::vector<uint8_t> frame;
  if (state_ == State::kEstablished) AppendDisconnect(frame);
  const bool established = state_ == State::kEstablished;
  Close(ConnectionEventType::kDisconnected, "disconnected locally",
        /*orderly=*/established, {}, WorkStatus::kFlushed, {},
        std::move(frame));
  Progress();
}

void SoftEndpoint::Complete(uint64_t wr_id, WorkType type, WorkStatus status,
                            uint32_t byte_length,
                            std::optional<uint32_t> invalidated) {
  Queued q;
  q.completion.wr_id = wr_id;
  q.completion.type = type;
  q.completion.status = status;
  q.completion.byte_length = byte_length;
  q.completion.invalidated_handle = invalidated;
  q.ready_at_poll = polls_ + 1 + fabric_.completion_delay_polls;
  completions_.push_back(std::move(q));
}

void SoftEndpoint::CloseSocket() {
  if (socket_in_epoll_) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, stream_.fd(), nullptr);
    socket_in_epoll_ = false;
    epoll_mask_ = 0;
  }
  if (single_fd_ && stream_.open()) {
    shutdown(stream_.fd(), SHUT_RDWR);
    held_fd_ = stream_.ReleaseFd();
    return;
  }
  stream_.Close();
}

uint32_t SoftEndpoint::event_fd_events() const {
  uint32_t events = EPOLLIN;
  if (single_fd_ && stream_.open() &&
      (connect_in_progress_ || stream_.pending_output() > 0 ||
       !outgoing_.empty())) {
    events |= EPOLLOUT;
  }
  return events;
}

void SoftEndpoint::Close(ConnectionEventType event, std::string detail,
                         bool orderly, std::optional<uint64_t> failed_seq,
                         WorkStatus status, std::vector<uint8_t> private_data,
                         std::vector<uint8_t> final_frame) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  // Work queued behind the failure never reaches the peer.
  outgoing_.clear();
  reads_in_flight_ = 0;
  reads_answering_ = 0;
  if (orderly && stream_.open()) {
    FlushAcks(/*force=*/true);
    std::vector<uint8_t>& out = stream_.output();
    out.insert(out.end(), final_frame.begin(), final_frame.end());
  } else {
    waiting_acks_.clear();
    waiting_ack_count_ = 0;
    ack_due_.reset();
    stream_.DiscardOutput();
    if (stream_.open()) shutdown(stream_.fd(), SHUT_RDWR);
    CloseSocket();
  }
  if (failed_seq.has_value()) {
    auto it = pending_.find(*failed_seq);
    if (it != pending_.end()) {
      WithdrawCrossMemory(it->first, it->second);
      Complete(it->second.wr_id, it->second.type, status);
      pending_.erase(it);
    }
  }
  // Flushed in the order they were posted, as a queue pair flushes.
  std::vector<uint64_t> seqs;
  seqs.reserve(pending_.size());
  for (const auto& [seq, p] : pending_) seqs.push_back(seq);
  std::sort(seqs.begin(), seqs.end());
  for (uint64_t seq : seqs) {
    const Pending& p = pending_.at(seq);
    WithdrawCrossMemory(seq, p);
    Complete(p.wr_id, p.type, WorkStatus::kFlushed);
  }
  pending_.clear();
  while (!receives_.empty()) {
    Complete(receives_.pop_front().wr_id, WorkType::kReceive,
             WorkStatus::kFlushed);
  }
  ConnectionEvent ev;
  ev.type = event;
  ev.private_data = std::move(private_data);
  ev.detail = std::move(detail);
  events_.push_back(std::move(ev));
  UpdateSignals();
}

void SoftEndpoint::ProtocolError(std::string detail) {
  Close(state_ == State::kConnecting ? ConnectionEventType::kUnreachable
                                     : ConnectionEventType::kDisconnected,
        absl::StrCat("soft fabric protocol error: ", detail),
        /*orderly=*/false);
}

void SoftEndpoint::FailFromPeer(uint64_t seq, WorkStatus status) {
  Close(ConnectionEventType::kDisconnected,
        absl::StrCat("the peer failed an operation with ",
                     WorkStatusName(status)),
        /*orderly=*/true, seq, status);
}

}  // namespace rpcrdma::fabric::soft