// Captures written with PcapWriter and read back with PcapReader, plus
// captures the writer cannot make (pcapng, cut-short files, unsupported link
// types, snap-length-truncated frames) built directly.
#include <pcap/pcap.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/capture/pcap_writer.h"
#include "tools/pcap/pcap_reader.h"

namespace rpcrdma::pcap {
namespace {

std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "rpcrdma_" + info->test_suite_name() + "_" +
         info->name() + suffix;
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 13);
  return v;
}

std::vector<SendRecord> ReadAll(const std::string& path,
                                const PcapReaderOptions& options = {}) {
  auto records = ReadSendMessages(path, options);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<SendRecord>{};
}

const SendMessage& Msg(const SendRecord& r) { return std::get<SendMessage>(r); }

// The opcode and PSN of every frame in a capture, read with libpcap.
struct FrameFacts {
  uint8_t opcode;
  uint32_t psn;
};
std::vector<FrameFacts> Frames(const std::string& path) {
  std::vector<FrameFacts> out;
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  EXPECT_NE(p, nullptr) << err;
  if (p == nullptr) return out;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) {
    FrameParse f = ParseRoceFrame(pcap_datalink(p), {d, h->caplen}, h->len);
    EXPECT_EQ(f.kind, FrameKind::kRoce);
    EXPECT_TRUE(f.packet.icrc_valid);
    out.push_back({f.packet.opcode, f.packet.psn});
  }
  pcap_close(p);
  return out;
}

TEST(PcapRoundTrip, BothDirectionsWithIncreasingPsns) {
  const std::string path = TempPath(".pcap");
  PcapWriterOptions o;
  o.requester.initial_psn = 1000;
  o.responder.initial_psn = 0xFFFFFF;
  auto w = PcapWriter::Open(path, o);
  ASSERT_TRUE(w.ok()) << w.status();
  const auto call = Pattern(100, 1), reply = Pattern(60, 2),
             call2 = Pattern(36, 3);
  ASSERT_TRUE((*w)->Send(Direction::kToResponder, call).ok());
  ASSERT_TRUE((*w)->Send(Direction::kToRequester, reply).ok());
  ASSERT_TRUE((*w)->Send(Direction::kToResponder, call2).ok());
  EXPECT_EQ((*w)->next_psn(0, Direction::kToResponder), 1002u);
  EXPECT_EQ((*w)->next_psn(0, Direction::kToRequester), 0u);
  EXPECT_EQ((*w)->frames_written(), 3u);
  ASSERT_TRUE((*w)->Close().ok());

  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(Msg(recs[0]).frame, 1u);
  EXPECT_EQ(Msg(recs[0]).payload, call);
  EXPECT_EQ(Msg(recs[0]).src.ToString(), "192.0.2.1");
  EXPECT_EQ(Msg(recs[0]).dst.ToString(), "192.0.2.2");
  EXPECT_EQ(Msg(recs[0]).dest_qp, 0x12u);
  EXPECT_EQ(Msg(recs[0]).first_psn, 1000u);
  EXPECT_EQ(Msg(recs[1]).frame, 2u);
  EXPECT_EQ(Msg(recs[1]).payload, reply);
  EXPECT_EQ(Msg(recs[1]).src.ToString(), "192.0.2.2");
  EXPECT_EQ(Msg(recs[1]).dest_qp, 0x11u);
  EXPECT_EQ(Msg(recs[1]).first_psn, 0xFFFFFFu);
  EXPECT_EQ(Msg(recs[2]).payload, call2);
  EXPECT_EQ(Msg(recs[2]).first_psn, 1001u);
  for (const auto& f : Frames(path)) EXPECT_EQ(f.opcode, 0x04);
  std::remove(path.c_str());
}

