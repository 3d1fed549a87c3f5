#include "tools/pcap/send_reassembler.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::pcap {

bool PsnInRange(uint32_t psn, uint32_t first, uint32_t last) {
  return ((psn - first) & kPsnMask) <= ((last - first) & kPsnMask);
}

SendError SendReassembler::ErrorFor(uint64_t frame, const RocePacket& packet,
                                    std::string message) {
  return SendError{frame,          packet.src, packet.dst,
                   packet.dest_qp, packet.psn, std::move(message)};
}

void SendReassembler::Complete(QueueState& q, std::vector<SendRecord>& out) {
  q.have_done = true;
  q.done_first = q.partial->first_psn;
  q.done_last = (q.next_psn - 1) & kPsnMask;
  out.push_back(std::move(*q.partial));
  q.partial.reset();
}

void SendReassembler::Start(uint64_t frame, const RocePacket& packet,
                            const RcSendInfo& info, QueueState& q,
                            std::vector<SendRecord>& out) {
  SendMessage m;
  m.frame = m.first_frame = frame;
  m.packets = 1;
  m.roce_version = packet.roce_version;
  m.src = packet.src;
  m.dst = packet.dst;
  m.dest_qp = packet.dest_qp;
  m.first_psn = packet.psn;
  m.last_opcode = packet.opcode;
  m.invalidate_rkey = packet.invalidate_rkey;
  m.immediate = packet.immediate;
  m.payload.assign(packet.payload.begin(), packet.payload.end());
  q.partial = std::move(m);
  q.next_psn = (packet.psn + 1) & kPsnMask;
  q.last_frame = frame;
  if (info.part == SendPart::kOnly) Complete(q, out);
}

void SendReassembler::Add(uint64_t frame, const RocePacket& packet,
                          std::vector<SendRecord>& out) {
  std::optional<RcSendInfo> info = RcSendOpcodeInfo(packet.opcode);
  if (!info) return;
  QueueState& q = queues_[Key{packet.dst, packet.dest_qp}];
  const bool starts =
      info->part == SendPart::kFirst || info->part == SendPart::kOnly;

  if (q.partial) {
    if (packet.psn != q.next_psn) {
      uint32_t last_taken = (q.next_psn - 1) & kPsnMask;
      if (PsnInRange(packet.psn, q.partial->first_psn, last_taken)) {
        return;  // retransmitted packet of the message under way
      }
      out.push_back(ErrorFor(
          frame, packet,
          absl::StrCat("PSN gap: ", BthOpcodeName(packet.opcode), " has PSN ",
                       packet.psn, " but PSN ", q.next_psn,
                       " was expected next in the message begun at frame ",
                       q.partial->first_frame, "; message dropped")));
      q.partial.reset();
      if (starts) Start(frame, packet, *info, q, out);
      return;
    }
    if (starts) {
      out.push_back(ErrorFor(
          frame, packet,
          absl::StrCat(BthOpcodeName(packet.opcode), " PSN ", packet.psn,
                       " arrived while the message begun at frame ",
                       q.partial->first_frame,
                       " was unfinished; that message is dropped")));
      q.partial.reset();
      Start(frame, packet, *info, q, out);
      return;
    }
    SendMessage& m = *q.partial;
    if (m.payload.size() + packet.payload.size() > options_.max_message_size) {
      out.push_back(
          ErrorFor(frame, packet,
                   absl::StrCat("the message begun at frame ", m.first_frame,
                                " exceeds ", options_.max_message_size,
                                " octets; message dropped")));
      q.partial.reset();
      return;
    }
    m.payload.insert(m.payload.end(), packet.payload.begin(),
                     packet.payload.end());
    m.frame = frame;
    m.packets += 1;
    m.last_opcode = packet.opcode;
    if (packet.invalidate_rkey) m.invalidate_rkey = packet.invalidate_rkey;
    if (packet.immediate) m.immediate = packet.immediate;
    q.next_psn = (packet.psn + 1) & kPsnMask;
    q.last_frame = frame;
    if (info->part == SendPart::kLast) Complete(q, out);
    return;
  }

  if (q.have_done && PsnInRange(packet.psn, q.done_first, q.done_last)) {
    return;  // retransmitted packet of the message just completed
  }
  if (!starts) {
    out.push_back(
        ErrorFor(frame, packet,
                 absl::StrCat(BthOpcodeName(packet.opcode), " PSN ", packet.psn,
                              " without a SEND_FIRST before it")));
    return;
  }
  Start(frame, packet, *info, q, out);
}

void SendReassembler::Finish(std::vector<SendRecord>& out) {
  for (auto& [key, q] : queues_) {
    if (!q.partial) continue;
    SendError e;
    e.frame = q.last_frame;
    e.src = q.partial->src;
    e.dst = q.partial->dst;
    e.dest_qp = q.partial->dest_qp;
    e.psn = (q.next_psn - 1) & kPsnMask;
    e.message = absl::StrCat(
        "the capture ends inside the message begun at "
        "frame ",
        q.partial->first_frame, " (", q.partial->packets,
        " packets, no SEND_LAST)");
    out.push_back(std::move(e));
    q.partial.reset();
  }
}

}  // namespace rpcrdma::pcap
