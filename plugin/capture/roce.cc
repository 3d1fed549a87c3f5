#include "plugin/capture/roce.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugin/capture/crc32.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::pcap {
namespace {

constexpr size_t kEthernetHeaderLength = 14;
constexpr size_t kVlanTagLength = 4;
constexpr size_t kSllHeaderLength = 16;
constexpr size_t kSll2HeaderLength = 20;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint8_t kGrhNextHeaderBth = 0x1B;  // IBA Vol 1 §8.3.1
constexpr int kLinktypeRaw = 101;  // LINKTYPE_RAW, if a file reports it as is

// Network byte order is big-endian: 32-bit fields are loaded and stored
// with the XDR codec's word functions (the same layout, RFC 4506 §4.1);
// the 16- and 24-bit ones, which XDR lacks, are put together here.
uint16_t Load16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
uint32_t Load24(const uint8_t* p) {
  return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
uint32_t Load32Le(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
         (uint32_t{p[3]} << 24);
}

void Put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void Set16(std::vector<uint8_t>& out, size_t at, uint16_t v) {
  out[at] = static_cast<uint8_t>(v >> 8);
  out[at + 1] = static_cast<uint8_t>(v);
}

// One's-complement sum (RFC 1071) folded to 16 bits, not complemented.
uint32_t OnesSum(absl::Span<const uint8_t> data, uint32_t sum) {
  size_t i = 0;
  for (; i + 1 < data.size(); i += 2) sum += Load16(data.data() + i);
  if (i < data.size()) sum += uint32_t{data[i]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum;
}

// Masks the variant fields of an IPv6 header or GRH in place: traffic class,
// flow label and hop limit (IBA Annex A17.4 / §7.8.1); the version nibble
// stays.
void MaskIpv6(uint8_t* h) {
  h[0] |= 0x0F;
  h[1] = h[2] = h[3] = 0xFF;
  h[7] = 0xFF;
}

}  // namespace

std::optional<RcSendInfo> RcSendOpcodeInfo(uint8_t opcode) {
  switch (static_cast<BthOpcode>(opcode)) {
    case BthOpcode::kSendFirst:
      return RcSendInfo{SendPart::kFirst, false, false};
    case BthOpcode::kSendMiddle:
      return RcSendInfo{SendPart::kMiddle, false, false};
    case BthOpcode::kSendLast:
      return RcSendInfo{SendPart::kLast, false, false};
    case BthOpcode::kSendLastWithImmediate:
      return RcSendInfo{SendPart::kLast, true, false};
    case BthOpcode::kSendOnly:
      return RcSendInfo{SendPart::kOnly, false, false};
    case BthOpcode::kSendOnlyWithImmediate:
      return RcSendInfo{SendPart::kOnly, true, false};
    case BthOpcode::kSendLastWithInvalidate:
      return RcSendInfo{SendPart::kLast, false, true};
    case BthOpcode::kSendOnlyWithInvalidate:
      return RcSendInfo{SendPart::kOnly, false, true};
    default:
      return std::nullopt;
  }
}

std::string BthOpcodeName(uint8_t opcode) {
  switch (static_cast<BthOpcode>(opcode)) {
    case BthOpcode::kSendFirst:
      return "SEND_FIRST";
    case BthOpcode::kSendMiddle:
      return "SEND_MIDDLE";
    case BthOpcode::kSendLast:
      return "SEND_LAST";
    case BthOpcode::kSendLastWithImmediate:
      return "SEND_LAST_WITH_IMMEDIATE";
    case BthOpcode::kSendOnly:
      return "SEND_ONLY";
    case BthOpcode::kSendOnlyWithImmediate:
      return "SEND_ONLY_WITH_IMMEDIATE";
    case BthOpcode::kSendLastWithInvalidate:
      return "SEND_LAST_WITH_INVALIDATE";
    case BthOpcode::kSendOnlyWithInvalidate:
      return "SEND_ONLY_WITH_INVALIDATE";
    default:
      return absl::StrFormat("opcode 0x%02x", opcode);
  }
}

std::optional<IpAddress> IpAddress::Parse(absl::string_view text) {
  std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) return a;
  return std::nullopt;
}

IpAddress IpAddress::FromV4(absl::Span<const uint8_t> four) {
  IpAddress a;
  std::memcpy(a.bytes.data(), four.data(), 4);
  return a;
}

IpAddress IpAddress::FromV6(absl::Span<const uint8_t> sixteen) {
  IpAddress a;
  a.v6 = true;
  std::memcpy(a.bytes.data(), sixteen.data(), 16);
  return a;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
  return buf;
}

int LinkTypeToDlt(LinkType type) {
  switch (type) {
    case LinkType::kEthernet:
      return kDltEn10mb;
    case LinkType::kLinuxSll:
      return kDltLinuxSll;
    case LinkType::kLinuxSll2:
      return kDltLinuxSll2;
    case LinkType::kRaw:
      return kDltRaw;
  }
  return kDltEn10mb;
}

uint16_t Ipv4HeaderChecksum(absl::Span<const uint8_t> header) {
  return static_cast<uint16_t>(~OnesSum(header, 0) & 0xFFFF);
}

std::optional<uint32_t> ComputeIcrc(absl::Span<const uint8_t> packet,
                                    bool rocev2) {
  // The masked copy of the network headers and the BTH; the rest of the
  // packet is covered as it is.
  uint8_t masked[kIpv6HeaderLength + kUdpHeaderLength + kBthLength];
  size_t length = 0;
  if (packet.empty()) return std::nullopt;
  bool v4 = rocev2 && (packet[0] >> 4) == 4;
  if (v4) {
    if (packet.size() < kIpv4HeaderLength) return std::nullopt;
    size_t ihl = size_t{packet[0] & 0x0Fu} * 4;
    // rxe and the Annex compute over a 20-octet IPv4 header; options are
    // not used with RoCEv2.
    if (ihl != kIpv4HeaderLength) return std::nullopt;
    length = kIpv4HeaderLength + kUdpHeaderLength + kBthLength;
    if (packet.size() < length) return std::nullopt;
    std::memcpy(masked, packet.data(), length);
    masked[1] = 0xFF;                // TOS (DSCP + ECN)
    masked[8] = 0xFF;                // TTL
    masked[10] = masked[11] = 0xFF;  // header checksum
  } else {
    length = kIpv6HeaderLength + (rocev2 ? kUdpHeaderLength : 0) + kBthLength;
    if (packet.size() < length) return std::nullopt;
    std::memcpy(masked, packet.data(), length);
    MaskIpv6(masked);
  }
  if (rocev2) {
    size_t udp = length - kBthLength - kUdpHeaderLength;
    masked[udp + 6] = masked[udp + 7] = 0xFF;  // UDP checksum
  }
  masked[length - kBthLength + 4] = 0xFF;  // BTH resv8a (FECN, BECN)
  static constexpr uint8_t kMaskedLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF,
                                            0xFF, 0xFF, 0xFF, 0xFF};
  uint32_t crc = Crc32(kMaskedLrh);
  crc = Crc32(absl::MakeConstSpan(masked, length), crc);
  return Crc32(packet.subspan(length), crc);
}

