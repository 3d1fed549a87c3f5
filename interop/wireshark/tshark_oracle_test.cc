// Oracle test: Wireshark's RPC-over-RDMA and InfiniBand dissectors (an
// independent implementation) must read our RPC-over-RDMA version one
// headers (RFC 8166 §4) and our RoCEv2 frames exactly as we encoded them,
// and rpcrdma-dump must agree with tshark on every field.
//
// tshark's rpcordma heuristic takes an InfiniBand SEND payload only when
// rdma_vers is 1, rdma_proc is 0..4, the chunk lists parse and, for
// RDMA_MSG / RDMA_MSGP, the RPC XID after the header equals rdma_xid; so
// every inline RPC message here carries the header's XID.
#include <pcap/pcap.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "plugin/capture/pcap_writer.h"
#include "plugin/capture/roce.h"
#include "plugin/wire/v1.h"
#include "rpcrdma/xdr.h"
#include "tests/testing/run_command.h"

namespace {

using rpcrdma::pcap::Direction;
using namespace rpcrdma::wire;  // NOLINT
using rpcrdma::LoadBigEndian32;
using rpcrdma::StoreBigEndian32;

constexpr uint32_t kNfsProgram = 100003;
constexpr uint32_t kPmtu = 1024;
// PSNs start just below the 24-bit wrap so the corpus crosses it.
constexpr uint32_t kRequesterFirstPsn = 0xFFFFFD;
constexpr uint32_t kResponderFirstPsn = 100;

// ONC RPC call (RFC 5531 §9): xid, CALL, rpcvers 2, NFSv3 NULL, AUTH_NONE
// credential and verifier, then `args` octets standing in for arguments.
// (tshark decodes RPC only for programs it knows, and NULL is the one
// procedure whose arguments it does not parse.)
std::vector<uint8_t> RpcCall(uint32_t xid, size_t args) {
  std::vector<uint8_t> m(40 + args);
  const uint32_t words[] = {xid, 0, 2, kNfsProgram, 3, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) StoreBigEndian32(&m[4 * i], words[i]);
  for (size_t i = 0; i < args; ++i) m[40 + i] = static_cast<uint8_t>(i * 7);
  return m;
}

// Accepted, successful reply (RFC 5531 §9): xid, REPLY, MSG_ACCEPTED,
// AUTH_NONE verifier, SUCCESS, then `results` octets.
std::vector<uint8_t> RpcReply(uint32_t xid, size_t results) {
  std::vector<uint8_t> m(24 + results);
  const uint32_t words[] = {xid, 1, 0, 0, 0, 0};
  for (size_t i = 0; i < 6; ++i) StoreBigEndian32(&m[4 * i], words[i]);
  for (size_t i = 0; i < results; ++i) m[24 + i] = static_cast<uint8_t>(i);
  return m;
}

Segment Seg(uint32_t handle, uint32_t length, uint64_t offset) {
  return Segment{handle, length, offset};
}

struct Case {
  std::string name;
  Direction direction;
  V1Header header;
  std::vector<uint8_t> rpc;  // the RPC message after an MSG/MSGP header
  std::optional<uint32_t> invalidate;
  bool rpc_is_call = false;
};

V1Header Header(uint32_t xid, V1Body body, uint32_t credits = 32) {
  return V1Header{xid, kRpcRdmaVersion1, credits, std::move(body)};
}

// Every proc of RFC 8166 §4.2.4 (and the RFC 5666 RDMA_MSGP / RDMA_DONE),
// both ERR_VERS and ERR_CHUNK, and every list shape.
std::vector<Case> Corpus() {
  const Direction kCall = Direction::kToResponder;
  const Direction kReply = Direction::kToRequester;
  std::vector<Case> c;
  c.push_back({"RDMA_MSG call, empty lists",
               kCall,
               Header(0x101, V1Msg{}),
               RpcCall(0x101, 0),
               {},
               true});
  c.push_back({"RDMA_MSG reply, empty lists",
               kReply,
               Header(0x101, V1Msg{}),
               RpcReply(0x101, 0),
               {},
               false});
  c.push_back({"RDMA_MSG call, read segments sharing a position",
               kCall,
               Header(0x102, V1Msg{ChunkLists{
                                 {ReadSegment{144, Seg(0x1111, 4096, 0x10000)},
                                  ReadSegment{144, Seg(0x1112, 4096, 0x20000)},
                                  ReadSegment{144, Seg(0x1113, 1000, 0x30000)},
                                  ReadSegment{300, Seg(0x1114, 8, 0x40000)}},
                                 {},
                                 std::nullopt}}),
               RpcCall(0x102, 104),
               {},
               true});
  c.push_back(
      {"RDMA_MSG call, multi-chunk write list and reply chunk",
       kCall,
       Header(0x103,
              V1Msg{ChunkLists{{},
                               {WriteChunk{Seg(0x2001, 8192, 0x7f0000000000),
                                           Seg(0x2002, 8192, 0x7f0000002000),
                                           Seg(0x2003, 100, 0x7f0000004000)},
                                WriteChunk{Seg(0x2004, 65536, 0x7f0000100000)}},
                               WriteChunk{Seg(0x2005, 1024, 0x7f0000200000),
                                          Seg(0x2006, 1024, 0x7f0000300000)}}}),
       RpcCall(0x103, 32),
       {},
       true});
  c.push_back(
      {"RDMA_MSG reply, one write chunk",
       kReply,
       Header(0x103,
              V1Msg{ChunkLists{{},
                               {WriteChunk{Seg(0x2001, 8192, 0x7f0000000000),
                                           Seg(0x2002, 2000, 0x7f0000002000)}},
                               std::nullopt}}),
       RpcReply(0x103, 88),
       {},
       false});
  c.push_back({"RDMA_MSG reply, SEND_ONLY_WITH_INVALIDATE", kReply,
               Header(0x102, V1Msg{}), RpcReply(0x102, 8), 0x1111, false});
  c.push_back({"RDMA_NOMSG long call, position-zero read chunk",
               kCall,
               Header(0x104, V1NoMsg{ChunkLists{
                                 {ReadSegment{0, Seg(0x3001, 4096, 0x1000)},
                                  ReadSegment{0, Seg(0x3002, 2048, 0x2000)}},
                                 {},
                                 std::nullopt}}),
               {},
               {},
               false});
  c.push_back({"RDMA_NOMSG long call, read chunk and reply chunk",
               kCall,
               Header(0x105, V1NoMsg{ChunkLists{
                                 {ReadSegment{0, Seg(0x3003, 9000, 0x5000)}},
                                 {},
                                 WriteChunk{Seg(0x3004, 4096, 0x9000)}}}),
               {},
               {},
               false});
  c.push_back(
      {"RDMA_NOMSG reply, reply chunk alone",
       kReply,
       Header(0x105, V1NoMsg{ChunkLists{{},
                                        {},
                                        WriteChunk{Seg(0x3004, 4096, 0x9000),
                                                   Seg(0x3005, 4096, 0xa000),
                                                   Seg(0x3006, 12, 0xb000)}}}),
       {},
       {},
       false});
  c.push_back(
      {"RDMA_NOMSG, all three lists",
       kCall,
       Header(0x106,
              V1NoMsg{ChunkLists{
                  {ReadSegment{0, Seg(0x4001, 300, 0x100)}},
                  {WriteChunk{Seg(0x4002, 1, 0x200)},
                   WriteChunk{Seg(0x4003, 2, 0x300), Seg(0x4004, 3, 0x400)}},
                  WriteChunk{Seg(0x4005, 4, 0x500)}}}),
       {},
       {},
       false});
  c.push_back(
      {"RDMA_NOMSG, empty write chunk and empty reply chunk",
       kCall,
       Header(0x107, V1NoMsg{ChunkLists{{}, {WriteChunk{}}, WriteChunk{}}}),
       {},
       {},
       false});
  c.push_back({"RDMA_MSGP call, empty lists",
               kCall,
               Header(0x108, V1Msgp{64, 1024, {}}),
               RpcCall(0x108, 0),
               {},
               true});
  c.push_back(
      {"RDMA_MSGP call, all lists",
       kCall,
       Header(0x109, V1Msgp{8, 4096,
                            ChunkLists{{ReadSegment{92, Seg(0x5001, 512, 0)}},
                                       {WriteChunk{Seg(0x5002, 256, 64)}},
                                       WriteChunk{Seg(0x5003, 128, 32)}}}),
       RpcCall(0x109, 52),
       {},
       true});
  c.push_back({"RDMA_DONE", kCall, Header(0x10a, V1Done{}), {}, {}, false});
  c.push_back({"RDMA_ERROR ERR_VERS",
               kReply,
               Header(0x10b, V1Error{V1ErrorCode::kVers, 1, 1}),
               {},
               {},
               false});
  c.push_back({"RDMA_ERROR ERR_VERS, range",
               kReply,
               Header(0x10c, V1Error{V1ErrorCode::kVers, 1, 2}, 0),
               {},
               {},
               false});
  c.push_back({"RDMA_ERROR ERR_CHUNK",
               kReply,
               Header(0x10d, V1Error{V1ErrorCode::kChunk, 0, 0}),
               {},
               {},
               false});
  c.push_back({"RDMA_MSG call, SEND_FIRST/MIDDLE/LAST",
               kCall,
               Header(0x10e, V1Msg{}),
               RpcCall(0x10e, 3000),
               {},
               true});
  c.push_back({"RDMA_MSG reply, SEND_FIRST/MIDDLE/LAST_WITH_INVALIDATE", kReply,
               Header(0x10e, V1Msg{}), RpcReply(0x10e, 2500), 0xabcdef01,
               false});
  c.push_back({"RDMA_MSG call, extreme values",
               kCall,
               Header(0xffffffff,
                      V1Msg{ChunkLists{{},
                                       {WriteChunk{Seg(0xffffffff, 0xffffffff,
                                                       0xffffffffffffffff)}},
                                       WriteChunk{Seg(0, 0, 0)}}},
                      0xffffffff),
               RpcCall(0xffffffff, 0),
               {},
               true});
  return c;
}

// One frame the writer emitted, as the test expects tshark to see it.
struct ExpectedFrame {
  size_t case_index;
  bool last;  // the message's last packet
  uint8_t opcode;
  uint32_t psn;
  uint32_t dest_qp;
  std::optional<uint32_t> ieth;
  int pad;  // BTH PadCnt: octets that round the payload up to 4
};

using rpcrdma::test::CommandResult;
using rpcrdma::test::Quote;
using rpcrdma::test::RunCommand;

// tshark -T fields output: one row per frame, keyed by frame.number.
std::map<uint64_t, std::vector<std::string>> ParseRows(const std::string& out,
                                                       size_t columns) {
  std::map<uint64_t, std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    f.resize(columns);
    rows[std::stoull(f[0])] = f;
  }
  return rows;
}

