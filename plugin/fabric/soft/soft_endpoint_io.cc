// How a soft endpoint moves frames through its socket: the output it
// produces ahead of the socket (Produce), the input it reads within a budget
// (Progress), and the signal an owner waits on (UpdateSignals). What it does
// with each frame read is in soft_endpoint_frames.cc.
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
#include "plugin/fabric/soft/soft_endpoint.h"

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

}  // namespace

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

std::vector<uint8_t>& SoftEndpoint::FrameBuffer() {
  if (outgoing_.empty()) return stream_.output();
  if (outgoing_.back().kind != Outgoing::Kind::kFrames) {
    outgoing_.emplace_back();
  }
  return outgoing_.back().frames;
}

SoftEndpoint::Produced SoftEndpoint::ProduceOne(Outgoing& item) {
  switch (item.kind) {
    case Outgoing::Kind::kFrames: {
      std::vector<uint8_t>& out = stream_.output();
      out.insert(out.end(), item.frames.begin(), item.frames.end());
      return Produced::kDone;
    }
    case Outgoing::Kind::kReadRequest:
      return ProduceReadRequest(item);
    case Outgoing::Kind::kWrite:
      return ProduceWrite(item);
    case Outgoing::Kind::kReadResponse:
      return ProduceReadResponse(item);
  }
  return Produced::kDone;
}

template <typename T>
bool SoftEndpoint::SendCrossMemoryRequest(
    FrameType type, const Outgoing& item,
    absl::Span<const absl::Span<T>> local) {
  auto it = pending_.find(item.id);
  if (!cma_out_ || item.length < fabric_.cross_memory_min_length ||
      it == pending_.end()) {
    return false;
  }
  std::optional<std::vector<CmaSegment>> segments = SegmentsOf<T>(local);
  if (!segments.has_value() || !ArmCrossMemory(item.id)) return false;
  it->second.cross_memory = true;
  ++cma_operations_;
  AppendCmaRequest(stream_.output(), type, item.id, item.handle, item.address,
                   static_cast<uint32_t>(item.length), *segments);
  return true;
}

SoftEndpoint::Produced SoftEndpoint::ProduceReadRequest(Outgoing& item) {
  // Like a send queue, everything behind a read waits while the initiator
  // depth is used up, and RDMA waits for the peer's answer to a
  // cross-memory offer.
  if (cma_awaiting_answer_ || reads_in_flight_ >= caps_.initiator_depth) {
    return Produced::kBlocked;
  }
  ++reads_in_flight_;
  auto it = pending_.find(item.id);
  const bool cross_memory =
      it != pending_.end() &&
      SendCrossMemoryRequest<uint8_t>(
          FrameType::kReadReqCma, item,
          absl::Span<const absl::Span<uint8_t>>(it->second.scatter));
  if (!cross_memory) {
    AppendReadReq(stream_.output(), item.id, item.handle, item.address,
                  static_cast<uint32_t>(item.length));
  }
  return Produced::kDone;
}

SoftEndpoint::Produced SoftEndpoint::ProduceWrite(Outgoing& item) {
  if (item.done == 0) {
    if (cma_awaiting_answer_) return Produced::kBlocked;
    if (SendCrossMemoryRequest<const uint8_t>(
            FrameType::kWriteCma, item,
            absl::Span<const absl::Span<const uint8_t>>(item.gather))) {
      return Produced::kDone;
    }
  }
  // Through the socket, a frame of at most kMaxRdmaChunk at a time.
  const uint64_t n = std::min<uint64_t>(kMaxRdmaChunk, item.length - item.done);
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
  AppendWrite(stream_.output(), item.id, item.handle, item.address + item.done,
              last, pieces);
  item.done += n;
  return last ? Produced::kDone : Produced::kMore;
}

