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
namespace {

// Output produced ahead of the socket; larger transfers wait for it to
// drain, so a 4 MiB transfer never sits in memory twice.
constexpr size_t kHighWater = 1024 * 1024;
// Input read per Progress call, so one busy peer cannot hold the caller's
// event loop.
constexpr size_t kReadBudget = 4 * 1024 * 1024;
// Read and handled at a time within that budget.
constexpr size_t kReadSlice = 256 * 1024;
// How long an owner-driven endpoint lets an ACK wait for output to travel
// with, and how many it lets wait. A requester's next call or a
// responder's reply normally comes much sooner; the bound keeps the peer's
// send completions (and the memory and credits they release) prompt on an
// idle connection, like TCP's delayed acknowledgement.
constexpr auto kAckDelay = std::chrono::microseconds(500);
constexpr size_t kMaxWaitingAcks = 16;

bool StatusFromByte(uint8_t b, WorkStatus& status) {
  if (b > static_cast<uint8_t>(WorkStatus::kTransportError)) return false;
  status = static_cast<WorkStatus>(b);
  return true;
}

// Copies `data` into the scatter list starting `offset` octets into it.
void Scatter(absl::Span<const absl::Span<uint8_t>> list, uint64_t offset,
             absl::Span<const uint8_t> data) {
  for (absl::Span<uint8_t> sge : list) {
    if (data.empty()) return;
    if (offset >= sge.size()) {
      offset -= sge.size();
      continue;
    }
    const size_t n = std::min<size_t>(data.size(), sge.size() - offset);
    std::memcpy(sge.data() + offset, data.data(), n);
    data.remove_prefix(n);
    offset = 0;
  }
}

}  // namespace

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

std::vector<uint8_t>& SoftEndpoint::FrameBuffer() {
  if (outgoing_.empty()) return stream_.output();
  if (outgoing_.back().kind != Outgoing::Kind::kFrames) {
    outgoing_.emplace_back();
  }
  return outgoing_.back().frames;
}

SoftEndpoint::Produced SoftEndpoint::ProduceOne(Outgoing& item) {
  std::vector<uint8_t>& out = stream_.output();
  switch (item.kind) {
    case Outgoing::Kind::kFrames:
      out.insert(out.end(), item.frames.begin(), item.frames.end());
      return Produced::kDone;
    case Outgoing::Kind::kReadRequest: {
      // Like a send queue, everything behind a read waits while the
      // initiator depth is used up, and RDMA waits for the peer's answer
      // to a cross-memory offer.
      if (cma_awaiting_answer_ || reads_in_flight_ >= caps_.initiator_depth) {
        return Produced::kBlocked;
      }
      ++reads_in_flight_;
      auto it = pending_.find(item.id);
      std::optional<std::vector<CmaSegment>> segments;
      if (cma_out_ && item.length >= fabric_.cross_memory_min_length &&
          it != pending_.end()) {
        segments = SegmentsOf<uint8_t>(it->second.scatter);
      }
      if (segments.has_value() && ArmCrossMemory(item.id)) {
        it->second.cross_memory = true;
        ++cma_operations_;
        AppendCmaRequest(out, FrameType::kReadReqCma, item.id, item.handle,
                         item.address, static_cast<uint32_t>(item.length),
                         *segments);
      } else {
        AppendReadReq(out, item.id, item.handle, item.address,
                      static_cast<uint32_t>(item.length));
      }
      return Produced::kDone;
    }
    case Outgoing::Kind::kWrite: {
      if (item.done == 0) {
        if (cma_awaiting_answer_) return Produced::kBlocked;
        auto it = pending_.find(item.id);
        std::optional<std::vector<CmaSegment>> segments;
        if (cma_out_ && item.length >= fabric_.cross_memory_min_length &&
            it != pending_.end()) {
          segments = SegmentsOf<const uint8_t>(item.gather);
        }
        if (segments.has_value() && ArmCrossMemory(item.id)) {
          it->second.cross_memory = true;
          ++cma_operations_;
          AppendCmaRequest(out, FrameType::kWriteCma, item.id, item.handle,
                           item.address, static_cast<uint32_t>(item.length),
                           *segments);
          return Produced::kDone;
        }
      }
      const uint64_t n =
          std::min<uint64_t>(kMaxRdmaChunk, item.length - item.done);
      std::vector<absl::Span<const uint8_t>> pieces;
      uint64_t skip = item.done;
      uint64_t want = n;
      for (absl::Span<const uint8_t> sge : item.gather) {
        if (want == 0) break;
        if (skip >= sge.size()) {
          skip -= sge.size();
          continue;
        }
        const size_t take =
            static_cast<size_t>(std::min<uint64_t>(want, sge.size() - skip));
        pieces.push_back(sge.subspan(static_cast<size_t>(skip), take));
        want -= take;
        skip = 0;
      }
      const bool last = item.done + n == item.length;
      AppendWrite(out, item.id, item.handle, item.address + item.done, last,
                  pieces);
      item.done += n;
      return last ? Produced::kDone : Produced::kMore;
    }
    case Outgoing::Kind::kReadResponse: {
      const uint64_t n =
          std::min<uint64_t>(kMaxRdmaChunk, item.length - item.done);
      const bool last = item.done + n == item.length;
      // The window may have been invalidated since the request arrived.
      std::optional<absl::Span<uint8_t>> bytes =
          pd_->Access(item.handle, item.address + item.done, n, kRemoteRead);
      if (!bytes.has_value()) return Produced::kFailed;
      AppendReadResp(out, item.id, StatusByte(WorkStatus::kSuccess), last,
                     *bytes);
      item.done += n;
      if (!last) return Produced::kMore;
      --reads_answering_;
      return Produced::kDone;
    }
  }
  return Produced::kDone;
}

