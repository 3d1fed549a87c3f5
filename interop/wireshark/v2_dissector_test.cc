// The version two Wireshark dissector (rpcrdma2.lua, loaded into tshark
// with -X lua_script:) against the version two corpus capture: every field
// of every message must equal what rpcrdma-dump reports for the frame
// (which the rpcgen oracle holds to the draft's own XDR), the RPC message
// after an RDMA2_MSG header must reach Wireshark's RPC dissector, version
// one must stay with Wireshark's own dissector, and a header cut short must
// be reported as malformed, not as a Lua error.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "interop/xdr_v2/v2_corpus.h"
#include "interop/xdr_v2/v2_live_session.h"
#include "nlohmann/json.hpp"
#include "plugin/capture/pcap_writer.h"
#include "plugin/wire/v2.h"
#include "tests/testing/process_tag.h"
#include "tests/testing/run_command.h"

namespace rpcrdma::test {
namespace {

using nlohmann::json;

// The dissector's fields, in the order of a tshark -T fields row.
constexpr const char* kFields[] = {
    "frame.number",
    "rpcrdma2.xid",
    "rpcrdma2.vers",
    "rpcrdma2.credits",
    "rpcrdma2.proc",
    "rpcrdma2.direction",
    "rpcrdma2.inv_handle",
    "rpcrdma2.read.position",
    "rpcrdma2.read.handle",
    "rpcrdma2.read.length",
    "rpcrdma2.read.offset",
    "rpcrdma2.write.segments",
    "rpcrdma2.write.handle",
    "rpcrdma2.write.length",
    "rpcrdma2.write.offset",
    "rpcrdma2.reply.segments",
    "rpcrdma2.reply.handle",
    "rpcrdma2.reply.length",
    "rpcrdma2.reply.offset",
    "rpcrdma2.err",
    "rpcrdma2.vers_low",
    "rpcrdma2.vers_high",
    "rpcrdma2.max_chunks",
    "rpcrdma2.max_segments",
    "rpcrdma2.chunk_index",
    "rpcrdma2.length_needed",
    "rpcrdma2.optdir",
    "rpcrdma2.opttype",
    "rpcrdma2.optinfo_length",
    "rpcrdma2.prop.which",
    "rpcrdma2.prop.length",
    "rpcrdma2.prop.rbsiz",
    "rpcrdma2.prop.brs",
    "rpcrdma2.nochg",
    "rpcrdma2.done",
    "rpcrdma2.rejected",
    "rpc.xid",
    "rpc.msgtyp",
    "rpc.program",
};
constexpr size_t kColumns = sizeof(kFields) / sizeof(kFields[0]);

uint64_t Number(const std::string& s) {
  return s.rfind("0x", 0) == 0 ? std::stoull(s.substr(2), nullptr, 16)
                               : std::stoull(s);
}

// A tshark cell (occurrences joined by ',') as numbers.
std::vector<uint64_t> Numbers(const std::string& cell) {
  std::vector<uint64_t> v;
  if (cell.empty()) return v;
  for (absl::string_view part : absl::StrSplit(cell, ',')) {
    v.push_back(Number(std::string(part)));
  }
  return v;
}

uint64_t ProcNumber(const std::string& name) {
  static const std::map<std::string, uint64_t> kProcs = {
      {"RDMA2_MSG", 0},      {"RDMA2_NOMSG", 1},    {"RDMA2_ERROR", 4},
      {"RDMA2_OPTIONAL", 5}, {"RDMA2_CONNPROP", 6}, {"RDMA2_REQPROP", 7},
      {"RDMA2_RESPROP", 8},  {"RDMA2_UPDPROP", 9}};
  return kProcs.at(name);
}

uint64_t ErrNumber(const std::string& name) {
  static const std::map<std::string, uint64_t> kErrs = {
      {"RDMA2_ERR_VERS", 1},           {"RDMA2_ERR_BAD_XDR", 2},
      {"RDMA2_ERR_INVALID_PROC", 3},   {"RDMA2_ERR_READ_CHUNKS", 4},
      {"RDMA2_ERR_WRITE_CHUNKS", 5},   {"RDMA2_ERR_SEGMENTS", 6},
      {"RDMA2_ERR_WRITE_RESOURCE", 7}, {"RDMA2_ERR_REPLY_RESOURCE", 8},
      {"RDMA2_ERR_INVALID_OPTION", 9}, {"RDMA2_ERR_SYSTEM", 10}};
  return kErrs.at(name);
}

uint64_t DirectionNumber(const json& name) { return name == "CALL" ? 0 : 1; }

// What the dissector must show for a frame, from rpcrdma-dump's object:
// field name -> the numbers of its occurrences.
std::map<std::string, std::vector<uint64_t>> Expected(const json& d) {
  std::map<std::string, std::vector<uint64_t>> e;
  auto one = [&e, &d](const char* field, const char* key) {
    if (d.contains(key)) e[field] = {d[key].get<uint64_t>()};
  };
  one("rpcrdma2.xid", "xid");
  one("rpcrdma2.vers", "vers");
  one("rpcrdma2.credits", "credits");
  e["rpcrdma2.proc"] = {ProcNumber(d["proc"])};
  if (d.contains("direction")) {
    e["rpcrdma2.direction"] = {DirectionNumber(d["direction"])};
  }
  one("rpcrdma2.inv_handle", "inv_handle");
  for (const json& r : d.value("reads", json::array())) {
    e["rpcrdma2.read.position"].push_back(r["position"]);
    e["rpcrdma2.read.handle"].push_back(r["handle"]);
    e["rpcrdma2.read.length"].push_back(r["length"]);
    e["rpcrdma2.read.offset"].push_back(r["offset"]);
  }
  auto chunk = [&e](const json& c, const std::string& prefix) {
    e[prefix + ".segments"].push_back(c.size());
    for (const json& s : c) {
      e[prefix + ".handle"].push_back(s["handle"]);
      e[prefix + ".length"].push_back(s["length"]);
      e[prefix + ".offset"].push_back(s["offset"]);
    }
  };
  for (const json& c : d.value("writes", json::array())) {
    chunk(c, "rpcrdma2.write");
  }
  if (d.contains("reply") && !d["reply"].is_null()) {
    chunk(d["reply"], "rpcrdma2.reply");
  }
  if (d.contains("err")) e["rpcrdma2.err"] = {ErrNumber(d["err"])};
  for (const char* key :
       {"vers_low", "vers_high", "max_chunks", "max_segments", "chunk_index",
        "length_needed", "opttype", "optinfo_length"}) {
    one(absl::StrCat("rpcrdma2.", key).c_str(), key);
  }
  if (d.contains("optdir")) {
    e["rpcrdma2.optdir"] = {DirectionNumber(d["optdir"])};
  }
  for (const json& p : d.value("props", json::array())) {
    e["rpcrdma2.prop.which"].push_back(p["which"]);
    e["rpcrdma2.prop.length"].push_back(p["length"]);
    if (p["name"] == "RBSIZ" && p.contains("value")) {
      e["rpcrdma2.prop.rbsiz"].push_back(p["value"]);
    }
    if (p["name"] == "BRS" && p.contains("value")) {
      static const std::map<std::string, uint64_t> kBrs = {
          {"NONE", 0}, {"INLINE", 1}, {"GENL", 2}};
      const json& v = p["value"];
      e["rpcrdma2.prop.brs"].push_back(
          v.is_string() ? kBrs.at(v.get<std::string>()) : v.get<uint64_t>());
    }
  }
  for (const char* key : {"nochg", "done", "rejected"}) {
    for (const json& w : d.value(key, json::array())) {
      e[absl::StrCat("rpcrdma2.", key)].push_back(w);
    }
  }
  if (d.contains("rpc")) {
    e["rpc.xid"] = {d["rpc"]["xid"].get<uint64_t>()};
    e["rpc.msgtyp"] = {DirectionNumber(d["rpc"]["direction"])};
    if (d["rpc"].contains("program")) {
      e["rpc.program"] = {d["rpc"]["program"].get<uint64_t>()};
    }
  }
  return e;
}

class V2Dissector : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new std::vector<V2CorpusMessage>(V2Corpus());
    dump_ = new std::map<uint64_t, json>();
    std::string dir = ::testing::TempDir() + "rpcrdma-v2-lua-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) return;
    dir_ = new std::string(dir);
    if (!WriteV2CorpusPcap(Pcap(), *corpus_).ok()) return;
    const CommandResult dump =
        RunCommand(absl::StrCat(Quote(RPCRDMA_DUMP), " ", Quote(Pcap())));
    if (dump.exit_status != 0) return;
    for (absl::string_view line : absl::StrSplit(dump.out, '\n')) {
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("frame") && j["frame"].is_number()) {
        const uint64_t frame = j["frame"].get<uint64_t>();
        (*dump_)[frame] = std::move(j);
      }
    }
    ready_ = dump_->size() == corpus_->size() + 1;
  }

  static void TearDownTestSuite() {
    if (dir_ != nullptr &&
        !::testing::UnitTest::GetInstance()->current_test_suite()->Failed()) {
      for (const char* name :
           {"/v2.pcap", "/cut.pcap", "/live.pcap", "/tshark.err"}) {
        std::remove((*dir_ + name).c_str());
      }
      rmdir(dir_->c_str());
    }
    delete corpus_;
    delete dump_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_STRNE(RPCRDMA_TSHARK, "")
        << "tshark was not found when the build was configured; install it "
           "(scripts/install-deps.sh) and reconfigure";
    ASSERT_TRUE(ready_) << "writing or dumping the corpus capture failed";
  }

  static std::string Pcap() { return *dir_ + "/v2.pcap"; }

  // tshark with the dissector loaded; stderr (a warning when run as root)
  // goes to a file so that only stdout is parsed.
  static CommandResult Tshark(const std::string& pcap,
                              const std::string& args) {
    return RunCommand(absl::StrCat(
        Quote(RPCRDMA_TSHARK), " -n -X lua_script:", Quote(RPCRDMA2_LUA),
        " -r ", Quote(pcap), " ", args, " 2>", Quote(*dir_ + "/tshark.err")));
  }

  static std::map<uint64_t, std::vector<std::string>> Rows(
      const std::string& pcap) {
    std::string args = "-T fields -E occurrence=a -E aggregator=,";
    for (const char* field : kFields) args += absl::StrCat(" -e ", field);
    const CommandResult r = Tshark(pcap, args);
    std::map<uint64_t, std::vector<std::string>> rows;
    if (r.exit_status != 0) return rows;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      if (line.empty()) continue;
      std::vector<std::string> cells = absl::StrSplit(line, '\t');
      cells.resize(kColumns);
      rows[std::stoull(cells[0])] = cells;
    }
    return rows;
  }

  // For each packet that continues a Send (SEND_MIDDLE, SEND_LAST, with
  // or without immediate data or invalidation), the frame of the Send's
  // first packet, by queue pair (InfiniBand opcodes, IBTA Table 38).
  static std::map<uint64_t, uint64_t> FirstPackets(const std::string& pcap) {
    const CommandResult r =
        Tshark(pcap,
               "-T fields -e frame.number -e infiniband.bth.destqp -e "
               "infiniband.bth.opcode");
    std::map<uint64_t, uint64_t> first;
    std::map<std::string, uint64_t> open;  // destination QP -> SEND_FIRST
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      std::vector<std::string> cells = absl::StrSplit(line, '\t');
      if (cells.size() != 3 || cells[2].empty()) continue;
      const uint64_t frame = std::stoull(cells[0]);
      const uint64_t opcode = Number(cells[2]);
      if (opcode == 0) {
        open[cells[1]] = frame;
      } else if ((opcode == 1 || opcode == 2 || opcode == 3 || opcode == 22) &&
                 open.count(cells[1])) {
        first[frame] = open[cells[1]];
      }
    }
    return first;
  }

  static std::vector<V2CorpusMessage>* corpus_;
  static std::map<uint64_t, json>* dump_;
  static std::string* dir_;
  static bool ready_;
};