TEST(PcapRoundTrip, Iba_9_7_7_SplitAtPathMtu) {
  for (uint32_t pmtu : {256u, 1024u, 4096u}) {
    SCOPED_TRACE(pmtu);
    const std::string path = TempPath(".pcap");
    PcapWriterOptions o;
    o.pmtu = pmtu;
    auto w = PcapWriter::Open(path, o);
    ASSERT_TRUE(w.ok());
    const auto big = Pattern(3 * pmtu + 5, 9);  // FIRST, 2 MIDDLE, LAST
    const auto exact = Pattern(2 * pmtu, 4);    // FIRST, LAST
    const auto fits = Pattern(pmtu, 7);         // ONLY
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, big).ok());
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, exact).ok());
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, fits).ok());
    ASSERT_TRUE((*w)->Close().ok());

    auto frames = Frames(path);
    ASSERT_EQ(frames.size(), 7u);
    const uint8_t ops[] = {0x00, 0x01, 0x01, 0x02, 0x00, 0x02, 0x04};
    for (size_t i = 0; i < 7; ++i) {
      EXPECT_EQ(frames[i].opcode, ops[i]) << i;
      EXPECT_EQ(frames[i].psn, i) << i;
    }
    auto recs = ReadAll(path);
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(Msg(recs[0]).payload, big);
    EXPECT_EQ(Msg(recs[0]).frame, 4u);
    EXPECT_EQ(Msg(recs[0]).packets, 4u);
    EXPECT_EQ(Msg(recs[1]).payload, exact);
    EXPECT_EQ(Msg(recs[1]).frame, 6u);
    EXPECT_EQ(Msg(recs[2]).payload, fits);
    EXPECT_EQ(Msg(recs[2]).frame, 7u);
    std::remove(path.c_str());
  }
}

TEST(PcapRoundTrip, SendWithInvalidateAndWithImmediate) {
  const std::string path = TempPath(".pcap");
  PcapWriterOptions o;
  o.pmtu = 256;
  auto w = PcapWriter::Open(path, o);
  ASSERT_TRUE(w.ok());
  SendOptions inv;
  inv.invalidate_rkey = 0xabcdef01;
  SendOptions imm;
  imm.immediate = 0x01020304;
  const auto small = Pattern(21, 1), large = Pattern(600, 2);
  ASSERT_TRUE((*w)->Send(Direction::kToRequester, small, inv).ok());
  ASSERT_TRUE((*w)->Send(Direction::kToRequester, large, inv).ok());
  ASSERT_TRUE((*w)->Send(Direction::kToRequester, small, imm).ok());
  SendOptions both = inv;
  both.immediate = 1;
  EXPECT_FALSE((*w)->Send(Direction::kToRequester, small, both).ok());
  ASSERT_TRUE((*w)->Close().ok());

  auto frames = Frames(path);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0].opcode, 0x17);  // SEND_ONLY_WITH_INVALIDATE
  EXPECT_EQ(frames[1].opcode, 0x00);
  EXPECT_EQ(frames[2].opcode, 0x01);
  EXPECT_EQ(frames[3].opcode, 0x16);  // SEND_LAST_WITH_INVALIDATE
  EXPECT_EQ(frames[4].opcode, 0x05);  // SEND_ONLY_WITH_IMMEDIATE
  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(Msg(recs[0]).invalidate_rkey, 0xabcdef01u);
  EXPECT_EQ(Msg(recs[0]).payload, small);  // pad and IETH stripped
  EXPECT_EQ(Msg(recs[1]).invalidate_rkey, 0xabcdef01u);
  EXPECT_EQ(Msg(recs[1]).payload, large);
  EXPECT_EQ(Msg(recs[1]).frame, 4u);
  EXPECT_FALSE(Msg(recs[2]).invalidate_rkey.has_value());
  EXPECT_EQ(Msg(recs[2]).immediate, 0x01020304u);
  std::remove(path.c_str());
}