namespace {

absl::Status CheckFrameSpec(const RoceV2FrameSpec& spec) {
  if (spec.src_ip.v6 != spec.dst_ip.v6) {
    return absl::InvalidArgumentError(
        "source and destination must both be IPv4 or both IPv6");
  }
  if (spec.dest_qp > kQpnMask || spec.psn > kPsnMask) {
    return absl::InvalidArgumentError(
        absl::StrCat("destination QP ", spec.dest_qp, " or PSN ", spec.psn,
                     " does not fit in 24 bits"));
  }
  if (spec.vlan_id &&
      (*spec.vlan_id > 0xFFF || spec.link != LinkType::kEthernet)) {
    return absl::InvalidArgumentError(
        "a VLAN tag needs an Ethernet link and a 12-bit VLAN id");
  }
  return absl::OkStatus();
}

// The link-layer header of `spec.link` for an IP packet of `ethertype`.
void PutLinkHeader(std::vector<uint8_t>& f, const RoceV2FrameSpec& spec,
                   uint16_t ethertype) {
  switch (spec.link) {
    case LinkType::kEthernet:
      f.insert(f.end(), spec.dst_mac.begin(), spec.dst_mac.end());
      f.insert(f.end(), spec.src_mac.begin(), spec.src_mac.end());
      if (spec.vlan_id) {
        Put16(f, kEtherTypeVlan);
        Put16(f, *spec.vlan_id);  // PCP 0, DEI 0
      }
      Put16(f, ethertype);
      break;
    case LinkType::kLinuxSll:
      Put16(f, spec.sll_outgoing ? 4 : 0);  // packet type
      Put16(f, 1);                          // ARPHRD_ETHER
      Put16(f, 6);                          // link-layer address length
      f.insert(f.end(), spec.src_mac.begin(), spec.src_mac.end());
      Put16(f, 0);  // address padded to 8 octets
      Put16(f, ethertype);
      break;
    case LinkType::kLinuxSll2:
      Put16(f, ethertype);
      Put16(f, 0);              // reserved
      AppendBigEndian32(f, 1);  // interface index
      Put16(f, 1);              // ARPHRD_ETHER
      f.push_back(spec.sll_outgoing ? 4 : 0);
      f.push_back(6);
      f.insert(f.end(), spec.src_mac.begin(), spec.src_mac.end());
      Put16(f, 0);
      break;
    case LinkType::kRaw:
      break;
  }
}

// The IPv4 or IPv6 header of a packet carrying `udp_length` octets of UDP.
void PutIpHeader(std::vector<uint8_t>& f, const RoceV2FrameSpec& spec,
                 size_t udp_length) {
  const size_t ip_at = f.size();
  const bool v6 = spec.dst_ip.v6;
  if (v6) {
    AppendBigEndian32(f, (6u << 28) | (uint32_t{spec.traffic_class} << 20));
    Put16(f, static_cast<uint16_t>(udp_length));
    f.push_back(kIpProtoUdp);
    f.push_back(spec.hop_limit);
  } else {
    f.push_back(0x45);
    f.push_back(spec.traffic_class);
    Put16(f, static_cast<uint16_t>(kIpv4HeaderLength + udp_length));
    Put16(f, spec.ip_id);
    Put16(f, 0x4000);  // DF, fragment offset 0
    f.push_back(spec.hop_limit);
    f.push_back(kIpProtoUdp);
    Put16(f, 0);  // checksum, filled below
  }
  f.insert(f.end(), spec.src_ip.bytes.begin(),
           spec.src_ip.bytes.begin() + static_cast<long>(spec.src_ip.size()));
  f.insert(f.end(), spec.dst_ip.bytes.begin(),
           spec.dst_ip.bytes.begin() + static_cast<long>(spec.dst_ip.size()));
  if (!v6) {
    Set16(f, ip_at + 10,
          Ipv4HeaderChecksum(
              absl::MakeConstSpan(f).subspan(ip_at, kIpv4HeaderLength)));
  }
}

// The UDP header, the BTH (IBA Vol 1 §9.2), the extension headers and the
// padded payload.
void PutUdpAndTransport(std::vector<uint8_t>& f, const RoceV2FrameSpec& spec,
                        size_t udp_length, size_t pad) {
  Put16(f, spec.udp_src_port);
  Put16(f, kRoceV2UdpPort);
  Put16(f, static_cast<uint16_t>(udp_length));
  Put16(f, 0);  // checksum: none over IPv4; IPv6 filled at the end
  f.push_back(spec.opcode);
  f.push_back(static_cast<uint8_t>((spec.solicited ? 0x80 : 0) |
                                   (pad << 4)));  // SE, M=0, PadCnt, TVer=0
  Put16(f, spec.pkey);
  AppendBigEndian32(f, spec.dest_qp);  // resv8a = 0, then the QPN
  AppendBigEndian32(f, (spec.ack_request ? 0x80000000u : 0) | spec.psn);
  f.insert(f.end(), spec.extension_headers.begin(),
           spec.extension_headers.end());
  f.insert(f.end(), spec.payload.begin(), spec.payload.end());
  f.insert(f.end(), pad, 0);
}

// RFC 8200 §8.1: the UDP checksum over IPv6 (pseudo-header, then the UDP
// datagram), which is mandatory there.
void SetUdpChecksumOverIpv6(std::vector<uint8_t>& f, size_t ip_at,
                            size_t udp_at, size_t udp_length) {
  uint32_t sum = OnesSum(absl::MakeConstSpan(f).subspan(ip_at + 8, 32), 0);
  sum += static_cast<uint32_t>(udp_length) + kIpProtoUdp;
  sum = OnesSum(absl::MakeConstSpan(f).subspan(udp_at), sum);
  const uint16_t check = static_cast<uint16_t>(~sum & 0xFFFF);
  Set16(f, udp_at + 6, check == 0 ? 0xFFFF : check);
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> BuildRoceV2Frame(
    const RoceV2FrameSpec& spec) {
  if (absl::Status valid = CheckFrameSpec(spec); !valid.ok()) return valid;
  const bool v6 = spec.dst_ip.v6;
  const size_t pad = (4 - (spec.payload.size() & 3)) & 3;
  const size_t udp_length = kUdpHeaderLength + kBthLength +
                            spec.extension_headers.size() +
                            spec.payload.size() + pad + kIcrcLength;
  const size_t ip_header = v6 ? kIpv6HeaderLength : kIpv4HeaderLength;
  if (udp_length + (v6 ? 0 : ip_header) > 0xFFFF) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", spec.payload.size(),
                     "-octet payload does not fit in one IP packet"));
  }

  std::vector<uint8_t> f;
  f.reserve(kSll2HeaderLength + kVlanTagLength + ip_header + udp_length);
  PutLinkHeader(f, spec, v6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  const size_t ip_at = f.size();
  PutIpHeader(f, spec, udp_length);
  const size_t udp_at = f.size();
  PutUdpAndTransport(f, spec, udp_length, pad);

  std::optional<uint32_t> icrc =
      ComputeIcrc(absl::MakeConstSpan(f).subspan(ip_at), /*rocev2=*/true);
  if (!icrc) return absl::InternalError("ICRC over a malformed packet");
  for (int i = 0; i < 4; ++i) {
    f.push_back(static_cast<uint8_t>(*icrc >> (8 * i)));
  }
  if (v6) SetUdpChecksumOverIpv6(f, ip_at, udp_at, udp_length);
  return f;
}

