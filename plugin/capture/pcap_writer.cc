#include "plugin/capture/pcap_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::pcap {
namespace {

// Large enough for a 4096-octet MTU frame with every header.
constexpr int kSnapLength = 65535;

bool ValidPmtu(uint32_t pmtu) {
  return pmtu == 256 || pmtu == 512 || pmtu == 1024 || pmtu == 2048 ||
         pmtu == 4096;
}

// pcap-savefile(5) fields are in the writer's byte order, which the magic
// number tells readers; little-endian here, on every host, so that the
// same traffic gives the same file.
void PutLittleEndian16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

void PutLittleEndian32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<uint8_t>(v >> shift));
  }
}

// The file header's LINKTYPE_* number (tcpdump.org/linktypes.html): the
// DLT_* number except for raw IP, whose DLT differs between platforms.
uint32_t FileLinkType(LinkType link) {
  constexpr uint32_t kLinktypeRaw = 101;
  if (link == LinkType::kRaw) return kLinktypeRaw;
  return static_cast<uint32_t>(LinkTypeToDlt(link));
}

std::vector<uint8_t> FileHeader(LinkType link) {
  constexpr uint32_t kMagicMicroseconds = 0xA1B2C3D4;
  std::vector<uint8_t> header;
  PutLittleEndian32(header, kMagicMicroseconds);
  PutLittleEndian16(header, 2);  // version 2.4
  PutLittleEndian16(header, 4);
  PutLittleEndian32(header, 0);  // thiszone: timestamps are UTC
  PutLittleEndian32(header, 0);  // sigfigs
  PutLittleEndian32(header, static_cast<uint32_t>(kSnapLength));
  PutLittleEndian32(header, FileLinkType(link));
  return header;
}

bool WriteAll(std::FILE* file, absl::Span<const uint8_t> bytes) {
  return std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
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
  const bool to_stdout = path == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  auto writer = std::unique_ptr<PcapWriter>(
      new PcapWriter(options, file, /*owns_file=*/!to_stdout));
  if (!WriteAll(file, FileHeader(options.link))) {
    (void)writer->Close();
    return absl::UnavailableError(
        absl::StrCat("cannot write the pcap file header to ", path));
  }
  return writer;
}

PcapWriter::PcapWriter(const PcapWriterOptions& options, std::FILE* file,
                       bool owns_file)
    : options_(options), file_(file), owns_file_(owns_file) {
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
  if (file_ == nullptr) {
    return absl::FailedPreconditionError("the capture file is closed");
  }
  if (frame.size() > kSnapLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", frame.size(), "-octet frame exceeds the ",
                     kSnapLength, "-octet snap length"));
  }
  int64_t t = options_.start_time_us +
              static_cast<int64_t>(frames_) * options_.frame_interval_us;
  std::vector<uint8_t> record;
  record.reserve(16);
  PutLittleEndian32(record, static_cast<uint32_t>(t / 1000000));
  PutLittleEndian32(record, static_cast<uint32_t>(t % 1000000));
  PutLittleEndian32(record, static_cast<uint32_t>(frame.size()));  // incl_len
  PutLittleEndian32(record, static_cast<uint32_t>(frame.size()));  // orig_len
  // A failed write sets the stream's error indicator, which Close() reports.
  (void)(WriteAll(file_, record) && WriteAll(file_, frame));
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
      AppendBigEndian32(spec.extension_headers, *options.invalidate_rkey);
    }
    if (last && options.immediate) {
      AppendBigEndian32(spec.extension_headers, *options.immediate);
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
  if (file_ == nullptr) return absl::OkStatus();
  bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
  if (owns_file_ && std::fclose(file_) != 0) failed = true;
  file_ = nullptr;
  if (failed) return absl::DataLossError("writing the capture file failed");
  return absl::OkStatus();
}

}  // namespace rpcrdma::pcap