TEST(PcapRoundTrip, EveryLinkTypeVlanAndIpv6) {
  struct Variant {
    LinkType link;
    std::optional<uint16_t> vlan;
    bool v6;
    int dlt;
  };
  const Variant variants[] = {
      {LinkType::kEthernet, std::nullopt, false, DLT_EN10MB},
      {LinkType::kEthernet, 42, false, DLT_EN10MB},
      {LinkType::kEthernet, 42, true, DLT_EN10MB},
      {LinkType::kEthernet, std::nullopt, true, DLT_EN10MB},
      {LinkType::kLinuxSll, std::nullopt, false, DLT_LINUX_SLL},
      {LinkType::kLinuxSll, std::nullopt, true, DLT_LINUX_SLL},
      {LinkType::kLinuxSll2, std::nullopt, false, DLT_LINUX_SLL2},
      {LinkType::kLinuxSll2, std::nullopt, true, DLT_LINUX_SLL2},
      {LinkType::kRaw, std::nullopt, false, DLT_RAW},
      {LinkType::kRaw, std::nullopt, true, DLT_RAW},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(::testing::Message()
                 << v.dlt << " vlan " << v.vlan.has_value() << " v6 " << v.v6);
    const std::string path = TempPath(".pcap");
    PcapWriterOptions o;
    o.link = v.link;
    o.vlan_id = v.vlan;
    o.pmtu = 512;
    if (v.v6) {
      o.requester.ip = *IpAddress::Parse("fd00::a");
      o.responder.ip = *IpAddress::Parse("fd00::b");
    }
    auto w = PcapWriter::Open(path, o);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ((*w)->dlt(), v.dlt);
    const auto a = Pattern(1500, 5), b = Pattern(3, 6);
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, a).ok());
    ASSERT_TRUE((*w)->Send(Direction::kToRequester, b).ok());
    ASSERT_TRUE((*w)->Close().ok());
    auto reader = PcapReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->dlt(), v.dlt);
    auto recs = ReadAll(path);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(Msg(recs[0]).payload, a);
    EXPECT_EQ(Msg(recs[0]).frame, 3u);
    EXPECT_EQ(Msg(recs[0]).dst.ToString(), v.v6 ? "fd00::b" : "192.0.2.2");
    EXPECT_EQ(Msg(recs[1]).payload, b);
    EXPECT_EQ(Msg(recs[1]).src.ToString(), v.v6 ? "fd00::b" : "192.0.2.2");
    std::remove(path.c_str());
  }
}