std::string Hex32(uint32_t v) { return absl::StrFormat("0x%08x", v); }
std::string Hex64(uint64_t v) { return absl::StrFormat("0x%016x", v); }

uint64_t Number(const std::string& s) {
  return s.rfind("0x", 0) == 0 ? std::stoull(s.substr(2), nullptr, 16)
                               : std::stoull(s);
}

std::vector<uint64_t> Numbers(const std::string& s) {
  std::vector<uint64_t> v;
  if (s.empty()) return v;
  for (absl::string_view p : absl::StrSplit(s, ',')) {
    v.push_back(Number(std::string(p)));
  }
  return v;
}

// Column indexes of the rpcordma field list (the brief's tshark command).
enum Col {
  kFrame,
  kXid,
  kVersion,
  kFlowControl,
  kMsgType,
  kReadsCount,
  kPosition,
  kHandle,
  kLength,
  kOffset,
  kWritesCount,
  kSegmentCount,
  kReplyCount,
  kAlign,
  kThresh,
  kErrcode,
  kVersLow,
  kVersHigh,
  kRpcXid,
  kRpcProgram,
  kColumns
};

const char* const kRpcordmaFields[] = {"frame.number",
                                       "rpcordma.xid",
                                       "rpcordma.version",
                                       "rpcordma.flow_control",
                                       "rpcordma.msg_type",
                                       "rpcordma.reads_count",
                                       "rpcordma.position",
                                       "rpcordma.rdma_handle",
                                       "rpcordma.rdma_length",
                                       "rpcordma.rdma_offset",
                                       "rpcordma.writes_count",
                                       "rpcordma.segment_count",
                                       "rpcordma.reply_count",
                                       "rpcordma.rdma_align",
                                       "rpcordma.rdma_thresh",
                                       "rpcordma.errcode",
                                       "rpcordma.vers_low",
                                       "rpcordma.vers_high",
                                       "rpc.xid",
                                       "rpc.program"};

