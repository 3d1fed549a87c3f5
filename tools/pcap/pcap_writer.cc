#include "tools/pcap/pcap_writer.h"

#include <pcap/pcap.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rpcrdma::pcap {
namespace {

// Large enough for a 4096-octet MTU frame with every header.
constexpr int kSnapLength = 65535;

bool ValidPmtu(uint32_t pmtu) {
  return pmtu == 256 || pmtu == 512 || pmtu == 1024 || pmtu == 2048 ||
         pmtu == 4096;
}

void PutBigEndian32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<uint8_t>(v >> shift));
  }
}

}  // namespace

Endpoint DefaultRequester() {
  return Endpoint{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01},
                  *IpAddress::Parse("192.0.2.1"),
                  0x000011,
                  0,
                  49152};
}

Endpoint DefaultResponder() {
  return Endpoint{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02},
                  *IpAddress::Parse("192.0.2.2"),
                  0x000012,
                  0,
                  49153};
}

absl::StatusOr<std::unique_ptr<PcapWriter>> PcapWriter::Open(
    const std::string& path, const PcapWriterOptions& options) {
  if (!ValidPmtu(options.pmtu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("path MTU ", options.pmtu,
                     " is not one of 256, 512, 1024, 2048, 4096"));
  }
  if (options.requester.ip.v6 != options.responder.ip.v6) {
    return absl::InvalidArgumentError(
        "requester and responder must both be IPv4 or both IPv6");
  }
  pcap_t* p = pcap_open_dead(LinkTypeToDlt(options.link), kSnapLength);
  if (p == nullptr) return absl::InternalError("pcap_open_dead failed");
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    absl::Status st = absl::UnavailableError(
        absl::StrCat("cannot create ", path, ": ", pcap_geterr(p)));
    pcap_close(p);
    return st;
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(options, p, d));
}

PcapWriter::PcapWriter(const PcapWriterOptions& options, pcap_t* pcap,
                       pcap_dumper_t* dumper)
    : options_(options), pcap_(pcap), dumper_(dumper) {
  AddConnection(options.requester, options.responder);
}

PcapWriter::~PcapWriter() { (void)Close(); }

size_t PcapWriter::AddConnection(const Endpoint& requester,
                                 const Endpoint& responder) {
  Connection c;
  c.requester.self = requester;
  c.requester.next_psn = requester.initial_psn & kPsnMask;
  c.responder.self = responder;
  c.responder.next_psn = responder.initial_psn & kPsnMask;
  connections_.push_back(c);
  return connections_.size() - 1;
}

int PcapWriter::dlt() const { return LinkTypeToDlt(options_.link); }

uint32_t PcapWriter::next_psn(size_t connection, Direction direction) const {
  const Connection& c = connections_.at(connection);
  return direction == Direction::kToResponder ? c.requester.next_psn
                                              : c.responder.next_psn;
}

absl::Status PcapWriter::WriteFrame(absl::Span<const uint8_t> frame) {
  if (dumper_ == nullptr) {
    return absl::FailedPreconditionError("the capture file is closed");
  }
  if (frame.size() > kSnapLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", frame.size(), "-octet frame exceeds the ",
                     kSnapLength, "-octet snap length"));
  }
  int64_t t = options_.start_time_us +
              static_cast<int64_t>(frames_) * options_.frame_interval_us;
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(t / 1000000);
  h.ts.tv_usec = static_cast<suseconds_t>(t % 1000000);
  h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, frame.data());
  ++frames_;
  return absl::OkStatus();
}

absl::Status PcapWriter::Send(Direction direction,
                              absl::Span<const uint8_t> payload,
                              const SendOptions& options) {
  return Send(0, direction, payload, options);
}

absl::Status PcapWriter::Send(size_t connection, Direction direction,
                              absl::Span<const uint8_t> payload,
                              const SendOptions& options) {
  if (connection >= connections_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no connection ", connection));
  }
  if (options.invalidate_rkey && options.immediate) {
    return absl::InvalidArgumentError(
        "a SEND carries either an IETH or ImmDt, not both");
  }
  Connection& c = connections_[connection];
  Side& from = direction == Direction::kToResponder ? c.requester : c.responder;
  const Side& to =
      direction == Direction::kToResponder ? c.responder : c.requester;

  const size_t mtu = options_.pmtu;
  const size_t packets = payload.empty() ? 1 : (payload.size() + mtu - 1) / mtu;
  for (size_t i = 0; i < packets; ++i) {
    const bool first = i == 0;
    const bool last = i + 1 == packets;
    RoceV2FrameSpec spec;
    spec.link = options_.link;
    spec.vlan_id = options_.vlan_id;
    spec.src_mac = from.self.mac;
    spec.dst_mac = to.self.mac;
    spec.sll_outgoing = direction == Direction::kToResponder;
    spec.src_ip = from.self.ip;
    spec.dst_ip = to.self.ip;
    spec.ip_id = from.next_ip_id++;
    spec.udp_src_port = from.self.udp_src_port;
    spec.dest_qp = to.self.qpn & kQpnMask;
    spec.psn = from.next_psn;
    spec.ack_request = last;
    spec.solicited = last && options.solicited;
    BthOpcode op;
    if (first && last) {
      op = options.invalidate_rkey ? BthOpcode::kSendOnlyWithInvalidate
           : options.immediate     ? BthOpcode::kSendOnlyWithImmediate
                                   : BthOpcode::kSendOnly;
    } else if (first) {
      op = BthOpcode::kSendFirst;
    } else if (!last) {
      op = BthOpcode::kSendMiddle;
    } else {
      op = options.invalidate_rkey ? BthOpcode::kSendLastWithInvalidate
           : options.immediate     ? BthOpcode::kSendLastWithImmediate
                                   : BthOpcode::kSendLast;
    }
    spec.opcode = static_cast<uint8_t>(op);
    if (last && options.invalidate_rkey) {
      PutBigEndian32(spec.extension_headers, *options.invalidate_rkey);
    }
    if (last && options.immediate) {
      PutBigEndian32(spec.extension_headers, *options.immediate);
    }
    size_t begin = i * mtu;
    size_t end = std::min(payload.size(), begin + mtu);
    spec.payload.assign(payload.begin() + static_cast<long>(begin),
                        payload.begin() + static_cast<long>(end));
    absl::StatusOr<std::vector<uint8_t>> frame = BuildRoceV2Frame(spec);
    if (!frame.ok()) return frame.status();
    if (absl::Status st = WriteFrame(*frame); !st.ok()) return st;
    from.next_psn = (from.next_psn + 1) & kPsnMask;
  }
  return absl::OkStatus();
}

absl::Status PcapWriter::Close() {
  if (dumper_ == nullptr) return absl::OkStatus();
  bool failed =
      pcap_dump_flush(dumper_) != 0 || ferror(pcap_dump_file(dumper_)) != 0;
  pcap_dump_close(dumper_);
  pcap_close(pcap_);
  dumper_ = nullptr;
  pcap_ = nullptr;
  if (failed) return absl::DataLossError("writing the capture file failed");
  return absl::OkStatus();
}

}  // namespace rpcrdma::pcap
