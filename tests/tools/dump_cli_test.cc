// The rpcrdma-dump command line: JSON lines from captures and hex, the
// handling of malformed and foreign messages, exit statuses, and the built
// binary itself.
#include "tools/dump/dump_cli.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "plugin/capture/pcap_writer.h"
#include "plugin/wire/v1.h"
#include "tools/dump/dump_format.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;
using pcap::Direction;

// RFC 8166 §4.2 RDMA_MSG, xid 0x11, credits 32, no chunks, then an RPC call
// of NFS (100003) version 3 procedure 0 with AUTH_NONE.
constexpr char kMsgCall[] =
    "00000011 00000001 00000020 00000000 00000000 00000000 00000000"
    " 00000011 00000000 00000002 000186a3 00000003 00000000"
    " 00000000 00000000 00000000 00000000";
// Some other protocol: octets 4..7 are 7.
constexpr char kForeign[] = "00000001 00000007 00000000 00000000 deadbeef";
// Version one with rdma_proc 9: not a header.
constexpr char kBadProc[] = "00000012 00000001 00000020 00000009";
// RDMA_NOMSG reply, xid 0x13, reply chunk of one segment.
constexpr char kNoMsgReply[] =
    "00000013 00000001 00000020 00000001 00000000 00000000"
    " 00000001 00000001 00000042 00000100 00000000 00008000";
// draft-cel-nfsv4-rpcrdma-version-two-04 §6.2.4: RDMA2_ERROR RDMA2_ERR_VERS.
constexpr char kV2ErrVers[] =
    "00000014 00000002 00000000 00000004 00000001 00000001 00000002";

std::vector<uint8_t> Bytes(const std::string& hex) {
  auto b = ParseHex(hex);
  EXPECT_TRUE(b.ok()) << hex;
  return b.ok() ? *b : std::vector<uint8_t>{};
}

struct Result {
  int status;
  std::string out;
  std::string err;
};

Result Dump(const std::vector<std::string>& args,
            const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  int status = RunDump(args, in, out, err);
  return {status, out.str(), err.str()};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "rpcrdma_dump_" + info->name() + suffix;
}

// Frames: 1 MSG call; 2 foreign; 3 bad proc; 4 NOMSG reply with
// invalidate; 5-7 a 600-octet RDMA_MSG call in SEND_FIRST/MIDDLE/LAST;
// 8 v2 error; 9 a stray SEND_MIDDLE.
std::string WriteSampleCapture() {
  const std::string path = TempPath(".pcap");
  pcap::PcapWriterOptions o;
  o.pmtu = 256;
  auto w = pcap::PcapWriter::Open(path, o);
  EXPECT_TRUE(w.ok());
  auto send = [&](const char* hex, Direction d, pcap::SendOptions so = {}) {
    EXPECT_TRUE((*w)->Send(d, Bytes(hex), so).ok());
  };
  send(kMsgCall, Direction::kToResponder);
  send(kForeign, Direction::kToResponder);
  send(kBadProc, Direction::kToResponder);
  pcap::SendOptions inv;
  inv.invalidate_rkey = 0x42;
  send(kNoMsgReply, Direction::kToRequester, inv);
  std::vector<uint8_t> big = Bytes(kMsgCall);
  big[3] = 0x15;   // rdma_xid 0x15
  big[31] = 0x15;  // RPC xid 0x15
  big.resize(600, 0xEE);
  EXPECT_TRUE((*w)->Send(Direction::kToResponder, big).ok());
  send(kV2ErrVers, Direction::kToRequester);
  pcap::RoceV2FrameSpec stray;
  stray.src_ip = *pcap::IpAddress::Parse("192.0.2.1");
  stray.dst_ip = *pcap::IpAddress::Parse("192.0.2.2");
  stray.opcode = 0x01;
  stray.dest_qp = 0x12;
  stray.psn = 1000;
  stray.payload = Bytes(kMsgCall);
  EXPECT_TRUE((*w)->WriteFrame(*pcap::BuildRoceV2Frame(stray)).ok());
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

TEST(DumpCli, CaptureToJsonLines) {
  const std::string path = WriteSampleCapture();
  Result r = Dump({path});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0],
            R"({"frame":1,"xid":17,"vers":1,"credits":32,"proc":"RDMA_MSG",)"
            R"("reads":[],"writes":[],"reply":null,)"
            R"("rpc":{"xid":17,"direction":"CALL","program":100003}})");
  // Frame 2 is not RPC-over-RDMA and is skipped; frame 3 claims version one
  // but does not decode.
  json bad = json::parse(lines[1]);
  EXPECT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad.at("frame"), 3);
  EXPECT_EQ(bad.at("error"),
            std::string(wire::DecodeV1(Bytes(kBadProc)).status().message()));
  EXPECT_EQ(lines[2],
            R"({"frame":4,"xid":19,"vers":1,"credits":32,)"
            R"("proc":"RDMA_NOMSG","invalidate":66,"reads":[],"writes":[],)"
            R"("reply":[{"handle":66,"length":256,"offset":32768}]})");
  EXPECT_EQ(lines[3],
            R"({"frame":7,"xid":21,"vers":1,"credits":32,"proc":"RDMA_MSG",)"
            R"("reads":[],"writes":[],"reply":null,)"
            R"("rpc":{"xid":21,"direction":"CALL","program":100003}})");
  EXPECT_EQ(lines[4],
            R"({"frame":8,"xid":20,"vers":2,"credits":0,"proc":"RDMA2_ERROR",)"
            R"("err":"RDMA2_ERR_VERS","vers_low":1,"vers_high":2})");
  EXPECT_NE(r.err.find("frame 9: SEND_MIDDLE PSN 1000 without a SEND_FIRST"),
            std::string::npos)
      << r.err;
  std::remove(path.c_str());
}

