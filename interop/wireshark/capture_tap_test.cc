// The transport's capture tap (TransportConfig.capture_path) against
// Wireshark: a soft-fabric client and server exchange every kind of
// RPC-over-RDMA version one message (RFC 8166 §3.5: inline, read chunks,
// position-zero read chunk, write chunks, reply chunk, write list with reply
// chunk), both sides capture, and tshark and rpcrdma-dump must decode every
// message of both captures with no error.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "plugin/config/config_loader.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "rpcrdma/xdr.h"
#include "tests/testing/process_tag.h"
#include "tests/testing/run_command.h"

namespace rpcrdma {
namespace {

constexpr uint32_t kProg = 0x20000099;
// The test program's procedures.
constexpr uint32_t kDigest = 1;  // reply: u32 size, u32 sum of the call
constexpr uint32_t kFetch = 2;   // args n, seed, m: item opaque<n>, opaque<m>

// rpcordma.msg_type values (RFC 8166 §4.2.1, rdma_proc).
constexpr uint32_t kRdmaMsg = 0;
constexpr uint32_t kRdmaNoMsg = 1;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
  }
  return v;
}

uint32_t Sum(absl::Span<const uint8_t> v, size_t from) {
  uint32_t s = 0;
  for (size_t i = from; i < v.size(); ++i) s = s * 33 + v[i];
  return s;
}

// The words of an RFC 5531 accepted, successful reply header (AUTH_NONE
// verifier): 24 octets.
std::vector<uint8_t> ReplyHeader(uint32_t xid) {
  std::vector<uint8_t> out;
  XdrWriter header(&out);  // appending to a vector: no write fails
  for (uint32_t w : {xid, 1u, 0u, 0u, 0u, 0u}) {
    (void)header.WriteUint32("reply header", w);
  }
  return out;
}

// RFC 5531 call header, AUTH_NONE: 40 octets.
std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t proc) {
  std::vector<uint8_t> out;
  XdrWriter header(&out);
  for (uint32_t w : {xid, 0u, 2u, kProg, 1u, proc, 0u, 0u, 0u, 0u}) {
    (void)header.WriteUint32("call header", w);
  }
  return out;
}
constexpr uint32_t kCallHeaderSize = 40;
constexpr uint32_t kReplyHeaderSize = 24;

HandlerReply Answer(const IncomingCall& call) {
  absl::Span<const uint8_t> m = call.message;
  HandlerReply reply;
  reply.xdr = ReplyHeader(call.xid);
  XdrWriter results(&reply.xdr);
  if (LoadBigEndian32(m.data() + 20) == kDigest) {
    (void)results.WriteUint32("size", static_cast<uint32_t>(m.size()));
    (void)results.WriteUint32("sum", Sum(m, kCallHeaderSize));
  } else {
    const uint32_t n = LoadBigEndian32(m.data() + kCallHeaderSize);
    const uint32_t seed = LoadBigEndian32(m.data() + kCallHeaderSize + 4);
    const uint32_t bulk = LoadBigEndian32(m.data() + kCallHeaderSize + 8);
    (void)results.WriteUint32("item length", n);
    reply.results.push_back({kReplyHeaderSize + 4, Pattern(n, seed)});
    (void)results.WriteVarOpaque("bulk", Pattern(bulk, seed + 1));
  }
  return reply;
}

using rpcrdma::test::CommandResult;
using rpcrdma::test::Quote;
using rpcrdma::test::RunCommand;

uint64_t Number(const std::string& s) {
  return s.rfind("0x", 0) == 0 ? std::stoull(s.substr(2), nullptr, 16)
                               : std::stoull(s);
}

// One RPC-over-RDMA message expected in a capture, in order.
struct Expected {
  uint32_t xid;
  uint32_t msg_type;
  bool call;
};