// tshark 4.0 does not dissect the RPC message after an RDMA_MSG header that
// has a read list: it waits for the RDMA READs that would bring the chunk
// data, which a capture of SENDs alone never shows.
bool DefersRpc(const V1Header& h) {
  return h.proc() == V1Proc::kMsg && !h.chunks()->reads.empty();
}

// The row tshark should print for the last frame of `c`.
std::vector<std::string> ExpectedRow(uint64_t frame, const Case& c) {
  std::vector<std::string> r(kColumns);
  const V1Header& h = c.header;
  r[kFrame] = std::to_string(frame);
  r[kXid] = Hex32(h.xid);
  r[kVersion] = std::to_string(h.vers);
  r[kFlowControl] = std::to_string(h.credits);
  r[kMsgType] = std::to_string(static_cast<uint32_t>(h.proc()));
  if (const ChunkLists* l = h.chunks()) {
    std::vector<std::string> pos, handle, length, offset, segcount;
    auto add = [&](const Segment& s) {
      handle.push_back(Hex32(s.handle));
      length.push_back(std::to_string(s.length));
      offset.push_back(Hex64(s.offset));
    };
    for (const ReadSegment& rs : l->reads) {
      pos.push_back(std::to_string(rs.position));
      add(rs.target);
    }
    for (const WriteChunk& w : l->writes) {
      segcount.push_back(std::to_string(w.size()));
      for (const Segment& s : w) add(s);
    }
    if (l->reply) {
      segcount.push_back(std::to_string(l->reply->size()));
      for (const Segment& s : *l->reply) add(s);
    }
    r[kReadsCount] = std::to_string(l->reads.size());
    r[kPosition] = absl::StrJoin(pos, ",");
    r[kHandle] = absl::StrJoin(handle, ",");
    r[kLength] = absl::StrJoin(length, ",");
    r[kOffset] = absl::StrJoin(offset, ",");
    r[kWritesCount] = std::to_string(l->writes.size());
    r[kSegmentCount] = absl::StrJoin(segcount, ",");
    r[kReplyCount] = l->reply ? "1" : "0";
  }
  if (const auto* p = std::get_if<V1Msgp>(&h.body)) {
    r[kAlign] = std::to_string(p->align);
    r[kThresh] = std::to_string(p->thresh);
  }
  if (const auto* e = std::get_if<V1Error>(&h.body)) {
    r[kErrcode] = std::to_string(static_cast<uint32_t>(e->code));
    if (e->code == V1ErrorCode::kVers) {
      r[kVersLow] = std::to_string(e->vers_low);
      r[kVersHigh] = std::to_string(e->vers_high);
    }
  }
  if (!c.rpc.empty() && !DefersRpc(h)) {
    r[kRpcXid] = Hex32(LoadBigEndian32(c.rpc.data()));
    // tshark 4.0 shows the program of a call, and 0 for these replies:
    // its call/reply matching keys on ports, which RoCE frames lack.
    r[kRpcProgram] = c.rpc_is_call ? std::to_string(kNfsProgram) : "0";
  }
  return r;
}

