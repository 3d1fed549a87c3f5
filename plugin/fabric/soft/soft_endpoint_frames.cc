// What a soft endpoint does with each frame its peer sends (soft_wire.h):
// the connection's accept or reject, SENDs into posted receives,
// acknowledgements (delayed, to travel with output), and the RDMA Read and
// Write requests and responses that reach registered memory.
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/fabric/soft/soft_endpoint.h"

namespace rpcrdma::fabric::soft {
namespace {

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

}  // namespace rpcrdma::fabric::soft
