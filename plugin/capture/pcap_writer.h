// Writes RPC-over-RDMA traffic as a capture file Wireshark opens: each
// message becomes one RC SEND (split into SEND_FIRST/MIDDLE/LAST at the
// path MTU) in RoCEv2 frames. The file is the classic pcap format
// (pcap-savefile(5)), written here rather than through libpcap so that the
// library's capture tap adds no runtime dependency; the tools read captures
// with libpcap (tools/pcap).
#ifndef RPCRDMA_PLUGIN_CAPTURE_PCAP_WRITER_H_
#define RPCRDMA_PLUGIN_CAPTURE_PCAP_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "plugin/capture/roce.h"

namespace rpcrdma::pcap {

// One side of an RC connection.
struct Endpoint {
  MacAddress mac;
  IpAddress ip;
  uint32_t qpn = 0;          // this side's QP number (24 bits)
  uint32_t initial_psn = 0;  // PSN of the first packet this side sends
  uint16_t udp_src_port = 49152;
};

Endpoint DefaultRequester();  // 192.0.2.1, QPN 0x000011
Endpoint DefaultResponder();  // 192.0.2.2, QPN 0x000012

struct PcapWriterOptions {
  LinkType link = LinkType::kEthernet;
  std::optional<uint16_t> vlan_id;  // 802.1Q tag on every Ethernet frame
  // IB path MTU: the largest SEND payload in one packet; 256, 512, 1024,
  // 2048 or 4096 (IBA Vol 1 §9.7.7).
  uint32_t pmtu = 4096;
  // The connection that Send() without a connection id uses.
  Endpoint requester = DefaultRequester();
  Endpoint responder = DefaultResponder();
  // Frame timestamps: the first frame at start_time_us (microseconds since
  // the Unix epoch), each next one frame_interval_us later, so output is
  // reproducible.
  int64_t start_time_us = int64_t{1700000000} * 1000000;
  uint32_t frame_interval_us = 100;
};

enum class Direction {
  kToResponder,  // requester -> responder (RPC calls)
  kToRequester,  // responder -> requester (RPC replies)
};

struct SendOptions {
  // SEND_*_WITH_INVALIDATE carrying this R_Key in an IETH.
  std::optional<uint32_t> invalidate_rkey;
  // SEND_*_WITH_IMMEDIATE carrying this ImmDt.
  std::optional<uint32_t> immediate;
  bool solicited = false;
};

class PcapWriter {
 public:
  // Creates (truncates) `path`; "-" writes to standard output.
  static absl::StatusOr<std::unique_ptr<PcapWriter>> Open(
      const std::string& path, const PcapWriterOptions& options = {});
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Adds another RC connection; returns its id (the default one is 0).
  size_t AddConnection(const Endpoint& requester, const Endpoint& responder);

  // Writes `payload` as one RC SEND message: SEND_ONLY (or
  // SEND_ONLY_WITH_INVALIDATE / _WITH_IMMEDIATE) if it fits in the path MTU,
  // else SEND_FIRST, SEND_MIDDLE..., SEND_LAST*. PSNs increase per direction
  // of each connection.
  absl::Status Send(Direction direction, absl::Span<const uint8_t> payload,
                    const SendOptions& options = {});
  absl::Status Send(size_t connection, Direction direction,
                    absl::Span<const uint8_t> payload,
                    const SendOptions& options = {});

  // Writes a frame as given (for captures that mix in other traffic).
  absl::Status WriteFrame(absl::Span<const uint8_t> frame);

  // Flushes and closes; further writes fail. The destructor closes too but
  // cannot report an error.
  absl::Status Close();

  uint64_t frames_written() const { return frames_; }
  int dlt() const;
  // The PSN the next packet in `direction` of `connection` will carry.
  uint32_t next_psn(size_t connection, Direction direction) const;

 private:
  struct Side {
    Endpoint self;
    uint32_t next_psn = 0;
    uint16_t next_ip_id = 0;
  };
  struct Connection {
    Side requester;
    Side responder;
  };

  PcapWriter(const PcapWriterOptions& options, std::FILE* file, bool owns_file);

  PcapWriterOptions options_;
  std::FILE* file_ = nullptr;  // null once closed
  bool owns_file_ = false;     // false for standard output
  std::vector<Connection> connections_;
  uint64_t frames_ = 0;
};

}  // namespace rpcrdma::pcap

#endif  // RPCRDMA_PLUGIN_CAPTURE_PCAP_WRITER_H_