namespace {

// Parses from the BTH on. `packet` is the IP (or GRH) packet, bounded by its
// length field, `bth_at` the BTH offset inside it.
FrameParse ParseFromBth(absl::Span<const uint8_t> packet, size_t bth_at,
                        bool rocev2, RocePacket pkt) {
  FrameParse r;
  if (packet.size() < bth_at + kBthLength + kIcrcLength) {
    r.kind = FrameKind::kMalformed;
    r.error = absl::StrCat("RoCE packet of ", packet.size() - bth_at,
                           " octets is too short for a BTH and ICRC");
    return r;
  }
  const uint8_t* b = packet.data() + bth_at;
  pkt.opcode = b[0];
  pkt.solicited = (b[1] & 0x80) != 0;
  pkt.pad_count = static_cast<uint8_t>((b[1] >> 4) & 3);
  pkt.pkey = Load16(b + 2);
  pkt.dest_qp = Load24(b + 5);
  pkt.ack_request = (b[8] & 0x80) != 0;
  pkt.psn = Load24(b + 9);
  const size_t icrc_at = packet.size() - kIcrcLength;
  pkt.icrc = Load32Le(packet.data() + icrc_at);
  std::optional<uint32_t> icrc = ComputeIcrc(packet.first(icrc_at), rocev2);
  pkt.icrc_valid = icrc && *icrc == pkt.icrc;

  size_t at = bth_at + kBthLength;
  if (std::optional<RcSendInfo> info = RcSendOpcodeInfo(pkt.opcode)) {
    if (info->immediate || info->invalidate) {
      if (icrc_at - at < 4) {
        r.kind = FrameKind::kMalformed;
        r.error = absl::StrCat(BthOpcodeName(pkt.opcode), " PSN ", pkt.psn,
                               " is too short for its ",
                               info->immediate ? "ImmDt" : "IETH");
        return r;
      }
      uint32_t word = LoadBigEndian32(packet.data() + at);
      (info->immediate ? pkt.immediate : pkt.invalidate_rkey) = word;
      at += 4;
    }
    if (icrc_at - at < pkt.pad_count) {
      r.kind = FrameKind::kMalformed;
      r.error = absl::StrCat(BthOpcodeName(pkt.opcode), " PSN ", pkt.psn,
                             ": pad count ", pkt.pad_count, " exceeds the ",
                             icrc_at - at, "-octet payload");
      return r;
    }
    pkt.payload = packet.subspan(at, icrc_at - at - pkt.pad_count);
  }
  r.kind = FrameKind::kRoce;
  r.packet = pkt;
  return r;
}

// The IP length claims more octets than the frame holds: either the capture
// kept only a prefix (snap length) or the header lies.
FrameParse Short(bool cut, size_t present, size_t claimed) {
  FrameParse r;
  r.kind = FrameKind::kMalformed;
  r.error = cut ? absl::StrCat("RoCE frame cut short by the capture: ", present,
                               " of ", claimed, " octets present")
                : absl::StrCat("IP length claims ", claimed,
                               " octets but the frame holds ", present);
  return r;
}

FrameParse ParseIpv4(absl::Span<const uint8_t> p, bool cut) {
  FrameParse none;
  if (p.size() < kIpv4HeaderLength || (p[0] >> 4) != 4) return none;
  size_t ihl = size_t{p[0] & 0x0Fu} * 4;
  size_t total = Load16(p.data() + 2);
  if (ihl < kIpv4HeaderLength || total < ihl || p.size() < ihl) return none;
  if (p[9] != kIpProtoUdp) return none;
  if ((Load16(p.data() + 6) & 0x3FFF) != 0) return none;  // a fragment
  // The destination port alone marks RoCEv2, even in a frame cut short.
  if (p.size() < ihl + 4 || Load16(p.data() + ihl + 2) != kRoceV2UdpPort) {
    return none;
  }
  if (total > p.size()) return Short(cut, p.size(), total);
  p = p.first(total);
  size_t udp_length =
      p.size() >= ihl + kUdpHeaderLength ? Load16(p.data() + ihl + 4) : 0;
  if (udp_length < kUdpHeaderLength || ihl + udp_length > p.size()) {
    FrameParse r;
    r.kind = FrameKind::kMalformed;
    r.error = absl::StrCat("UDP length ", udp_length,
                           " disagrees with the IPv4 total length ", total);
    return r;
  }
  RocePacket pkt;
  pkt.src = IpAddress::FromV4(p.subspan(12, 4));
  pkt.dst = IpAddress::FromV4(p.subspan(16, 4));
  return ParseFromBth(p.first(ihl + udp_length), ihl + kUdpHeaderLength,
                      /*rocev2=*/true, pkt);
}

FrameParse ParseIpv6(absl::Span<const uint8_t> p, bool cut) {
  FrameParse none;
  if (p.size() < kIpv6HeaderLength || (p[0] >> 4) != 6) return none;
  size_t total = kIpv6HeaderLength + Load16(p.data() + 4);
  // Skip hop-by-hop (0), routing (43) and destination options (60) headers.
  uint8_t next = p[6];
  size_t at = kIpv6HeaderLength;
  while (next == 0 || next == 43 || next == 60) {
    if (p.size() < at + 8) return none;
    next = p[at];
    at += (size_t{p[at + 1]} + 1) * 8;
  }
  if (next != kIpProtoUdp || p.size() < at + 4 ||
      Load16(p.data() + at + 2) != kRoceV2UdpPort) {
    return none;
  }
  if (total > p.size()) return Short(cut, p.size(), total);
  p = p.first(total);
  size_t udp_length =
      p.size() >= at + kUdpHeaderLength ? Load16(p.data() + at + 4) : 0;
  if (udp_length < kUdpHeaderLength || at + udp_length > p.size()) {
    FrameParse r;
    r.kind = FrameKind::kMalformed;
    r.error = absl::StrCat("UDP length ", udp_length,
                           " disagrees with the IPv6 payload length ",
                           total - kIpv6HeaderLength);
    return r;
  }
  RocePacket pkt;
  pkt.src = IpAddress::FromV6(p.subspan(8, 16));
  pkt.dst = IpAddress::FromV6(p.subspan(24, 16));
  return ParseFromBth(p.first(at + udp_length), at + kUdpHeaderLength,
                      /*rocev2=*/true, pkt);
}

FrameParse ParseRoceV1(absl::Span<const uint8_t> p, bool cut) {
  FrameParse none;
  if (p.size() < kGrhLength || p[6] != kGrhNextHeaderBth) return none;
  size_t total = kGrhLength + Load16(p.data() + 4);
  if (total > p.size()) return Short(cut, p.size(), total);
  RocePacket pkt;
  pkt.roce_version = 1;
  pkt.src = IpAddress::FromV6(p.subspan(8, 16));
  pkt.dst = IpAddress::FromV6(p.subspan(24, 16));
  return ParseFromBth(p.first(total), kGrhLength, /*rocev2=*/false, pkt);
}

FrameParse ParseByEthertype(uint16_t type, absl::Span<const uint8_t> p,
                            bool cut, const ParseOptions& options) {
  switch (type) {
    case kEtherTypeIpv4:
      return ParseIpv4(p, cut);
    case kEtherTypeIpv6:
      return ParseIpv6(p, cut);
    case kEtherTypeRoceV1:
      if (options.accept_rocev1) return ParseRoceV1(p, cut);
      return FrameParse{};
    default:
      return FrameParse{};
  }
}

// Skips 802.1Q / 802.1ad tags; `type` is the ethertype before `p`.
FrameParse ParseTagged(uint16_t type, absl::Span<const uint8_t> p, bool cut,
                       const ParseOptions& options) {
  while (type == kEtherTypeVlan || type == kEtherTypeQinQ) {
    if (p.size() < kVlanTagLength) return FrameParse{};
    type = Load16(p.data() + 2);
    p = p.subspan(kVlanTagLength);
  }
  return ParseByEthertype(type, p, cut, options);
}

}  // namespace