class CaptureTap : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "rpcrdma-capture-XXXXXX";
    std::string dir = ::testing::TempDir() + tmpl;
    if (mkdtemp(dir.data()) == nullptr) return;
    dir_ = new std::string(dir);
    expected_ = new std::vector<Expected>();
    client_counters_ = new Counters();
    server_counters_ = new Counters();
    RunTraffic();
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) {
      RunCommand(absl::StrCat("rm -rf ", Quote(*dir_)));
    }
    delete dir_;
    delete expected_;
    delete client_counters_;
    delete server_counters_;
  }

  static std::string ClientPcap() { return *dir_ + "/client.pcap"; }
  static std::string ServerPcap() { return *dir_ + "/server.pcap"; }

  // Every call kind, one at a time so the capture order is known.
  static void RunTraffic() {
    static std::atomic<int> counter{0};
    const std::string uri =
        absl::StrCat("soft+unix://@rpcrdma-capture-test-",
                     ::rpcrdma::test::ProcessTag(), "-", counter++);
    config::TransportConfig server_config;
    server_config.set_capture_path(ServerPcap());
    auto server = Server::Create(uri, server_config,
                                 [](IncomingCall call, Responder responder) {
                                   (void)responder.Send(Answer(call));
                                 });
    ASSERT_TRUE(server.ok()) << server.status();
    config::TransportConfig client_config;
    client_config.set_capture_path(ClientPcap());
    auto channel = Channel::Create((*server)->uri(), client_config);
    ASSERT_TRUE(channel.ok()) << channel.status();
    uint32_t xid = 0x51a70000;

    // Digest of a call: `inline_data` inline in the call stream and
    // `chunk` (if not empty) as a DDP-eligible argument after it.
    auto digest = [&](const std::vector<uint8_t>& inline_data,
                      const std::vector<uint8_t>& chunk, uint32_t call_type) {
      CallRequest req;
      req.xdr = CallHeader(++xid, kDigest);
      (void)XdrWriter(&req.xdr).WriteVarOpaque("inline data", inline_data);
      std::vector<uint8_t> full = req.xdr;
      if (!chunk.empty()) {
        (void)XdrWriter(&req.xdr).WriteUint32(
            "chunk length", static_cast<uint32_t>(chunk.size()));
        req.arguments.push_back({static_cast<uint32_t>(req.xdr.size()),
                                 absl::MakeConstSpan(chunk)});
        (void)XdrWriter(&full).WriteVarOpaque("chunk", chunk);
      }
      req.max_reply_size = 1024;
      absl::StatusOr<Reply> reply = (*channel)->Call(std::move(req)).get();
      ASSERT_TRUE(reply.ok()) << reply.status();
      ASSERT_EQ(reply->xdr.size(), kReplyHeaderSize + 8);
      EXPECT_EQ(LoadBigEndian32(reply->xdr.data() + kReplyHeaderSize),
                full.size());
      EXPECT_EQ(LoadBigEndian32(reply->xdr.data() + kReplyHeaderSize + 4),
                Sum(full, kCallHeaderSize));
      expected_->push_back({xid, call_type, true});
      expected_->push_back({xid, kRdmaMsg, false});
    };
    // Fetch: an item of `n` octets (into a write chunk when `to_chunk`)
    // and `bulk` octets inline in the reply.
    auto fetch = [&](uint32_t n, bool to_chunk, uint32_t bulk,
                     uint32_t reply_type) {
      CallRequest req;
      req.xdr = CallHeader(++xid, kFetch);
      XdrWriter args(&req.xdr);
      (void)args.WriteUint32("n", n);
      (void)args.WriteUint32("seed", xid);
      (void)args.WriteUint32("m", bulk);
      std::vector<uint8_t> result(to_chunk ? n : 0);
      if (to_chunk) req.results.push_back(absl::MakeSpan(result));
      req.max_reply_size = kReplyHeaderSize + 8 + bulk + 8 + (to_chunk ? 0 : n);
      absl::StatusOr<Reply> reply = (*channel)->Call(std::move(req)).get();
      ASSERT_TRUE(reply.ok()) << reply.status();
      std::vector<uint8_t> item = Pattern(n, xid);
      if (to_chunk) {
        ASSERT_EQ(reply->result_lengths, std::vector<uint32_t>{n});
        EXPECT_EQ(result, item);
      }
      std::vector<uint8_t> want = ReplyHeader(xid);
      XdrWriter results(&want);
      (void)results.WriteUint32("item length", n);
      if (!to_chunk) (void)results.WriteFixedOpaque("item", item);
      (void)results.WriteVarOpaque("bulk", Pattern(bulk, xid + 1));
      EXPECT_EQ(reply->xdr, want);
      expected_->push_back({xid, kRdmaMsg, true});
      expected_->push_back({xid, reply_type, false});
    };

    // RFC 8166 §3.5.1: short calls and replies, inline.
    digest(Pattern(10, 1), {}, kRdmaMsg);
    digest(Pattern(200, 2), {}, kRdmaMsg);
    digest(Pattern(3000, 3), {}, kRdmaMsg);  // more than one 1024 packet
    // §3.5.3 with §3.4.5: a DDP-eligible argument as a read chunk.
    digest(Pattern(16, 4), Pattern(20000, 5), kRdmaMsg);
    digest(Pattern(16, 6), Pattern(7, 7), kRdmaMsg);  // small: inline
    // §3.5.3: a call too long to send inline: position-zero read chunk.
    digest(Pattern(9000, 8), {}, kRdmaNoMsg);
    // §3.4.7: the result into a write chunk.
    fetch(30000, true, 0, kRdmaMsg);
    // §3.5.4: a reply too long to send inline, through the reply chunk.
    fetch(0, false, 12000, kRdmaNoMsg);
    // Write list and reply chunk together.
    fetch(25000, true, 9000, kRdmaNoMsg);

    *client_counters_ = (*channel)->counters();
    channel->reset();
    *server_counters_ = (*server)->counters();
    server->reset();
    written_ = true;
  }

  static CommandResult Tshark(const std::string& pcap,
                              const std::string& args) {
    return RunCommand(absl::StrCat(Quote(RPCRDMA_TSHARK), " -n -r ",
                                   Quote(pcap), " ", args, " 2>",
                                   Quote(pcap + ".tshark.err")));
  }

  void SetUp() override { ASSERT_TRUE(written_); }

  static std::string* dir_;
  static std::vector<Expected>* expected_;
  static Counters* client_counters_;
  static Counters* server_counters_;
  static bool written_;
};