TEST(DumpCli, PrettyPrintsTheSameObjects) {
  Result flat = Dump({"--hex", kNoMsgReply});
  Result pretty = Dump({"--pretty", "--hex", kNoMsgReply});
  EXPECT_EQ(pretty.status, kExitOk);
  EXPECT_GT(Lines(pretty.out).size(), 5u);
  EXPECT_EQ(json::parse(pretty.out), json::parse(flat.out));
}

TEST(DumpCli, HexArgumentsFrameIsTheMessageIndex) {
  Result r = Dump({"--hex", kMsgCall, kForeign,
                   "00:00:00:14 00:00:00:02 "
                   "00000000 00000004 00000001 "
                   "00000001 00000002"});
  EXPECT_EQ(r.status, kExitOk);
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[0]).at("frame"), 1);
  EXPECT_EQ(json::parse(lines[1]).at("frame"), 3);
  EXPECT_EQ(json::parse(lines[1]).at("err"), "RDMA2_ERR_VERS");
  EXPECT_NE(r.err.find("message 2: not RPC-over-RDMA"), std::string::npos);
}

TEST(DumpCli, HexFromStandardInput) {
  Result r = Dump({"--hex", "-"}, std::string("# comment\n\n") + kMsgCall +
                                      "\nnot hex\n" + kBadProc + "\n" +
                                      kV2ErrVers + "\n");
  EXPECT_EQ(r.status, kExitUnreadable);  // the line that is not hex
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[0]).at("xid"), 0x11);
  EXPECT_EQ(json::parse(lines[1]).at("frame"), 2);
  EXPECT_TRUE(json::parse(lines[1]).contains("error"));
  EXPECT_EQ(json::parse(lines[2]).at("frame"), 3);
  EXPECT_NE(r.err.find("line 4"), std::string::npos) << r.err;

  Result ok = Dump({"--hex", "-"}, std::string(kMsgCall) + "\n");
  EXPECT_EQ(ok.status, kExitOk);
  EXPECT_EQ(Lines(ok.out).size(), 1u);
}

TEST(DumpCli, UsageErrorsExitTwo) {
  EXPECT_EQ(Dump({}).status, kExitUsage);
  EXPECT_EQ(Dump({"--bogus", "x.pcap"}).status, kExitUsage);
  EXPECT_EQ(Dump({"a.pcap", "b.pcap"}).status, kExitUsage);
  EXPECT_EQ(Dump({"--hex"}).status, kExitUsage);
  Result bad = Dump({"--hex", kMsgCall, "0g"});
  EXPECT_EQ(bad.status, kExitUsage);
  EXPECT_EQ(bad.out, "");  // nothing printed before the arguments check out
  EXPECT_NE(bad.err.find("--help"), std::string::npos);
}