class TsharkOracle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new std::vector<Case>(Corpus());
    frames_ = new std::vector<ExpectedFrame>();
    last_frame_ = new std::vector<uint64_t>();
    char tmpl[] = "rpcrdma-oracle-XXXXXX";
    std::string dir = ::testing::TempDir() + tmpl;
    if (mkdtemp(dir.data()) == nullptr) return;
    pcap_path_ = new std::string(dir + "/corpus.pcap");

    rpcrdma::pcap::PcapWriterOptions options;
    options.pmtu = kPmtu;
    options.requester.initial_psn = kRequesterFirstPsn;
    options.responder.initial_psn = kResponderFirstPsn;
    auto writer = rpcrdma::pcap::PcapWriter::Open(*pcap_path_, options);
    if (!writer.ok()) return;
    uint32_t psn[2] = {kRequesterFirstPsn, kResponderFirstPsn};
    for (size_t i = 0; i < corpus_->size(); ++i) {
      const Case& c = (*corpus_)[i];
      std::vector<uint8_t> m = EncodeV1(c.header);
      m.insert(m.end(), c.rpc.begin(), c.rpc.end());
      rpcrdma::pcap::SendOptions send;
      send.invalidate_rkey = c.invalidate;
      if (!(*writer)->Send(c.direction, m, send).ok()) return;
      // IBA Vol 1 §9.7.7: packets carry PMTU octets except the last.
      const size_t packets = (m.size() + kPmtu - 1) / kPmtu;
      const int side = c.direction == Direction::kToResponder ? 0 : 1;
      const uint32_t qp =
          side == 0 ? options.responder.qpn : options.requester.qpn;
      for (size_t k = 0; k < packets; ++k) {
        const bool first = k == 0, last = k + 1 == packets;
        uint8_t op = first && last ? (c.invalidate ? 0x17 : 0x04)
                     : first       ? 0x00
                     : !last       ? 0x01
                                   : (c.invalidate ? 0x16 : 0x02);
        const size_t octets = last ? m.size() - k * kPmtu : kPmtu;
        frames_->push_back(ExpectedFrame{
            i, last, op, psn[side], qp, last ? c.invalidate : std::nullopt,
            static_cast<int>((4 - octets % 4) % 4)});
        psn[side] = (psn[side] + 1) & 0xFFFFFF;
      }
      last_frame_->push_back(frames_->size());
    }
    written_ = (*writer)->Close().ok();
  }

  static void TearDownTestSuite() {
    // Keep the capture for inspection when something failed.
    if (pcap_path_ != nullptr &&
        !::testing::UnitTest::GetInstance()->current_test_suite()->Failed()) {
      std::remove(pcap_path_->c_str());
      std::remove((*pcap_path_ + ".tshark.err").c_str());
      std::remove(pcap_path_->substr(0, pcap_path_->rfind('/')).c_str());
    }
    delete corpus_;
    delete frames_;
    delete last_frame_;
    delete pcap_path_;
    pcap_path_ = nullptr;
  }

  void SetUp() override {
    ASSERT_STRNE(RPCRDMA_TSHARK, "")
        << "tshark was not found when the build was configured; install it "
           "(scripts/install-deps.sh) and reconfigure";
    ASSERT_NE(pcap_path_, nullptr) << "could not create a temporary directory";
    ASSERT_TRUE(written_) << "writing " << *pcap_path_ << " failed";
  }

  // Runs tshark on the corpus; stderr (tshark warns when run as root) goes
  // to a file so only stdout is parsed.
  static CommandResult Tshark(const std::string& args) {
    return RunCommand(absl::StrCat(Quote(RPCRDMA_TSHARK), " -n -r ",
                                   Quote(*pcap_path_), " ", args, " 2>",
                                   Quote(*pcap_path_ + ".tshark.err")));
  }

  static std::string RpcordmaArgs() {
    std::string a = "-T fields -E occurrence=a -E aggregator=,";
    for (const char* f : kRpcordmaFields) a += absl::StrCat(" -e ", f);
    return a;
  }

  static std::vector<Case>* corpus_;
  static std::vector<ExpectedFrame>* frames_;
  static std::vector<uint64_t>* last_frame_;  // per case, 1-based
  static std::string* pcap_path_;
  static bool written_;
};