TEST(PcapRoundTrip, EmptySendAndSeveralConnections) {
  const std::string path = TempPath(".pcap");
  auto w = PcapWriter::Open(path);
  ASSERT_TRUE(w.ok());
  Endpoint r2 = DefaultRequester(), s2 = DefaultResponder();
  r2.qpn = 0x100;
  s2.qpn = 0x200;
  s2.initial_psn = 500;
  const size_t c2 = (*w)->AddConnection(r2, s2);
  EXPECT_EQ(c2, 1u);
  ASSERT_TRUE((*w)->Send(Direction::kToResponder, {}).ok());
  ASSERT_TRUE((*w)->Send(c2, Direction::kToRequester, Pattern(8, 0)).ok());
  EXPECT_FALSE((*w)->Send(7, Direction::kToRequester, Pattern(8, 0)).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_FALSE((*w)->Send(Direction::kToResponder, {}).ok());
  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_TRUE(Msg(recs[0]).payload.empty());
  EXPECT_EQ(Msg(recs[1]).dest_qp, 0x100u);
  EXPECT_EQ(Msg(recs[1]).first_psn, 500u);
  std::remove(path.c_str());
}

TEST(PcapRoundTrip, OtherTrafficDuplicatesAndGapsInTheCapture) {
  const std::string path = TempPath(".pcap");
  auto w = PcapWriter::Open(path);
  ASSERT_TRUE(w.ok());
  // Frame 1: an ARP request (not RoCE).
  std::vector<uint8_t> arp(42, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  ASSERT_TRUE((*w)->WriteFrame(arp).ok());
  // Frame 2: a SEND_ONLY; frame 3: the same packet retransmitted.
  RoceV2FrameSpec s;
  s.src_ip = *IpAddress::Parse("192.0.2.1");
  s.dst_ip = *IpAddress::Parse("192.0.2.2");
  s.dest_qp = 0x12;
  s.psn = 40;
  s.payload = Pattern(16, 1);
  const auto once = *BuildRoceV2Frame(s);
  ASSERT_TRUE((*w)->WriteFrame(once).ok());
  ASSERT_TRUE((*w)->WriteFrame(once).ok());
  // Frame 4: SEND_FIRST PSN 41; frame 5: SEND_LAST PSN 43 (42 is lost).
  s.opcode = 0x00;
  s.psn = 41;
  ASSERT_TRUE((*w)->WriteFrame(*BuildRoceV2Frame(s)).ok());
  s.opcode = 0x02;
  s.psn = 43;
  ASSERT_TRUE((*w)->WriteFrame(*BuildRoceV2Frame(s)).ok());
  // Frame 6: an RDMA WRITE ONLY (ignored); frame 7: SEND_MIDDLE alone.
  s.opcode = 0x0A;
  s.psn = 44;
  s.extension_headers.assign(16, 0);
  ASSERT_TRUE((*w)->WriteFrame(*BuildRoceV2Frame(s)).ok());
  s.extension_headers.clear();
  s.opcode = 0x01;
  s.psn = 45;
  ASSERT_TRUE((*w)->WriteFrame(*BuildRoceV2Frame(s)).ok());
  // Frame 8: SEND_FIRST that the capture never finishes.
  s.opcode = 0x00;
  s.psn = 46;
  ASSERT_TRUE((*w)->WriteFrame(*BuildRoceV2Frame(s)).ok());
  ASSERT_TRUE((*w)->Close().ok());

  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(Msg(recs[0]).frame, 2u);
  EXPECT_EQ(Msg(recs[0]).payload, Pattern(16, 1));
  EXPECT_EQ(std::get<SendError>(recs[1]).frame, 5u);
  EXPECT_EQ(std::get<SendError>(recs[2]).frame, 7u);
  EXPECT_EQ(std::get<SendError>(recs[3]).frame, 8u);
  std::remove(path.c_str());
}

// pcapng (draft-ietf-opsawg-pcapng): section header, one Ethernet interface,
// then enhanced packet blocks.
std::vector<uint8_t> Pcapng(const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<uint8_t> f;
  auto u32 = [&f](uint32_t v) {
    for (int i = 0; i < 4; ++i) f.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto u16 = [&f](uint16_t v) {
    f.push_back(static_cast<uint8_t>(v));
    f.push_back(static_cast<uint8_t>(v >> 8));
  };
  u32(0x0A0D0D0A);  // SHB
  u32(28);
  u32(0x1A2B3C4D);
  u16(1);
  u16(0);
  u32(0xFFFFFFFF);  // section length unknown
  u32(0xFFFFFFFF);
  u32(28);
  u32(1);  // IDB
  u32(20);
  u16(1);  // LINKTYPE_ETHERNET
  u16(0);
  u32(0);  // snaplen: no limit
  u32(20);
  for (const auto& frame : frames) {
    const uint32_t padded = (frame.size() + 3) & ~3u;
    u32(6);  // EPB
    u32(32 + padded);
    u32(0);  // interface 0
    u32(0);
    u32(0);
    u32(static_cast<uint32_t>(frame.size()));
    u32(static_cast<uint32_t>(frame.size()));
    f.insert(f.end(), frame.begin(), frame.end());
    f.insert(f.end(), padded - frame.size(), 0);
    u32(32 + padded);
  }
  return f;
}

TEST(PcapReader, ReadsPcapng) {
  RoceV2FrameSpec s;
  s.src_ip = *IpAddress::Parse("198.51.100.1");
  s.dst_ip = *IpAddress::Parse("198.51.100.2");
  s.dest_qp = 0x99;
  s.opcode = 0x17;
  s.extension_headers = {0, 0, 0x12, 0x34};
  s.payload = Pattern(50, 3);
  const std::string path = TempPath(".pcapng");
  const auto bytes =
      Pcapng({std::vector<uint8_t>(60, 0), *BuildRoceV2Frame(s)});
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(Msg(recs[0]).frame, 2u);
  EXPECT_EQ(Msg(recs[0]).invalidate_rkey, 0x1234u);
  EXPECT_EQ(Msg(recs[0]).dst.ToString(), "198.51.100.2");
  EXPECT_EQ(Msg(recs[0]).payload, Pattern(50, 3));
  std::remove(path.c_str());
}

TEST(PcapReader, FrameCutShortBySnapLengthIsAnErrorRecord) {
  RoceV2FrameSpec s;
  s.src_ip = *IpAddress::Parse("192.0.2.1");
  s.dst_ip = *IpAddress::Parse("192.0.2.2");
  s.payload = Pattern(200, 0);
  const auto frame = *BuildRoceV2Frame(s);
  const std::string path = TempPath(".pcap");
  pcap_t* p = pcap_open_dead(DLT_EN10MB, 96);
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  ASSERT_NE(d, nullptr);
  pcap_pkthdr h{};
  h.caplen = 96;
  h.len = static_cast<bpf_u_int32>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(d), &h, frame.data());
  pcap_dump_close(d);
  pcap_close(p);
  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 1u);
  const auto& e = std::get<SendError>(recs[0]);
  EXPECT_EQ(e.frame, 1u);
  EXPECT_NE(e.message.find("cut short"), std::string::npos) << e.message;
  std::remove(path.c_str());
}

TEST(PcapReader, CutShortFileIsAReadError) {
  const std::string path = TempPath(".pcap");
  {
    auto w = PcapWriter::Open(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, Pattern(40, 1)).ok());
    ASSERT_TRUE((*w)->Send(Direction::kToResponder, Pattern(400, 1)).ok());
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() - 100);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  auto reader = PcapReader::Open(path);
  ASSERT_TRUE(reader.ok());
  auto first = (*reader)->Next();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ(Msg(**first).payload, Pattern(40, 1));
  auto second = (*reader)->Next();
  EXPECT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsDataLoss(second.status())) << second.status();
  std::remove(path.c_str());
}