SoftEndpoint::Produced SoftEndpoint::ProduceReadResponse(Outgoing& item) {
  const uint64_t n = std::min<uint64_t>(kMaxRdmaChunk, item.length - item.done);
  const bool last = item.done + n == item.length;
  // The window may have been invalidated since the request arrived.
  std::optional<absl::Span<uint8_t>> bytes =
      pd_->Access(item.handle, item.address + item.done, n, kRemoteRead);
  if (!bytes.has_value()) return Produced::kFailed;
  AppendReadResp(stream_.output(), item.id, StatusByte(WorkStatus::kSuccess),
                 last, *bytes);
  item.done += n;
  if (!last) return Produced::kMore;
  --reads_answering_;
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

void SoftEndpoint::Progress() {
  if (stream_.open() && connect_in_progress_ && !FinishConnect()) return;
  ReadInput();
  // After the input: an answer that is there by the bound counts.
  if (AnswerOverdue()) {
    UpdateSignals();
    return;
  }
  if (stream_.open() && !connect_in_progress_ && state_ != State::kClosed) {
    FlushAcks(/*force=*/false);
  }
  WriteOutput();
  if (state_ == State::kClosed && stream_.open() && !write_shut_ &&
      stream_.pending_output() == 0) {
    shutdown(stream_.fd(), SHUT_WR);
    write_shut_ = true;
  }
  UpdateSignals();
}

bool SoftEndpoint::FinishConnect() {
  pollfd p{stream_.fd(), POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) {
    UpdateSignals();
    return false;
  }
  if (int err = SocketError(stream_.fd()); err != 0) {
    Close(ConnectionEventType::kUnreachable,
          absl::StrCat("connect: ", Errno(err)), /*orderly=*/false);
    return false;
  }
  connect_in_progress_ = false;
  ArmAnswerDeadline();
  return true;
}

void SoftEndpoint::ReadInput() {
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
    HandleInput();
    if (read == FrameStream::IoResult::kEnd) {
      StreamLost("the peer closed the connection");
    } else if (read == FrameStream::IoResult::kError) {
      StreamLost(
          absl::StrCat("connection lost: ", Errno(stream_.last_errno())));
    }
    if (drained) break;
  }
}

void SoftEndpoint::HandleInput() {
  while (stream_.open() || !stream_.input().empty()) {
    if (state_ == State::kClosed) {
      stream_.Consume(stream_.input().size());
      return;
    }
    absl::StatusOr<DecodeResult> decoded = DecodeFrame(stream_.input());
    if (state_ == State::kConnecting &&
        (!decoded.ok() ||
         (decoded->consumed != 0 && decoded->frame.type != FrameType::kAccept &&
          decoded->frame.type != FrameType::kReject))) {
      NotAHandshake(stream_.input());
      return;
    }
    if (!decoded.ok()) {
      ProtocolError(std::string(decoded.status().message()));
      return;
    }
    if (decoded->consumed == 0) return;
    HandleFrame(decoded->frame);
    stream_.Consume(decoded->consumed);
  }
}

void SoftEndpoint::StreamLost(std::string detail) {
  if (state_ == State::kClosed) {
    CloseSocket();
  } else if (state_ == State::kConnecting) {
    ClosedDuringHandshake();
  } else {
    Close(ConnectionEventType::kDisconnected, std::move(detail),
          /*orderly=*/false);
  }
}

void SoftEndpoint::WriteOutput() {
  while (stream_.open() && !connect_in_progress_) {
    const bool blocked = Produce();
    if (!stream_.open()) return;
    const FrameStream::IoResult w = stream_.Flush();
    if (w == FrameStream::IoResult::kError) {
      StreamLost(
          absl::StrCat("connection lost: ", Errno(stream_.last_errno())));
      return;
    }
    // Stop when the socket is full, nothing is left, or what is left waits
    // for the peer (a read beyond the initiator depth).
    if (w == FrameStream::IoResult::kWouldBlock || outgoing_.empty() ||
        blocked) {
      return;
    }
  }
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