FrameParse ParseRoceFrame(int dlt, absl::Span<const uint8_t> frame,
                          size_t wire_length, const ParseOptions& options) {
  const bool cut = wire_length > frame.size();
  switch (dlt) {
    case kDltEn10mb:
      if (frame.size() < kEthernetHeaderLength) return FrameParse{};
      return ParseTagged(Load16(frame.data() + 12),
                         frame.subspan(kEthernetHeaderLength), cut, options);
    case kDltLinuxSll:
      if (frame.size() < kSllHeaderLength) return FrameParse{};
      return ParseTagged(Load16(frame.data() + 14),
                         frame.subspan(kSllHeaderLength), cut, options);
    case kDltLinuxSll2:
      if (frame.size() < kSll2HeaderLength) return FrameParse{};
      return ParseTagged(Load16(frame.data()), frame.subspan(kSll2HeaderLength),
                         cut, options);
    case kDltRaw:
    case kLinktypeRaw:
    case kDltIpv4:
    case kDltIpv6:
      if (frame.empty()) return FrameParse{};
      if ((frame[0] >> 4) == 4) return ParseIpv4(frame, cut);
      if ((frame[0] >> 4) == 6) return ParseIpv6(frame, cut);
      return FrameParse{};
    default:
      return FrameParse{};
  }
}

}  // namespace rpcrdma::pcap