std::vector<Case>* TsharkOracle::corpus_ = nullptr;
std::vector<ExpectedFrame>* TsharkOracle::frames_ = nullptr;
std::vector<uint64_t>* TsharkOracle::last_frame_ = nullptr;
std::string* TsharkOracle::pcap_path_ = nullptr;
bool TsharkOracle::written_ = false;

TEST_F(TsharkOracle, TsharkRuns) {
  CommandResult r =
      RunCommand(absl::StrCat(Quote(RPCRDMA_TSHARK), " -v 2>/dev/null"));
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_NE(r.out.find("TShark"), std::string::npos) << r.out;
}

// RFC 8166 §4: every header field of every message, as tshark decodes it.
TEST_F(TsharkOracle, Rfc8166_4_EveryHeaderFieldMatches) {
  CommandResult r = Tshark(RpcordmaArgs());
  ASSERT_EQ(r.exit_status, 0);
  auto rows = ParseRows(r.out, kColumns);
  ASSERT_EQ(rows.size(), frames_->size());
  for (size_t i = 0; i < corpus_->size(); ++i) {
    const Case& c = (*corpus_)[i];
    const uint64_t frame = (*last_frame_)[i];
    std::vector<std::string> want = ExpectedRow(frame, c);
    const std::vector<std::string>& got = rows[frame];
    for (int col = 0; col < kColumns; ++col) {
      EXPECT_EQ(got[col], want[col])
          << c.name << " (frame " << frame << "): " << kRpcordmaFields[col];
    }
  }
  // The non-last packets of a multi-packet SEND carry no RPC-over-RDMA
  // fields: tshark reassembles and decodes at the last packet.
  for (size_t f = 0; f < frames_->size(); ++f) {
    if ((*frames_)[f].last) continue;
    EXPECT_EQ(rows[f + 1][kXid], "") << "frame " << f + 1;
  }
}