std::string* CaptureTap::dir_ = nullptr;
std::vector<Expected>* CaptureTap::expected_ = nullptr;
Counters* CaptureTap::client_counters_ = nullptr;
Counters* CaptureTap::server_counters_ = nullptr;
bool CaptureTap::written_ = false;

TEST_F(CaptureTap, CountersSawEveryPath) {
  const Counters& c = *client_counters_;
  EXPECT_EQ(c.calls, 9u);
  EXPECT_EQ(c.replies, 9u);
  EXPECT_EQ(c.inline_calls, 7u);
  EXPECT_EQ(c.read_chunk_calls, 1u);
  EXPECT_EQ(c.long_calls, 1u);
  EXPECT_EQ(c.write_chunks, 2u);
  EXPECT_EQ(c.reply_chunks, 2u);
  EXPECT_EQ(c.long_replies, 2u);
  EXPECT_EQ(c.errors_sent + c.errors_received, 0u);
  EXPECT_EQ(server_counters_->calls, 9u);
  EXPECT_EQ(server_counters_->replies, 9u);
}

// Every message decodes as RPC-over-RDMA (RFC 8166 §4), in the order sent,
// with the RPC XID, from the right side, in both sides' captures.
class CaptureTapSide : public CaptureTap,
                       public ::testing::WithParamInterface<bool> {
 protected:
  std::string Pcap() const { return GetParam() ? ClientPcap() : ServerPcap(); }
};