TEST(PcapReader, UnreadableAndUnsupportedInputs) {
  EXPECT_FALSE(PcapReader::Open(TempPath(".does-not-exist")).ok());
  const std::string text = TempPath(".txt");
  std::ofstream(text) << "this is not a capture file\n";
  EXPECT_FALSE(PcapReader::Open(text).ok());
  std::remove(text.c_str());

  const std::string ppp = TempPath(".pcap");
  pcap_t* p = pcap_open_dead(DLT_PPP, 65535);
  pcap_dumper_t* d = pcap_dump_open(p, ppp.c_str());
  ASSERT_NE(d, nullptr);
  pcap_dump_close(d);
  pcap_close(p);
  auto r = PcapReader::Open(ppp);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("not supported"),
            std::string::npos);
  std::remove(ppp.c_str());
}

TEST(PcapWriter, RejectsBadOptions) {
  PcapWriterOptions o;
  o.pmtu = 1500;
  EXPECT_FALSE(PcapWriter::Open(TempPath(".pcap"), o).ok());
  o = PcapWriterOptions{};
  o.responder.ip = *IpAddress::Parse("::1");
  EXPECT_FALSE(PcapWriter::Open(TempPath(".pcap"), o).ok());
  EXPECT_FALSE(PcapWriter::Open(TempPath("/no/such/dir/x.pcap")).ok());
}

// The writer makes classic pcap files itself (pcap-savefile(5)), without
// libpcap: the file header and one record, octet for octet, little-endian
// whatever the host, raw IP recorded as LINKTYPE_RAW (101).
TEST(PcapWriter, WritesPcapSavefileFormat) {
  const std::string path = TempPath(".pcap");
  PcapWriterOptions o;
  o.link = LinkType::kRaw;
  o.start_time_us = int64_t{1700000000} * 1000000 + 250;
  {
    auto w = PcapWriter::Open(path, o);
    ASSERT_TRUE(w.ok()) << w.status();
    const std::vector<uint8_t> frame = {0x45, 0x01, 0x02};
    ASSERT_TRUE((*w)->WriteFrame(frame).ok());
    ASSERT_TRUE((*w)->Close().ok());
    EXPECT_FALSE((*w)->WriteFrame(frame).ok());
  }
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const std::vector<uint8_t> expected = {
      0xD4, 0xC3, 0xB2, 0xA1, 0x02, 0x00, 0x04, 0x00,  // magic, version 2.4
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // thiszone, sigfigs
      0xFF, 0xFF, 0x00, 0x00, 0x65, 0x00, 0x00, 0x00,  // snaplen, LINKTYPE_RAW
      0x00, 0xF1, 0x53, 0x65, 0xFA, 0x00, 0x00, 0x00,  // 1700000000 s, 250 us
      0x03, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,  // incl_len, orig_len
      0x45, 0x01, 0x02};
  EXPECT_EQ(bytes, expected);
}

}  // namespace
}  // namespace rpcrdma::pcap