TEST_F(TsharkOracle, NoMalformedPacketsOrExpertErrors) {
  CommandResult r =
      Tshark("-Y '_ws.malformed || _ws.expert.severity >= error'");
  ASSERT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, "");
}

// Annex A17 framing: IPv4 header checksum (tshark validates it when asked),
// UDP port, BTH fields and the ICRC where tshark expects it.
TEST_F(TsharkOracle, RoceV2FramingMatches) {
  CommandResult r = Tshark(
      "-o ip.check_checksum:TRUE -T fields -E occurrence=f "
      "-e frame.number -e ip.checksum.status -e udp.dstport "
      "-e infiniband.bth.opcode -e infiniband.bth.psn "
      "-e infiniband.bth.destqp -e infiniband.ieth "
      "-e infiniband.invariant.crc -e infiniband.bth.padcnt");
  ASSERT_EQ(r.exit_status, 0);
  auto rows = ParseRows(r.out, 9);
  ASSERT_EQ(rows.size(), frames_->size());

  // The frames as written, to find each one's ICRC octets.
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(pcap_path_->c_str(), err);
  ASSERT_NE(p, nullptr) << err;
  std::vector<std::vector<uint8_t>> raw;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) raw.emplace_back(d, d + h->caplen);
  pcap_close(p);
  ASSERT_EQ(raw.size(), frames_->size());

  for (size_t f = 0; f < frames_->size(); ++f) {
    const ExpectedFrame& e = (*frames_)[f];
    const std::vector<std::string>& row = rows[f + 1];
    SCOPED_TRACE(
        absl::StrCat("frame ", f + 1, " of ", (*corpus_)[e.case_index].name));
    EXPECT_EQ(row[1], "1") << "IPv4 header checksum status (1 = good)";
    EXPECT_EQ(row[2], "4791");
    EXPECT_EQ(row[3], std::to_string(e.opcode));
    EXPECT_EQ(row[4], std::to_string(e.psn));
    EXPECT_EQ(row[5], absl::StrFormat("0x%06x", e.dest_qp));
    EXPECT_EQ(row[6], e.ieth ? absl::StrFormat("%08x", *e.ieth) : "");
    // tshark shows the ICRC octets read most significant first; we store
    // the CRC least significant first (as rxe does), so the value tshark
    // prints is the byte-swapped CRC over the frame.
    auto icrc = rpcrdma::pcap::ComputeIcrc(
        absl::MakeConstSpan(raw[f]).subspan(14, raw[f].size() - 14 - 4), true);
    ASSERT_TRUE(icrc.has_value());
    EXPECT_EQ(row[7], Hex32(__builtin_bswap32(*icrc)));
    EXPECT_EQ(row[8], std::to_string(e.pad));
  }
}

