// RoCE framing: building and parsing the frames that carry InfiniBand RC
// SENDs over Ethernet.
//
// RoCEv2 (IBA Vol 1 Annex A17): Ethernet II / IPv4 or IPv6 / UDP to port 4791
// / Base Transport Header / extension headers / payload / pad / ICRC.
// RoCEv1 (Annex A16): Ethernet II with ethertype 0x8915 / 40-octet GRH / BTH
// / ... / ICRC.
#ifndef RPCRDMA_PLUGIN_CAPTURE_ROCE_H_
#define RPCRDMA_PLUGIN_CAPTURE_ROCE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma::pcap {

constexpr uint16_t kRoceV2UdpPort = 4791;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;  // IEEE 802.1Q
constexpr uint16_t kEtherTypeQinQ = 0x88A8;  // IEEE 802.1ad
constexpr uint16_t kEtherTypeRoceV1 = 0x8915;

constexpr size_t kBthLength = 12;
constexpr size_t kIethLength = 4;
constexpr size_t kImmDtLength = 4;
constexpr size_t kIcrcLength = 4;
constexpr size_t kGrhLength = 40;
constexpr size_t kIpv4HeaderLength = 20;
constexpr size_t kIpv6HeaderLength = 40;
constexpr size_t kUdpHeaderLength = 8;
constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr uint32_t kQpnMask = 0xFFFFFF;

// BTH opcodes of the RC transport (IBA Vol 1 §9.2, Table 38): bits 7..5 are
// the transport (000 = RC), bits 4..0 the operation.
enum class BthOpcode : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastWithImmediate = 0x03,
  kSendOnly = 0x04,
  kSendOnlyWithImmediate = 0x05,
  kRdmaWriteFirst = 0x06,
  kRdmaWriteMiddle = 0x07,
  kRdmaWriteLast = 0x08,
  kRdmaWriteLastWithImmediate = 0x09,
  kRdmaWriteOnly = 0x0A,
  kRdmaWriteOnlyWithImmediate = 0x0B,
  kRdmaReadRequest = 0x0C,
  kRdmaReadResponseFirst = 0x0D,
  kRdmaReadResponseMiddle = 0x0E,
  kRdmaReadResponseLast = 0x0F,
  kRdmaReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kSendLastWithInvalidate = 0x16,
  kSendOnlyWithInvalidate = 0x17,
};

// The place of an RC SEND packet in its message.
enum class SendPart { kFirst, kMiddle, kLast, kOnly };

// Facts about one RC SEND opcode; nullopt for every other opcode (other
// transports, RDMA READ/WRITE, ACK).
struct RcSendInfo {
  SendPart part;
  bool immediate;   // carries ImmDt (4 octets after the BTH)
  bool invalidate;  // carries IETH (4 octets after the BTH)
};
std::optional<RcSendInfo> RcSendOpcodeInfo(uint8_t opcode);
// "SEND_ONLY", "SEND_LAST_WITH_INVALIDATE", ...; "opcode 0xNN" otherwise.
std::string BthOpcodeName(uint8_t opcode);

// An IPv4 or IPv6 address (or a RoCEv1 GID, which has the IPv6 form).
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first four

  // Dotted quad or RFC 4291 text; nullopt if neither.
  static std::optional<IpAddress> Parse(absl::string_view text);
  static IpAddress FromV4(absl::Span<const uint8_t> four);
  static IpAddress FromV6(absl::Span<const uint8_t> sixteen);
  std::string ToString() const;
  size_t size() const { return v6 ? 16 : 4; }

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
};

using MacAddress = std::array<uint8_t, 6>;

// The link layers the writer can produce and the reader accepts.
enum class LinkType {
  kEthernet,   // DLT_EN10MB, optionally with one 802.1Q tag
  kLinuxSll,   // DLT_LINUX_SLL ("Linux cooked" v1)
  kLinuxSll2,  // DLT_LINUX_SLL2
  kRaw,        // DLT_RAW: the frame starts with the IP header
};
int LinkTypeToDlt(LinkType type);

// libpcap's link-layer type numbers (DLT_* of pcap/dlt.h, as on Linux), so
// that writing and parsing frames needs no libpcap; the pcap reader of the
// tools compares them with libpcap's own.
constexpr int kDltEn10mb = 1;
constexpr int kDltRaw = 12;
constexpr int kDltLinuxSll = 113;
constexpr int kDltIpv4 = 228;
constexpr int kDltIpv6 = 229;
constexpr int kDltLinuxSll2 = 276;