std::vector<V2CorpusMessage>* V2Dissector::corpus_ = nullptr;
std::map<uint64_t, json>* V2Dissector::dump_ = nullptr;
std::string* V2Dissector::dir_ = nullptr;
bool V2Dissector::ready_ = false;

TEST_F(V2Dissector, Draft04_6_2_EveryFieldMatchesRpcrdmaDump) {
  const auto rows = Rows(Pcap());
  ASSERT_EQ(rows.size(), corpus_->size() + 1)
      << "tshark failed; see " << *dir_ << "/tshark.err";
  for (size_t i = 0; i < corpus_->size(); ++i) {
    const uint64_t frame = i + 1;
    SCOPED_TRACE(absl::StrCat((*corpus_)[i].name, " (frame ", frame, ")"));
    const std::vector<std::string>& row = rows.at(frame);
    const auto expected = Expected(dump_->at(frame));
    for (size_t c = 1; c < kColumns; ++c) {
      const auto it = expected.find(kFields[c]);
      // Wireshark's RPC dissector gives a reply the program of the call it
      // matched (0 for none); the program is compared on calls.
      if (it == expected.end() && kFields[c] == std::string("rpc.program")) {
        continue;
      }
      const std::vector<uint64_t> want =
          it == expected.end() ? std::vector<uint64_t>{} : it->second;
      EXPECT_EQ(Numbers(row[c]), want) << kFields[c] << " = '" << row[c] << "'";
    }
  }
}