// rpcrdma-dump reads the same capture; each of its JSON objects must agree
// with tshark field for field.
TEST_F(TsharkOracle, RpcrdmaDumpAgreesWithTshark) {
  CommandResult t = Tshark(RpcordmaArgs());
  ASSERT_EQ(t.exit_status, 0);
  auto rows = ParseRows(t.out, kColumns);
  CommandResult dump =
      RunCommand(absl::StrCat(Quote(RPCRDMA_DUMP), " ", Quote(*pcap_path_)));
  ASSERT_EQ(dump.exit_status, 0);

  std::vector<uint64_t> tshark_frames;
  for (const auto& [frame, row] : rows) {
    if (!row[kXid].empty()) tshark_frames.push_back(frame);
  }
  std::vector<uint64_t> dump_frames;
  const char* const kProcNames[] = {"RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP",
                                    "RDMA_DONE", "RDMA_ERROR"};
  for (absl::string_view line : absl::StrSplit(dump.out, '\n')) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    const uint64_t frame = j.at("frame").get<uint64_t>();
    dump_frames.push_back(frame);
    SCOPED_TRACE(absl::StrCat("frame ", frame, ": ", line));
    ASSERT_EQ(rows.count(frame), 1u);
    const std::vector<std::string>& row = rows[frame];
    EXPECT_EQ(j.at("xid").get<uint64_t>(), Number(row[kXid]));
    EXPECT_EQ(j.at("vers").get<uint64_t>(), Number(row[kVersion]));
    EXPECT_EQ(j.at("credits").get<uint64_t>(), Number(row[kFlowControl]));
    const uint64_t type = Number(row[kMsgType]);
    ASSERT_LT(type, 5u);
    EXPECT_EQ(j.at("proc"), kProcNames[type]);

    if (j.contains("reads")) {
      std::vector<uint64_t> pos, handle, length, offset, segcount;
      for (const auto& s : j.at("reads")) {
        pos.push_back(s.at("position"));
        handle.push_back(s.at("handle"));
        length.push_back(s.at("length"));
        offset.push_back(s.at("offset"));
      }
      auto chunk = [&](const nlohmann::json& c) {
        segcount.push_back(c.size());
        for (const auto& s : c) {
          handle.push_back(s.at("handle"));
          length.push_back(s.at("length"));
          offset.push_back(s.at("offset"));
        }
      };
      for (const auto& c : j.at("writes")) chunk(c);
      if (!j.at("reply").is_null()) chunk(j.at("reply"));
      EXPECT_EQ(j.at("reads").size(), Number(row[kReadsCount]));
      EXPECT_EQ(pos, Numbers(row[kPosition]));
      EXPECT_EQ(handle, Numbers(row[kHandle]));
      EXPECT_EQ(length, Numbers(row[kLength]));
      EXPECT_EQ(offset, Numbers(row[kOffset]));
      EXPECT_EQ(j.at("writes").size(), Number(row[kWritesCount]));
      EXPECT_EQ(segcount, Numbers(row[kSegmentCount]));
      EXPECT_EQ(j.at("reply").is_null() ? 0u : 1u, Number(row[kReplyCount]));
    } else {
      EXPECT_EQ(row[kReadsCount], "");
      EXPECT_EQ(row[kHandle], "");
    }
    if (j.contains("align")) {
      EXPECT_EQ(j.at("align").get<uint64_t>(), Number(row[kAlign]));
      EXPECT_EQ(j.at("thresh").get<uint64_t>(), Number(row[kThresh]));
    } else {
      EXPECT_EQ(row[kAlign], "");
    }
    if (j.contains("err")) {
      EXPECT_EQ(j.at("err"),
                Number(row[kErrcode]) == 1 ? "ERR_VERS" : "ERR_CHUNK");
      if (j.at("err") == "ERR_VERS") {
        EXPECT_EQ(j.at("vers_low").get<uint64_t>(), Number(row[kVersLow]));
        EXPECT_EQ(j.at("vers_high").get<uint64_t>(), Number(row[kVersHigh]));
      }
    } else {
      EXPECT_EQ(row[kErrcode], "");
    }
    if (j.contains("rpc") && j.at("proc") == "RDMA_MSG" &&
        !j.at("reads").empty()) {
      EXPECT_EQ(row[kRpcXid], "") << "tshark defers the RPC (DefersRpc)";
    } else if (j.contains("rpc")) {
      EXPECT_EQ(j.at("rpc").at("xid").get<uint64_t>(), Number(row[kRpcXid]));
      if (j.at("rpc").at("direction") == "CALL") {
        EXPECT_EQ(j.at("rpc").at("program").get<uint64_t>(),
                  Number(row[kRpcProgram]));
      }
    } else {
      EXPECT_EQ(row[kRpcXid], "");
    }
  }
  EXPECT_EQ(dump_frames, tshark_frames);
}

}  // namespace
