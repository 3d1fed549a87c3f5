// Every byte the bridge puts on the wire is RPC-over-RDMA (RFC 8166)
// carrying RFC 5531 RPC messages: a capture of a Thrift session
// (TransportConfig.capture_path) decodes in tshark as RPC-over-RDMA with
// the RPC layer inside, without a malformed packet, and rpcrdma-dump names
// the Thrift method and sequence id of each call.
#include <thrift/async/TConcurrentClientSyncInfo.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/run_command.h"
#include "tests/thrift/harness.h"

namespace rpcrdma::test {

using thrift::TRdmaSocket;

namespace {

class ThriftCapture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pcap_ = new std::string(absl::StrCat(::testing::TempDir(),
                                         "rpcrdma-thrift-", getpid(), ".pcap"));
    const test::Setup setup{ServerKind::kRdma, ProtocolKind::kBinary,
                            Wrapper::kPlain, Fabric::kTcp};
    std::unique_ptr<TestServer> server = TestServer::Start(setup);
    config::TransportConfig capture;
    capture.set_capture_path(*pcap_);
    auto socket = std::make_shared<TRdmaSocket>(server->uri(), capture);
    StoreConcurrentClient store(
        MakeProtocol(ProtocolKind::kBinary, socket),
        std::make_shared<apache::thrift::async::TConcurrentClientSyncInfo>());
    socket->open();
    store.ping();
    std::string echoed;
    store.echo(echoed, Pattern(70000, 1));  // a read chunk; its reply fetched
    store.echo(echoed, Pattern(70000, 2));  // the reply in a write chunk
    store.note("hello", 0, "");             // THRIFT_ONEWAY
    std::vector<std::string> made;
    store.make(made, {1 << 20}, 3);  // fetched (THRIFT_FETCH)
    socket->close();
  }
  static void TearDownTestSuite() {
    if (pcap_ != nullptr) unlink(pcap_->c_str());
    delete pcap_;
  }
  static std::string* pcap_;
};

std::string* ThriftCapture::pcap_ = nullptr;

// Wireshark dissects calls of programs it does not know only with
// rpc.dissect_unknown_programs; a call with read chunks it leaves at the
// RPC-over-RDMA header, since the chunk's octets (moved by RDMA Read) are
// not in the capture.
TEST_F(ThriftCapture, TsharkDecodesRpcOverRdmaWithRpcInside) {
  CommandResult r = RunCommand(absl::StrCat(
      Quote(RPCRDMA_TSHARK), " -n -o rpc.dissect_unknown_programs:TRUE -r ",
      Quote(*pcap_),
      " -Y 'ip.src == 192.0.2.1 && rpcordma.msg_type == 0' -T fields "
      "-E occurrence=f -e rpcordma.reads_count -e rpc.program "
      "-e rpc.procedure 2>/dev/null"));
  ASSERT_EQ(r.exit_status, 0);
  std::map<std::string, int> procedures;
  int with_read_chunks = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    ASSERT_EQ(f.size(), 3u) << line;
    if (f[0] != "0") {
      ++with_read_chunks;
      continue;
    }
    EXPECT_EQ(f[1], "536900712") << line;  // 0x20007468
    ++procedures[f[2]];
  }
  EXPECT_EQ(with_read_chunks, 2);  // the two 70000-octet echo calls
  EXPECT_EQ(procedures["1"], 2);   // THRIFT_CALL: ping, make
  EXPECT_EQ(procedures["2"], 1);   // THRIFT_ONEWAY: note
  EXPECT_EQ(procedures["3"], 2);   // THRIFT_FETCH: two large replies
  CommandResult bad = RunCommand(absl::StrCat(
      Quote(RPCRDMA_TSHARK), " -n -o rpc.dissect_unknown_programs:TRUE -r ",
      Quote(*pcap_),
      " -Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null"));
  ASSERT_EQ(bad.exit_status, 0);
  EXPECT_EQ(bad.out, "");
}

TEST_F(ThriftCapture, RpcrdmaDumpNamesTheMethodAndSeqidOfEachCall) {
  CommandResult r = RunCommand(
      absl::StrCat(Quote(RPCRDMA_DUMP), " ", Quote(*pcap_), " 2>/dev/null"));
  ASSERT_EQ(r.exit_status, 0) << r.out;
  std::vector<std::string> calls;
  std::vector<int> seqids;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("rpc") || !j["rpc"].contains("thrift")) continue;
    const nlohmann::json& t = j["rpc"]["thrift"];
    calls.push_back(absl::StrCat(j["rpc"]["procedure"].get<std::string>(), " ",
                                 t["method"].get<std::string>(), " ",
                                 t["type"].get<std::string>()));
    seqids.push_back(t["seqid"].get<int>());
  }
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "THRIFT_CALL ping CALL", "THRIFT_CALL echo CALL",
                       "THRIFT_CALL echo CALL", "THRIFT_ONEWAY note ONEWAY",
                       "THRIFT_CALL make CALL"}));
  // The concurrent client numbers its calls (its oneway calls carry 0).
  ASSERT_EQ(seqids.size(), 5u);
  EXPECT_EQ(seqids[1], seqids[0] + 1);
  EXPECT_EQ(seqids[2], seqids[0] + 2);
  EXPECT_EQ(seqids[3], 0);
  EXPECT_EQ(seqids[4], seqids[0] + 3);
}

}  // namespace
}  // namespace rpcrdma::test