TEST_P(CaptureTapSide, Rfc8166_4_EveryMessageDecodesInOrder) {
  CommandResult r =
      Tshark(Pcap(),
             "-T fields -E occurrence=f -e frame.number -e ip.src "
             "-e infiniband.bth.opcode -e rpcordma.xid -e rpcordma.msg_type");
  ASSERT_EQ(r.exit_status, 0);
  std::vector<std::vector<std::string>> messages;
  size_t frames = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (line.empty()) continue;
    ++frames;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    f.resize(5);
    SCOPED_TRACE(std::string(line));
    if (f[3].empty()) {
      // Only the first and middle packets of a multi-packet SEND carry no
      // RPC-over-RDMA header (IBA opcodes 0 SEND_FIRST, 1 SEND_MIDDLE).
      EXPECT_TRUE(f[2] == "0" || f[2] == "1") << "frame " << frames;
      continue;
    }
    messages.push_back(f);
  }
  ASSERT_EQ(messages.size(), expected_->size());
  EXPECT_GT(frames, messages.size());  // some messages span several packets
  bool saw_msg = false;
  bool saw_nomsg = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Expected& e = (*expected_)[i];
    const std::vector<std::string>& f = messages[i];
    SCOPED_TRACE(absl::StrCat("message ", i, " frame ", f[0]));
    EXPECT_EQ(f[1], e.call ? "192.0.2.1" : "192.0.2.2");
    EXPECT_EQ(Number(f[3]), e.xid);
    EXPECT_EQ(Number(f[4]), e.msg_type);
    (e.msg_type == kRdmaMsg ? saw_msg : saw_nomsg) = true;
  }
  EXPECT_TRUE(saw_msg);
  EXPECT_TRUE(saw_nomsg);
}

TEST_P(CaptureTapSide, NoMalformedPacketsOrExpertErrors) {
  CommandResult r =
      Tshark(Pcap(), "-Y '_ws.malformed || _ws.expert.severity >= error'");
  ASSERT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, "");
}

// RFC 8797 §4.1: each Send With Invalidate is captured with its R_Key.
TEST_P(CaptureTapSide, Rfc8797_4_1_SendWithInvalidateCarriesRkey) {
  CommandResult r = Tshark(Pcap(),
                           "-Y infiniband.ieth -T fields -e infiniband.ieth "
                           "-e rpcordma.xid");
  ASSERT_EQ(r.exit_status, 0);
  size_t n = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (!line.empty()) ++n;
  }
  EXPECT_EQ(n, client_counters_->remote_invalidations);
  EXPECT_EQ(n, server_counters_->remote_invalidations);
}

TEST_P(CaptureTapSide, RpcrdmaDumpDecodesEveryMessage) {
  CommandResult dump =
      RunCommand(absl::StrCat(Quote(RPCRDMA_DUMP), " ", Quote(Pcap())));
  ASSERT_EQ(dump.exit_status, 0);
  size_t i = 0;
  for (absl::string_view line : absl::StrSplit(dump.out, '\n')) {
    if (line.empty()) continue;
    SCOPED_TRACE(std::string(line));
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_FALSE(j.contains("error"));
    ASSERT_LT(i, expected_->size());
    const Expected& e = (*expected_)[i];
    EXPECT_EQ(j.at("xid").get<uint32_t>(), e.xid);
    // RDMA_MSG carries the RPC message, whose XID is the same (RFC 8166
    // §4.1.1); RDMA_NOMSG carries none.
    if (e.msg_type == kRdmaMsg) {
      EXPECT_EQ(j.at("proc").get<std::string>(), "RDMA_MSG");
      EXPECT_EQ(j.at("rpc").at("xid").get<uint32_t>(), e.xid);
      EXPECT_EQ(j.at("rpc").at("direction").get<std::string>(),
                e.call ? "CALL" : "REPLY");
    } else {
      EXPECT_EQ(j.at("proc").get<std::string>(), "RDMA_NOMSG");
      EXPECT_FALSE(j.contains("rpc"));
    }
    ++i;
  }
  EXPECT_EQ(i, expected_->size());
}

INSTANTIATE_TEST_SUITE_P(Sides, CaptureTapSide, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& side) {
                           return std::string(side.param ? "Client" : "Server");
                         });

TEST(CaptureConfig, PathNamingADirectoryIsRejected) {
  config::TransportConfig c;
  c.set_capture_path("captures/");
  absl::Status s = config::ValidateConfig(c, "test");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("capture_path"), std::string::npos)
      << s;
}

TEST(CaptureConfig, UnwritablePathFailsCreate) {
  config::TransportConfig c;
  c.set_capture_path("/nonexistent-directory-for-rpcrdma/x.pcap");
  auto server = Server::Create(absl::StrCat("soft+unix://@rpcrdma-capture-bad-",
                                            ::rpcrdma::test::ProcessTag()),
                               c, [](IncomingCall, Responder) {});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(server.status().message()).find("capture_path"),
            std::string::npos)
      << server.status();
}

}  // namespace
}  // namespace rpcrdma