bool SoftEndpoint::Produce() {
  while (!outgoing_.empty() && stream_.pending_output() < kHighWater) {
    Outgoing& front = outgoing_.front();
    switch (ProduceOne(front)) {
      case Produced::kMore:
        break;
      case Produced::kDone:
        outgoing_.pop_front();
        break;
      case Produced::kBlocked:
        return true;
      case Produced::kFailed: {
        std::vector<uint8_t> frame;
        AppendReadResp(frame, front.id,
                       StatusByte(WorkStatus::kRemoteAccessError), true, {});
        Close(ConnectionEventType::kDisconnected,
              "remote access error: window invalidated during an RDMA Read",
              /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
        return false;
      }
    }
  }
  return false;
}

void SoftEndpoint::HandleFrame(const Frame& f) {
  if (state_ == State::kConnecting) {
    if (f.type == FrameType::kAccept) {
      caps_.initiator_depth =
          std::min(caps_.initiator_depth, f.responder_resources);
      caps_.responder_resources =
          std::min(caps_.responder_resources, f.initiator_depth);
      state_ = State::kEstablished;
      ConnectionEvent ev;
      ev.type = ConnectionEventType::kEstablished;
      ev.private_data.assign(f.data.begin(), f.data.end());
      events_.push_back(std::move(ev));
      return;
    }
    if (f.type == FrameType::kReject) {
      Close(ConnectionEventType::kRejected, "rejected by the peer",
            /*orderly=*/false, {}, WorkStatus::kFlushed,
            std::vector<uint8_t>(f.data.begin(), f.data.end()));
      return;
    }
    ProtocolError(absl::StrCat("frame type ", static_cast<int>(f.type),
                               " before ACCEPT"));
    return;
  }
  switch (f.type) {
    case FrameType::kSend:
      HandleSend(f);
      return;
    case FrameType::kAck:
      HandleAck(f);
      return;
    case FrameType::kReadReq:
      HandleReadReq(f);
      return;
    case FrameType::kReadResp:
      HandleReadResp(f);
      return;
    case FrameType::kWrite:
      HandleWrite(f);
      return;
    case FrameType::kDisconnect:
      Close(ConnectionEventType::kDisconnected, "disconnected by the peer",
            /*orderly=*/true);
      return;
    case FrameType::kCmaOffer:
      HandleCmaOffer(f);
      return;
    case FrameType::kCmaAnswer:
      HandleCmaAnswer(f);
      return;
    case FrameType::kReadReqCma:
    case FrameType::kWriteCma:
      HandleCmaRequest(f);
      return;
    case FrameType::kConnect:
    case FrameType::kAccept:
    case FrameType::kReject:
      break;
  }
  ProtocolError(
      absl::StrCat("unexpected frame type ", static_cast<int>(f.type)));
}

void SoftEndpoint::HandleSend(const Frame& f) {
  auto fail = [&](WorkStatus initiator_status, std::string detail) {
    std::vector<uint8_t> frame;
    AppendAck(frame, f.id, StatusByte(initiator_status));
    Close(ConnectionEventType::kDisconnected, std::move(detail),
          /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
  };
  if (receives_.empty()) {
    fail(WorkStatus::kReceiverNotReady,
         "receiver not ready: a Send arrived with no receive posted");
    return;
  }
  const Receive r = receives_.pop_front();
  if (f.data.size() > r.buffer.size()) {
    Complete(r.wr_id, WorkType::kReceive, WorkStatus::kLocalLengthError,
             static_cast<uint32_t>(f.data.size()));
    fail(WorkStatus::kRemoteInvalidRequest,
         absl::StrCat("local length error: a Send of ", f.data.size(),
                      " octets for a receive of ", r.buffer.size()));
    return;
  }
  if (f.invalidate.has_value() && !pd_->Invalidate(*f.invalidate)) {
    Complete(r.wr_id, WorkType::kReceive, WorkStatus::kLocalProtectionError);
    fail(
        WorkStatus::kRemoteInvalidRequest,
        absl::StrCat("Send With Invalidate of unknown handle ", *f.invalidate));
    return;
  }
  if (!f.data.empty()) {
    std::memcpy(r.buffer.data(), f.data.data(), f.data.size());
  }
  Complete(r.wr_id, WorkType::kReceive, WorkStatus::kSuccess,
           static_cast<uint32_t>(f.data.size()), f.invalidate);
  Acknowledge(f.id);
}

void SoftEndpoint::Acknowledge(uint64_t id) {
  if (!owner_driven_) {
    AppendAck(FrameBuffer(), id, StatusByte(WorkStatus::kSuccess));
    return;
  }
  AppendAck(waiting_acks_, id, StatusByte(WorkStatus::kSuccess));
  ++waiting_ack_count_;
  if (!ack_due_) ack_due_ = std::chrono::steady_clock::now() + kAckDelay;
}

void SoftEndpoint::FlushAcks(bool force) {
  if (waiting_ack_count_ == 0) return;
  const bool output = stream_.pending_output() > 0 || !outgoing_.empty();
  if (!force && !output && waiting_ack_count_ < kMaxWaitingAcks &&
      std::chrono::steady_clock::now() < *ack_due_) {
    return;
  }
  // ACKs may go before queued frames: they order nothing.
  std::vector<uint8_t>& out = stream_.output();
  out.insert(out.end(), waiting_acks_.begin(), waiting_acks_.end());
  waiting_acks_.clear();
  waiting_ack_count_ = 0;
  ack_due_.reset();
}

void SoftEndpoint::HandleAck(const Frame& f) {
  auto it = pending_.find(f.id);
  WorkStatus status;
  if (it == pending_.end() || it->second.type == WorkType::kRdmaRead ||
      !StatusFromByte(f.status, status)) {
    ProtocolError(absl::StrCat("ACK for unknown operation ", f.id));
    return;
  }
  if (status != WorkStatus::kSuccess) {
    FailFromPeer(f.id, status);
    return;
  }
  WithdrawCrossMemory(it->first, it->second);
  Complete(it->second.wr_id, it->second.type, WorkStatus::kSuccess);
  pending_.erase(it);
}

void SoftEndpoint::HandleReadReq(const Frame& f) {
  if (reads_answering_ >= caps_.responder_resources) {
    // The initiator exceeded the depth negotiated at connect time.
    std::vector<uint8_t> frame;
    AppendReadResp(frame, f.id, StatusByte(WorkStatus::kRemoteInvalidRequest),
                   true, {});
    Close(ConnectionEventType::kDisconnected,
          "RDMA Read beyond the negotiated responder resources",
          /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
    return;
  }
  if (!pd_->Access(f.handle, f.address, f.length, kRemoteRead).has_value()) {
    std::vector<uint8_t> frame;
    AppendReadResp(frame, f.id, StatusByte(WorkStatus::kRemoteAccessError),
                   true, {});
    Close(ConnectionEventType::kDisconnected,
          absl::StrCat("remote access error: RDMA Read of handle ", f.handle,
                       " at ", f.address, " for ", f.length, " octets"),
          /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
    return;
  }
  Outgoing out;
  out.kind = Outgoing::Kind::kReadResponse;
  out.id = f.id;
  out.handle = f.handle;
  out.address = f.address;
  out.length = f.length;
  outgoing_.push_back(std::move(out));
  ++reads_answering_;
}

void SoftEndpoint::HandleReadResp(const Frame& f) {
  auto it = pending_.find(f.id);
  WorkStatus status;
  if (it == pending_.end() || it->second.type != WorkType::kRdmaRead ||
      !StatusFromByte(f.status, status)) {
    ProtocolError(absl::StrCat("READ_RESP for unknown operation ", f.id));
    return;
  }
  if (status != WorkStatus::kSuccess) {
    FailFromPeer(f.id, status);
    return;
  }
  Pending& p = it->second;
  if (p.cross_memory) {
    // The responder has already copied the data into the scatter list.
    if (!f.data.empty() || !f.last) {
      ProtocolError("READ_RESP with data for a cross-memory RDMA Read");
      return;
    }
    p.received = p.expected;
  }
  if (f.data.size() > p.expected - p.received) {
    ProtocolError("READ_RESP carries more data than was asked for");
    return;
  }
  Scatter(p.scatter, p.received, f.data);
  p.received += f.data.size();
  if (f.last) {
    if (p.received != p.expected) {
      ProtocolError("READ_RESP ended short of the requested length");
      return;
    }
    WithdrawCrossMemory(it->first, p);
    Complete(p.wr_id, WorkType::kRdmaRead, WorkStatus::kSuccess);
    pending_.erase(it);
    --reads_in_flight_;
  }
}

void SoftEndpoint::HandleWrite(const Frame& f) {
  std::optional<absl::Span<uint8_t>> bytes =
      pd_->Access(f.handle, f.address, f.data.size(), kRemoteWrite);
  if (!bytes.has_value()) {
    std::vector<uint8_t> frame;
    AppendAck(frame, f.id, StatusByte(WorkStatus::kRemoteAccessError));
    Close(ConnectionEventType::kDisconnected,
          absl::StrCat("remote access error: RDMA Write of handle ", f.handle,
                       " at ", f.address, " for ", f.data.size(), " octets"),
          /*orderly=*/true, {}, WorkStatus::kFlushed, {}, std::move(frame));
    return;
  }
  if (!f.data.empty()) std::memcpy(bytes->data(), f.data.data(), f.data.size());
  if (f.last) Acknowledge(f.id);
}

template <typename T>
std::optional<std::vector<CmaSegment>> SoftEndpoint::SegmentsOf(
    absl::Span<const absl::Span<T>> list) {
  std::vector<CmaSegment> segments;
  for (absl::Span<T> sge : list) {
    if (sge.empty()) continue;
    if (segments.size() == kMaxCmaSegments) return std::nullopt;
    segments.push_back(CmaSegment{reinterpret_cast<uintptr_t>(sge.data()),
                                  static_cast<uint32_t>(sge.size())});
  }
  return segments;
}

void SoftEndpoint::Progress() {
  if (stream_.open() && connect_in_progress_) {
    pollfd p{stream_.fd(), POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) {
      UpdateSignals();
      return;
    }
    if (int err = SocketError(stream_.fd()); err != 0) {
      Close(ConnectionEventType::kUnreachable,
            absl::StrCat("connect: ", Errno(err)), /*orderly=*/false);
      return;
    }
    connect_in_progress_ = false;
  }
  // Input is read and handled a slice at a time, so the input buffer stays
  // small; kReadBudget bounds one call.
  size_t budget = kReadBudget;
  while (stream_.open() && (!owner_driven_ || input_ready_) && budget > 0) {
    const size_t held = stream_.input().size();
    const FrameStream::IoResult read =
        stream_.Read(std::min(budget, kReadSlice));
    budget -= std::min(budget, stream_.input().size() - held);
    // A read that did not fill its slice drained the socket; the owner's
    // level-triggered wait reports anything that arrives later.
    const bool drained = read != FrameStream::IoResult::kOk;
    if (drained) input_ready_ = false;
    while (stream_.open() || !stream_.input().empty()) {
      if (state_ == State::kClosed) {
        stream_.Consume(stream_.input().size());
        break;
      }
      absl::StatusOr<DecodeResult> decoded = DecodeFrame(stream_.input());
      if (!decoded.ok()) {
        ProtocolError(std::string(decoded.status().message()));
        break;
      }
      if (decoded->consumed == 0) break;
      HandleFrame(decoded->frame);
      stream_.Consume(decoded->consumed);
    }
    if (read == FrameStream::IoResult::kEnd ||
        read == FrameStream::IoResult::kError) {
      if (state_ == State::kClosed) {
        CloseSocket();
      } else if (state_ == State::kConnecting) {
        Close(ConnectionEventType::kUnreachable,
              "the connection closed before it was accepted",
              /*orderly=*/false);
      } else {
        Close(ConnectionEventType::kDisconnected,
              read == FrameStream::IoResult::kEnd
                  ? std::string("the peer closed the connection")
                  : absl::StrCat("connection lost: ",
                                 Errno(stream_.last_errno())),
              /*orderly=*/false);
      }
    }
    if (drained) break;
  }
  if (stream_.open() && !connect_in_progress_ && state_ != State::kClosed) {
    FlushAcks(/*force=*/false);
  }
  while (stream_.open() && !connect_in_progress_) {
    const bool blocked = Produce();
    if (!stream_.open()) break;
    const FrameStream::IoResult w = stream_.Flush();
    if (w == FrameStream::IoResult::kError) {
      if (state_ == State::kClosed) {
        CloseSocket();
      } else {
        Close(ConnectionEventType::kDisconnected,
              absl::StrCat("connection lost: ", Errno(stream_.last_errno())),
              /*orderly=*/false);
      }
      break;
    }
    // Stop when the socket is full, nothing is left, or what is left waits
    // for the peer (a read beyond the initiator depth).
    if (w == FrameStream::IoResult::kWouldBlock || outgoing_.empty() ||
        blocked) {
      break;
    }
  }
  if (state_ == State::kClosed && stream_.open() && !write_shut_ &&
      stream_.pending_output() == 0) {
    shutdown(stream_.fd(), SHUT_WR);
    write_shut_ = true;
  }
  UpdateSignals();
}

void SoftEndpoint::UpdateSignals() {
  if (single_fd_ || !epoll_.valid()) return;
  if (stream_.open()) {
    uint32_t mask = EPOLLIN;
    if (connect_in_progress_ || stream_.pending_output() > 0 ||
        !outgoing_.empty()) {
      mask |= EPOLLOUT;
    }
    if (!socket_in_epoll_ || mask != epoll_mask_) {
      epoll_event ev{};
      ev.events = mask;
      ev.data.fd = stream_.fd();
      epoll_ctl(epoll_.get(), socket_in_epoll_ ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
                stream_.fd(), &ev);
      socket_in_epoll_ = true;
      epoll_mask_ = mask;
    }
  }
  // An owner-driven endpoint's owner polls after its own calls (fabric.h):
  // only completions held back by fault injection need the signal then.
  const bool ready = owner_driven_ ? !completions_.empty() &&
                                         fabric_.completion_delay_polls > 0
                                   : !completions_.empty() || !events_.empty();
  if (ready && !signaled_) {
    const uint64_t one = 1;
    if (write(signal_.get(), &one, sizeof(one)) == sizeof(one)) {
      signaled_ = true;
    }
  } else if (!ready && signaled_) {
    uint64_t value = 0;
    if (read(signal_.get(), &value, sizeof(value)) == sizeof(value)) {
      signaled_ = false;
    }
  }
}

}  // namespace rpcrdma::fabric::soft