// A live version-two session (interop/xdr_v2/v2_live_session.h) captured
// by the Server's capture tap: every field of every frame equals
// rpcrdma-dump, every procedure of §6.2 is there, and nothing is malformed.
// With RPCRDMA_V2_CAPTURE set, the capture read is that one: the same
// session over rdma:// in the Soft-RoCE VM (ctest v2.vm_capture.wireshark).
TEST_F(V2Dissector, Draft04_6_2_EveryFieldOfALiveSessionMatchesRpcrdmaDump) {
  std::string pcap = V2CaptureFromEnvironment();
  const bool ours = pcap.empty();
  if (ours) {
    pcap = *dir_ + "/live.pcap";
    const absl::Status session =
        RunV2LiveSession(absl::StrCat("soft+unix://@rpcrdma-v2-lua-live-",
                                      ::rpcrdma::test::ProcessTag()),
                         pcap);
    ASSERT_TRUE(session.ok()) << session;
  }
  std::printf("capture: %s\n", pcap.c_str());
  const CommandResult dump =
      RunCommand(absl::StrCat(Quote(RPCRDMA_DUMP), " ", Quote(pcap)));
  ASSERT_EQ(dump.exit_status, 0);
  std::map<uint64_t, json> by_frame;
  for (absl::string_view line : absl::StrSplit(dump.out, '\n')) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object() && j.contains("frame")) << line;
    const uint64_t frame = j["frame"].get<uint64_t>();
    by_frame[frame] = std::move(j);
  }
  // A Send longer than the path MTU travels in several packets: the
  // transport header is in the first (SEND_FIRST), where the dissector
  // shows it; rpcrdma-dump names the message by its last packet.
  const std::map<uint64_t, uint64_t> first = FirstPackets(pcap);
  const auto rows = Rows(pcap);
  ASSERT_GE(rows.size(), by_frame.size())
      << "tshark failed; see " << *dir_ << "/tshark.err";
  std::set<uint64_t> headers;
  for (const auto& [frame, d] : by_frame) {
    headers.insert(first.count(frame) ? first.at(frame) : frame);
  }
  for (const auto& [frame, row] : rows) {
    if (headers.count(frame) == 0) {
      EXPECT_EQ(row[1], "") << "frame " << frame << " holds no header";
    }
  }
  std::set<std::string> procs, errors;
  for (const auto& [last, d] : by_frame) {
    const uint64_t frame = first.count(last) ? first.at(last) : last;
    SCOPED_TRACE(absl::StrCat("frame ", frame, ": ", d.dump()));
    procs.insert(d["proc"].get<std::string>());
    if (d.contains("err")) errors.insert(d["err"].get<std::string>());
    ASSERT_EQ(rows.count(frame), 1u);
    const std::vector<std::string>& row = rows.at(frame);
    const auto expected = Expected(d);
    for (size_t c = 1; c < kColumns; ++c) {
      const auto it = expected.find(kFields[c]);
      if (it == expected.end() && kFields[c] == std::string("rpc.program")) {
        continue;  // see Draft04_6_2_EveryFieldMatchesRpcrdmaDump
      }
      const std::vector<uint64_t> want =
          it == expected.end() ? std::vector<uint64_t>{} : it->second;
      EXPECT_EQ(Numbers(row[c]), want) << kFields[c] << " = '" << row[c] << "'";
    }
  }
  std::printf("%zu frames decoded by rpcrdma2.lua, equal to rpcrdma-dump\n",
              by_frame.size());
  EXPECT_EQ(procs, V2LiveSessionProcs());
  EXPECT_EQ(errors, V2LiveSessionErrors());
  const CommandResult bad =
      Tshark(pcap, "-Y '_ws.malformed || _ws.expert.severity >= warning'");
  ASSERT_EQ(bad.exit_status, 0);
  EXPECT_EQ(bad.out, "");
  const CommandResult verbose = Tshark(pcap, "-V");
  EXPECT_EQ(verbose.out.find("Lua Error"), std::string::npos);
  if (ours) std::remove(pcap.c_str());
}