// The options are Abseil flags: their spellings are accepted, a bad value
// is a usage error naming it, and one run's options do not leak into the
// next.
TEST(DumpCli, OptionsTakeAbseilFlagSpellings) {
  const std::string flat = Dump({"--hex", kNoMsgReply}).out;
  const std::string pretty = Dump({"--pretty", "--hex", kNoMsgReply}).out;
  ASSERT_NE(flat, pretty);
  EXPECT_EQ(Dump({"-pretty", "-hex", kNoMsgReply}).out, pretty);
  EXPECT_EQ(Dump({"--pretty=true", "--hex=1", kNoMsgReply}).out, pretty);
  EXPECT_EQ(Dump({"--pretty", "--nopretty", "--hex", kNoMsgReply}).out, flat);
  EXPECT_EQ(Dump({"--pretty=false", "--hex", kNoMsgReply}).out, flat);
  EXPECT_EQ(Dump({"--hex", kNoMsgReply, "--pretty"}).out, pretty);
  EXPECT_EQ(Dump({"--hex", kNoMsgReply}).out, flat);

  Result bad = Dump({"--pretty=maybe", "--hex", kNoMsgReply});
  EXPECT_EQ(bad.status, kExitUsage);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("'--pretty=maybe'"), std::string::npos) << bad.err;
  EXPECT_EQ(Dump({"--nobogus"}).status, kExitUsage);
  EXPECT_EQ(Dump({"-h"}).out, UsageText());
  // After "--" everything is an operand.
  Result operand = Dump({"--hex", "--", "--pretty"});
  EXPECT_EQ(operand.status, kExitUsage);
  EXPECT_NE(operand.err.find("bad hex message '--pretty'"), std::string::npos)
      << operand.err;
}

TEST(DumpCli, UnreadableInputExitsOne) {
  EXPECT_EQ(Dump({TempPath(".missing")}).status, kExitUnreadable);
  const std::string text = TempPath(".txt");
  std::ofstream(text) << "not a capture\n";
  Result r = Dump({text});
  EXPECT_EQ(r.status, kExitUnreadable);
  EXPECT_NE(r.err.find("rpcrdma-dump: "), std::string::npos);
  std::remove(text.c_str());

  // A capture cut short: what was read is printed, then status 1.
  const std::string path = WriteSampleCapture();
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() - 10);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  Result cut = Dump({path});
  EXPECT_EQ(cut.status, kExitUnreadable);
  EXPECT_EQ(Lines(cut.out).size(), 5u);
  std::remove(path.c_str());
}

TEST(DumpCli, HelpDocumentsEveryKeyAndExitStatus) {
  Result r = Dump({"--help"});
  EXPECT_EQ(r.status, kExitOk);
  for (const char* key : {"frame",
                          "xid",
                          "vers",
                          "credits",
                          "proc",
                          "reads",
                          "position",
                          "handle",
                          "length",
                          "offset",
                          "writes",
                          "reply",
                          "align",
                          "thresh",
                          "err",
                          "vers_low",
                          "vers_high",
                          "max_chunks",
                          "max_segments",
                          "chunk_index",
                          "length_needed",
                          "rpc",
                          "direction",
                          "program",
                          "inv_handle",
                          "props",
                          "which",
                          "name",
                          "value",
                          "nochg",
                          "done",
                          "rejected",
                          "optdir",
                          "opttype",
                          "optinfo_length",
                          "invalidate",
                          "error",
                          "RDMA2_UPDPROP",
                          "ERR_CHUNK",
                          "RDMA2_ERR_READ_CHUNKS",
                          "protobuf",
                          "service",
                          "streaming",
                          "stream_id",
                          "seq",
                          "timeout_ms",
                          "metadata",
                          "message_length",
                          "bulk",
                          "reply_stat",
                          "accept_stat",
                          "item",
                          "code",
                          "--pretty",
                          "--hex",
                          "--proto_descriptor_set",
                          "--version",
                          "Exit status"}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
  }
  Result v = Dump({"--version"});
  EXPECT_EQ(v.status, kExitOk);
  EXPECT_EQ(v.out.rfind("rpcrdma-dump ", 0), 0u) << v.out;
}

// The installed binary, run as a process.
int RunBinary(const std::string& args, std::string* out) {
  FILE* p = popen((std::string("'") + RPCRDMA_DUMP + "' " + args).c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(DumpBinary, ReadsACaptureFromStandardInput) {
  const std::string path = WriteSampleCapture();
  std::string from_stdin, from_file;
  EXPECT_EQ(RunBinary("- < '" + path + "' 2>/dev/null", &from_stdin), 0);
  EXPECT_EQ(RunBinary("'" + path + "' 2>/dev/null", &from_file), 0);
  EXPECT_EQ(from_stdin, from_file);
  EXPECT_EQ(from_file, Dump({path}).out);
  std::string ignored;
  EXPECT_EQ(RunBinary("2>/dev/null", &ignored), 2);
  EXPECT_EQ(RunBinary("'" + TempPath(".missing") + "' 2>/dev/null", &ignored),
            1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rpcrdma::dump