// Everything that goes into one RoCEv2 frame.
struct RoceV2FrameSpec {
  LinkType link = LinkType::kEthernet;
  std::optional<uint16_t> vlan_id;  // kEthernet only; 12-bit VID
  MacAddress src_mac{0x02, 0, 0, 0, 0, 0x01};
  MacAddress dst_mac{0x02, 0, 0, 0, 0, 0x02};
  bool sll_outgoing = false;  // SLL packet type 4 (sent by us) instead of 0
  IpAddress src_ip;           // both IPv4 or both IPv6
  IpAddress dst_ip;
  uint8_t traffic_class = 0;  // IPv4 TOS / IPv6 traffic class
  uint8_t hop_limit = 64;     // IPv4 TTL / IPv6 hop limit
  uint16_t ip_id = 0;         // IPv4 identification
  uint16_t udp_src_port = 49152;
  // BTH (IBA Vol 1 §9.2).
  uint8_t opcode = static_cast<uint8_t>(BthOpcode::kSendOnly);
  bool solicited = false;
  bool ack_request = false;
  uint16_t pkey = 0xFFFF;
  uint32_t dest_qp = 0;  // 24 bits
  uint32_t psn = 0;      // 24 bits
  // Octets between the BTH and the payload (IETH, ImmDt, RETH, AETH ...),
  // written as given.
  std::vector<uint8_t> extension_headers;
  std::vector<uint8_t> payload;  // padded to four octets (BTH PadCnt)
};

// Builds the whole link-layer frame with a correct IPv4 header checksum, UDP
// checksum zero (allowed for RoCEv2 over IPv4 only; an IPv6 frame gets a real
// UDP checksum as RFC 8200 §8.1 requires) and the ICRC. Fails if a field is
// out of range or the packet would exceed 65535 octets of IP payload.
absl::StatusOr<std::vector<uint8_t>> BuildRoceV2Frame(
    const RoceV2FrameSpec& spec);

// RFC 791 header checksum of an IPv4 header whose checksum field holds the
// value it carries (zero it first to compute, or keep it to verify: a
// correct header sums to 0).
uint16_t Ipv4HeaderChecksum(absl::Span<const uint8_t> header);

// The invariant CRC (IBA Vol 1 §7.8.1; Annex A17 for RoCEv2, A16 for
// RoCEv1). `packet` runs from the first octet of the IPv4/IPv6 header (or of
// the GRH for RoCEv1) to the last octet before the ICRC. The CRC covers eight
// 0xFF octets standing for the masked LRH, then the packet with its variant
// fields masked to ones: IPv4 TOS, TTL and header checksum; IPv6/GRH traffic
// class, flow label and hop limit; UDP checksum; BTH resv8a (FECN/BECN).
// The result is stored in the frame least significant octet first, as the
// Linux rxe driver and hardware NICs do. Returns nullopt if `packet` is too
// short to hold the headers.
std::optional<uint32_t> ComputeIcrc(absl::Span<const uint8_t> packet,
                                    bool rocev2);

// One RoCE packet found in a frame.
struct RocePacket {
  int roce_version = 2;
  IpAddress src;
  IpAddress dst;
  uint8_t opcode = 0;
  bool solicited = false;
  uint8_t pad_count = 0;
  uint16_t pkey = 0;
  uint32_t dest_qp = 0;
  bool ack_request = false;
  uint32_t psn = 0;
  // For RC SEND opcodes: the IETH rkey / immediate data when present and the
  // payload without extension headers, pad and ICRC. Points into the frame.
  std::optional<uint32_t> invalidate_rkey;
  std::optional<uint32_t> immediate;
  absl::Span<const uint8_t> payload;
  uint32_t icrc = 0;        // as carried in the frame
  bool icrc_valid = false;  // it matches ComputeIcrc
};

enum class FrameKind {
  kNotRoce,    // some other traffic
  kRoce,       // parsed into `packet`
  kMalformed,  // addressed to RoCE but unusable; `error` says why
};

struct FrameParse {
  FrameKind kind = FrameKind::kNotRoce;
  RocePacket packet;
  std::string error;
};

struct ParseOptions {
  bool accept_rocev1 = true;  // ethertype 0x8915
};

// Walks link layer (by pcap DLT: EN10MB with any number of 802.1Q/802.1ad
// tags, LINUX_SLL, LINUX_SLL2, RAW, IPV4, IPV6), IP and UDP to the BTH. Never
// reads outside `frame`; trailing octets beyond the IP length (Ethernet
// padding, FCS) are ignored. `wire_length` is the frame's original length,
// to tell a capture cut short by its snap length.
FrameParse ParseRoceFrame(int dlt, absl::Span<const uint8_t> frame,
                          size_t wire_length, const ParseOptions& options = {});

}  // namespace rpcrdma::pcap

#endif  // RPCRDMA_PLUGIN_CAPTURE_ROCE_H_