TEST_F(V2Dissector, VersionOneStaysWithWiresharksOwnDissector) {
  const uint64_t v1_frame = corpus_->size() + 1;
  const CommandResult r =
      Tshark(Pcap(), absl::StrCat("-Y 'frame.number == ", v1_frame,
                                  "' -T fields -e rpcrdma2.xid -e "
                                  "rpcordma.xid"));
  ASSERT_EQ(r.exit_status, 0);
  std::vector<std::string> cells = absl::StrSplit(r.out, '\t');
  ASSERT_EQ(cells.size(), 2u) << r.out;
  EXPECT_EQ(cells[0], "") << "rpcrdma2 must leave rdma_vers 1 alone";
  EXPECT_EQ(Numbers(cells[1].substr(0, cells[1].find('\n'))),
            std::vector<uint64_t>{V1Neighbour().xid});
}

TEST_F(V2Dissector, NoMalformedPacketsOrLuaErrors) {
  const CommandResult r =
      Tshark(Pcap(), "-Y '_ws.malformed || _ws.expert.severity >= warning'");
  ASSERT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, "");
  const CommandResult verbose = Tshark(Pcap(), "-V");
  ASSERT_EQ(verbose.exit_status, 0);
  EXPECT_EQ(verbose.out.find("Lua Error"), std::string::npos);
}

// Every prefix of each corpus header from 16 octets (all the heuristic
// needs to claim it) up to one octet short: each must be reported as
// rpcrdma2.truncated, none as a Lua error.
TEST_F(V2Dissector, HeaderCutShortIsReportedMalformed) {
  const std::string cut = *dir_ + "/cut.pcap";
  size_t frames = 0;
  {
    auto writer = pcap::PcapWriter::Open(cut, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const V2CorpusMessage& m : *corpus_) {
      const std::vector<uint8_t> header = wire::EncodeV2(m.header);
      for (size_t n = 16; n < header.size(); n += 4) {
        ASSERT_TRUE(
            (*writer)
                ->Send(m.direction, absl::MakeConstSpan(header).first(n))
                .ok());
        ++frames;
      }
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_GT(frames, 0u);
  const CommandResult r =
      Tshark(cut,
             "-T fields -e frame.number -e rpcrdma2.proc -Y "
             "rpcrdma2.truncated");
  ASSERT_EQ(r.exit_status, 0);
  EXPECT_EQ(static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n')),
            frames);
  const CommandResult verbose = Tshark(cut, "-V");
  EXPECT_EQ(verbose.out.find("Lua Error"), std::string::npos);
}

}  // namespace
}  // namespace rpcrdma::test
