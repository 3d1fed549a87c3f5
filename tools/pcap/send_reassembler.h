// Reassembles RC SEND messages from their packets (IBA Vol 1 §9.4.1 and
// §9.7.1): a message is SEND_ONLY*, or SEND_FIRST, any number of
// SEND_MIDDLE, then SEND_LAST*, on consecutive PSNs of one receive queue.
#ifndef RPCRDMA_TOOLS_PCAP_SEND_REASSEMBLER_H_
#define RPCRDMA_TOOLS_PCAP_SEND_REASSEMBLER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "plugin/capture/roce.h"

namespace rpcrdma::pcap {

// One complete RC SEND message.
struct SendMessage {
  uint64_t frame = 0;        // 1-based frame number of its last packet
  uint64_t first_frame = 0;  // ... and of its first packet
  size_t packets = 0;
  int roce_version = 2;
  IpAddress src;
  IpAddress dst;
  uint32_t dest_qp = 0;
  uint32_t first_psn = 0;
  uint8_t last_opcode = 0;
  std::optional<uint32_t> invalidate_rkey;  // SEND_*_WITH_INVALIDATE
  std::optional<uint32_t> immediate;        // SEND_*_WITH_IMMEDIATE
  std::vector<uint8_t> payload;
};

// A packet (or a capture frame) that could not be placed in a message.
struct SendError {
  uint64_t frame = 0;
  IpAddress src;
  IpAddress dst;
  uint32_t dest_qp = 0;
  uint32_t psn = 0;
  std::string message;
};

using SendRecord = std::variant<SendMessage, SendError>;

struct ReassemblyOptions {
  // A message growing beyond this is dropped with an error, so a capture
  // cannot make the reader hold unbounded memory for one message.
  size_t max_message_size = size_t{16} << 20;
};

class SendReassembler {
 public:
  explicit SendReassembler(const ReassemblyOptions& options = {})
      : options_(options) {}

  // Feeds one parsed packet. Packets that are not RC SENDs are ignored. A
  // completed message or an error is appended to `out`:
  //  - a duplicate PSN (a retransmission of a packet already taken, in the
  //    message under way or the previous one) is dropped silently;
  //  - a PSN gap inside a message, a SEND_MIDDLE/LAST without SEND_FIRST,
  //    or a SEND_FIRST/ONLY while a message is unfinished yields a SendError
  //    for this frame (in the last case the new packet then starts afresh).
  void Add(uint64_t frame, const RocePacket& packet,
           std::vector<SendRecord>& out);

  // Reports each unfinished message as a SendError naming its last frame.
  void Finish(std::vector<SendRecord>& out);

 private:
  struct Key {
    IpAddress dst;
    uint32_t qp;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  struct QueueState {
    std::optional<SendMessage> partial;
    uint32_t next_psn = 0;
    uint64_t last_frame = 0;
    // PSNs [done_first, done_last] of the previous complete message.
    bool have_done = false;
    uint32_t done_first = 0;
    uint32_t done_last = 0;
  };

  void Start(uint64_t frame, const RocePacket& packet, const RcSendInfo& info,
             QueueState& q, std::vector<SendRecord>& out);
  void Complete(QueueState& q, std::vector<SendRecord>& out);
  static SendError ErrorFor(uint64_t frame, const RocePacket& packet,
                            std::string message);

  ReassemblyOptions options_;
  std::map<Key, QueueState> queues_;
};

// PSN arithmetic modulo 2^24: true if `psn` is in [first, last].
bool PsnInRange(uint32_t psn, uint32_t first, uint32_t last);

}  // namespace rpcrdma::pcap

#endif  // RPCRDMA_TOOLS_PCAP_SEND_REASSEMBLER_H_
