// A first look at RPC-over-RDMA: encodes a few transport headers, shows each
// one's octets and its rpcrdma-dump JSON, decodes it back, and writes them
// all to a capture file that Wireshark and rpcrdma-dump can read.
//
//   wire_demo [OUTPUT.pcap]      (default ./rpcrdma-demo.pcap)
#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include "plugin/capture/pcap_writer.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"
#include "tools/dump/dump_format.h"

namespace {

using namespace rpcrdma::wire;  // NOLINT: a short demo
using rpcrdma::StoreBigEndian32;
using rpcrdma::pcap::Direction;

struct Sample {
  const char* title;
  Direction direction;
  std::variant<V1Header, V2Header> header;
  std::vector<uint8_t> rpc;  // RPC message after the header, if inline
};

// An ONC RPC call of NFSv3 NULL (RFC 5531 §9, RFC 1813 §3.3.0): xid, CALL,
// rpcvers 2, program 100003, version 3, procedure 0, AUTH_NONE credential
// and verifier.
std::vector<uint8_t> NfsNullCall(uint32_t xid) {
  std::vector<uint8_t> m(40, 0);
  const uint32_t words[] = {xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) StoreBigEndian32(&m[4 * i], words[i]);
  return m;
}

std::vector<Sample> Samples() {
  std::vector<Sample> s;
  // 1. A small call sent inline (RFC 8166 §3.5.1).
  s.push_back({"RDMA_MSG: an inline NFSv3 NULL call", Direction::kToResponder,
               V1Header{0x1001, 1, 32, V1Msg{}}, NfsNullCall(0x1001)});
  // 2. A long call: the whole RPC call is in a read chunk at position zero
  //    (RFC 8166 §3.5.3).
  s.push_back(
      {"RDMA_NOMSG: a long call in a position-zero read chunk",
       Direction::kToResponder,
       V1Header{0x1002, 1, 32,
                V1NoMsg{ChunkLists{
                    {ReadSegment{0, Segment{0x2001, 8192, 0x7f0000001000}}},
                    {},
                    std::nullopt}}},
       {}});
  // 3. A reply that used a write chunk for its bulk data and a reply chunk
  //    for the rest (RFC 8166 §3.5.4, §3.5.5).
  s.push_back({"RDMA_NOMSG: a reply in a write chunk and a reply chunk",
               Direction::kToRequester,
               V1Header{0x1003, 1, 32,
                        V1NoMsg{ChunkLists{
                            {},
                            {WriteChunk{Segment{0x3001, 65536, 0x7f0000100000},
                                        Segment{0x3002, 4096, 0x7f0000110000}}},
                            WriteChunk{Segment{0x3003, 512, 0x7f0000200000}}}}},
               {}});
  // 4. The responder speaks only version one (RFC 8166 §5.3.2).
  s.push_back({"RDMA_ERROR: ERR_VERS",
               Direction::kToRequester,
               V1Header{0x1004, 1, 32, V1Error{V1ErrorCode::kVers, 1, 1}},
               {}});
  // 5. Version two: announce the receive buffer size and backward-direction
  //    support (draft-cel-nfsv4-rpcrdma-version-two-04 §5.2, §6.2.5).
  s.push_back(
      {"RDMA2_CONNPROP: RBSIZ 8192, BRS GENL",
       Direction::kToResponder,
       V2Header{0x2001, 2, 32,
                V2ConnProp{{MakeRbsizProperty(8192),
                            MakeBrsProperty(BackwardRequestSupport::kGeneral)},
                           {}}},
       {}});
  return s;
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    out += buf;
    if (i % 4 == 3 && i + 1 < bytes.size()) out += ' ';
  }
  return out;
}

std::vector<uint8_t> Encode(const V1Header& h) { return EncodeV1(h); }
std::vector<uint8_t> Encode(const V2Header& h) { return EncodeV2(h); }

// Decodes `bytes` and reports whether it gives back `header`.
bool RoundTrips(const std::variant<V1Header, V2Header>& header,
                const std::vector<uint8_t>& bytes) {
  if (const auto* v1 = std::get_if<V1Header>(&header)) {
    auto d = DecodeV1(bytes);
    return d.ok() && d->header == *v1;
  }
  auto d = DecodeV2(bytes);
  return d.ok() && d->header == std::get<V2Header>(header);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "rpcrdma-demo.pcap";
  auto writer = rpcrdma::pcap::PcapWriter::Open(path);
  if (!writer.ok()) {
    std::fprintf(stderr, "wire_demo: %s\n",
                 std::string(writer.status().message()).c_str());
    return 1;
  }
  bool all_ok = true;
  uint64_t n = 0;
  for (const Sample& s : Samples()) {
    std::vector<uint8_t> bytes =
        std::visit([](const auto& h) { return Encode(h); }, s.header);
    const bool ok = RoundTrips(s.header, bytes);
    all_ok = all_ok && ok;
    bytes.insert(bytes.end(), s.rpc.begin(), s.rpc.end());

    std::printf("%llu. %s\n   octets: %s\n",
                static_cast<unsigned long long>(++n), s.title,
                Hex(bytes).c_str());
    auto json = rpcrdma::dump::FormatMessage(bytes, {n, std::nullopt});
    std::printf("   json:   %s\n   decode: %s\n\n",
                json ? rpcrdma::dump::FormatLine(*json, false).c_str() : "-",
                ok ? "round trip OK" : "MISMATCH");
    if (auto st = (*writer)->Send(s.direction, bytes); !st.ok()) {
      std::fprintf(stderr, "wire_demo: %s\n",
                   std::string(st.message()).c_str());
      return 1;
    }
  }
  if (auto st = (*writer)->Close(); !st.ok()) {
    std::fprintf(stderr, "wire_demo: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf(
      "Wrote %llu messages as RoCEv2 frames to %s.\n"
      "Open it in Wireshark, or print it as JSON lines with rpcrdma-dump\n"
      "(built as tools/dump/rpcrdma-dump in the build directory):\n"
      "  rpcrdma-dump %s\n",
      static_cast<unsigned long long>(n), path.c_str(), path.c_str());
  return all_ok ? 0 : 1;
}
