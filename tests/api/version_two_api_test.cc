// Version two through the public API (rpcrdma/version_two.h,
// draft-cel-nfsv4-rpcrdma-version-two-04) on a live connection, in both
// roles: a side raises its receive buffer size (RDMA2_UPDPROP, §5.3.4)
// under load without losing a call, experimental properties at connect,
// updated and requested (§5.4.2), optional messages (§4.1). Built natively
// (api_test: soft+unix, soft+tcp) and, with RPCRDMA_API_TEST_VERBS, into
// api_verbs_test over rdma:// in the Soft-RoCE VM.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "interop/xdr_v2/v2_live_session.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "rpcrdma/version_two.h"
#include "rpcrdma/xdr.h"
#include "tests/api/call_stream.h"
#ifdef RPCRDMA_API_TEST_VERBS
#include "tests/testing/rdma_vm.h"
#endif

namespace rpcrdma {
namespace {

using test::Words;

constexpr uint32_t kPropA = kFirstExperimentalPropertyId + 0xA;  // client's
constexpr uint32_t kPropB = kFirstExperimentalPropertyId + 0xB;  // server's
constexpr uint32_t kType = 0x4F505431;                           // "OPT1"

// A call whose reply carries `reply_octets` of pattern after the reply
// header (the server's handler reads the size from the call's argument).
CallRequest BulkCall(uint32_t xid, uint32_t reply_octets) {
  CallRequest request;
  request.xdr = test::MinimalCallStream(xid);
  const std::vector<uint8_t> arg = Words({reply_octets});
  request.xdr.insert(request.xdr.end(), arg.begin(), arg.end());
  request.max_reply_size = 24 + reply_octets;
  return request;
}

std::vector<uint8_t> Bulk(uint32_t xid, uint32_t n) {
  std::vector<uint8_t> out = test::ReplyHeader(xid);
  for (uint32_t i = 0; i < n; ++i) {
    out.push_back(static_cast<uint8_t>(xid + i * 13));
  }
  return out;
}

config::TransportConfig V2Config() {
  config::TransportConfig c;
  c.set_version_policy(config::TransportConfig::V2);
  c.mutable_credits()->set_max_requests(16);
  c.mutable_credits()->set_credits_granted(16);
  return c;
}

struct Transport {
  std::string name;
  std::function<std::string()> listen_uri;
};
void PrintTo(const Transport& t, std::ostream* os) { *os << t.name; }
std::string TransportName(const ::testing::TestParamInfo<Transport>& p) {
  return p.param.name;
}

class VersionTwoApiTest : public ::testing::TestWithParam<Transport> {
 protected:
  void StartServer(const config::TransportConfig& config,
                   VersionTwoOptions v2 = {}) {
    ServerOptions options;
    options.version_two = std::move(v2);
    auto server = Server::Create(
        GetParam().listen_uri(), config,
        [this](IncomingCall call, Responder responder) {
          connection_ = call.connection;
          const uint32_t n = call.message.size() >= 28
                                 ? LoadBigEndian32(call.message.data() + 24)
                                 : 0;
          HandlerReply reply;
          reply.xdr = Bulk(call.xid, n);
          EXPECT_TRUE(responder.Send(std::move(reply)).ok());
        },
        std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void Connect(const config::TransportConfig& config,
               VersionTwoOptions v2 = {}) {
    ChannelOptions options;
    options.version_two = std::move(v2);
    auto channel = Channel::Create(server_->uri(), config, std::move(options));
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
    // One call: the grant rises to every credit, and the Server's id of
    // the connection is known.
    absl::StatusOr<Reply> r = channel_->BlockingCall(BulkCall(0xC0, 0));
    ASSERT_TRUE(r.ok()) << r.status();
  }
  ConnectionInfo ServerInfo() {
    absl::StatusOr<ConnectionInfo> info = server_->connection_info(connection_);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.value_or(ConnectionInfo{});
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Channel> channel_;
  std::atomic<ConnectionId> connection_{ConnectionId()};
};

// §5.3.4 with §5.2.1: the Channel raises its receive buffer size while
// calls whose 10000-octet replies exceed the old one keep going; none is
// lost, and once the Server has taken the update those replies come
// inline instead of through reply chunks. Neither side lowers it unasked
// or raises it beyond the receives it posted.
TEST_P(VersionTwoApiTest, V2Draft_5_3_4_ChannelRaisesItsReceiveSizeUnderLoad) {
  config::TransportConfig server = V2Config();
  server.mutable_inline_threshold()->set_send(16384);
  StartServer(server);
  config::TransportConfig client = V2Config();
  client.mutable_inline_threshold()->set_receive_grantable(16384);
  Connect(client);
  ASSERT_EQ(channel_->connection_info().receive_threshold, 4096u);

  std::mutex mu;
  std::condition_variable cv;
  uint64_t done = 0, failed = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> next_xid{0x1000};
  std::atomic<int> in_flight{0};
  std::function<void()> issue = [&] {
    const uint32_t xid = next_xid++;
    ++in_flight;
    channel_->Call(BulkCall(xid, 10000), [&, xid](absl::StatusOr<Reply> r) {
      const bool ok = r.ok() && r->xdr == Bulk(xid, 10000);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++done;
        if (!ok) {
          ++failed;
          ADD_FAILURE() << "call " << xid << ": "
                        << (r.ok() ? "wrong reply" : r.status().ToString());
        }
      }
      cv.notify_all();
      if (!stop) issue();  // keeps the load up
      --in_flight;
    });
  };
  for (int i = 0; i < 12; ++i) issue();
  auto wait_done = [&](uint64_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60),
                       [&] { return done >= n; });
  };
  ASSERT_TRUE(wait_done(100));
  EXPECT_EQ(channel_->UpdateReceiveSize(2048).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(channel_->UpdateReceiveSize(32768).code(),
            absl::StatusCode::kFailedPrecondition);
  const absl::Status updated = channel_->UpdateReceiveSize(16384);
  EXPECT_TRUE(updated.ok()) << updated;
  uint64_t at_update;
  {
    std::lock_guard<std::mutex> lock(mu);
    at_update = done;
  }
  ASSERT_TRUE(wait_done(at_update + 100));
  stop = true;
  while (in_flight > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(failed, 0u);

  EXPECT_EQ(channel_->connection_info().receive_threshold, 16384u);
  const ConnectionInfo seen = ServerInfo();
  EXPECT_EQ(seen.peer_receive_buffer_size, 16384u);
  EXPECT_EQ(seen.send_threshold, 16384u);
  const Counters before = channel_->counters();
  absl::StatusOr<Reply> r = channel_->BlockingCall(BulkCall(0xD0, 10000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, Bulk(0xD0, 10000));
  const Counters after = channel_->counters();
  EXPECT_EQ(after.reply_chunks, before.reply_chunks);
  EXPECT_EQ(after.long_replies, before.long_replies);
  EXPECT_GT(before.long_replies, 0u);  // before the update they were long
}

// §5.3.4 the other way: the Server raises its receive buffer size on one
// connection; the Channel then sends a 10000-octet call inline.
TEST_P(VersionTwoApiTest, V2Draft_5_3_4_ServerRaisesItsReceiveSize) {
  config::TransportConfig server = V2Config();
  server.mutable_inline_threshold()->set_receive_grantable(16384);
  StartServer(server);
  config::TransportConfig client = V2Config();
  client.mutable_inline_threshold()->set_send(16384);
  Connect(client);
  EXPECT_EQ(channel_->connection_info().send_threshold, 4096u);
  const absl::Status s = server_->UpdateReceiveSize(connection_, 16384);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(ServerInfo().receive_threshold, 16384u);
  EXPECT_EQ(channel_->connection_info().peer_receive_buffer_size, 16384u);
  EXPECT_EQ(channel_->connection_info().send_threshold, 16384u);
  const Counters before = channel_->counters();
  CallRequest call = BulkCall(0xD1, 0);
  call.xdr.resize(10000, 0x11);
  absl::StatusOr<Reply> r = channel_->BlockingCall(std::move(call));
  ASSERT_TRUE(r.ok()) << r.status();
  const Counters after = channel_->counters();
  EXPECT_EQ(after.inline_calls, before.inline_calls + 1);
  EXPECT_EQ(after.long_calls, before.long_calls);
  EXPECT_EQ(server_
                ->UpdateReceiveSize(
                    ConnectionId(connection_.load().value() + 100), 16384)
                .code(),
            absl::StatusCode::kNotFound);
}

// §5.4.2 with §5.3.1 and §5.3.4: each side's experimental properties reach
// the other at connect and when updated; one not stated at connect cannot
// change, and an id outside the experimental range is no user's.
TEST_P(VersionTwoApiTest, V2Draft_5_4_2_ExperimentalPropertiesBothWays) {
  StartServer(V2Config(), VersionTwoOptions{{{kPropB, {2}}}, {}, nullptr});
  Connect(V2Config(), VersionTwoOptions{{{kPropA, {1}}}, {}, nullptr});
  using Props = std::vector<TransportProperty>;
  EXPECT_EQ(channel_->connection_info().properties, (Props{{kPropA, {1}}}));
  EXPECT_EQ(channel_->connection_info().peer_properties,
            (Props{{kPropB, {2}}}));
  EXPECT_EQ(ServerInfo().peer_properties, (Props{{kPropA, {1}}}));

  ASSERT_TRUE(channel_->UpdateProperties({{kPropA, {3}}}).ok());
  EXPECT_EQ(channel_->connection_info().properties, (Props{{kPropA, {3}}}));
  EXPECT_EQ(ServerInfo().peer_properties, (Props{{kPropA, {3}}}));
  ASSERT_TRUE(server_->UpdateProperties(connection_, {{kPropB, {4}}}).ok());
  EXPECT_EQ(channel_->connection_info().peer_properties,
            (Props{{kPropB, {4}}}));

  EXPECT_EQ(channel_->UpdateProperties({{kPropB, {5}}}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(channel_->UpdateProperties({{5, {5}}}).code(),
            absl::StatusCode::kInvalidArgument);
}

// §5.4.2 with §5.3.2 and §5.3.3: a request to change an experimental
// property is decided by the peer's PropertyDecider: as asked, another
// value (rdma_other), or rejected; both roles ask.
TEST_P(VersionTwoApiTest, V2Draft_5_4_2_RequestsDecidedByThePeer) {
  auto decider = [](ConnectionId, const TransportProperty& wanted)
      -> std::optional<std::vector<uint8_t>> {
    if (wanted.value == std::vector<uint8_t>{0xFF}) return std::nullopt;
    if (wanted.value.at(0) >= 10) return std::vector<uint8_t>{9};
    return wanted.value;
  };
  StartServer(V2Config(), VersionTwoOptions{{{kPropB, {2}}}, {}, decider});
  Connect(V2Config(), VersionTwoOptions{{{kPropA, {1}}}, {}, decider});

  absl::StatusOr<PropertyAnswer> a =
      channel_->RequestPeerProperties({{kPropB, {5}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->done, std::vector<bool>{true});
  EXPECT_TRUE(a->other.empty());
  EXPECT_EQ(ServerInfo().properties,
            (std::vector<TransportProperty>{{kPropB, {5}}}));
  EXPECT_EQ(channel_->connection_info().peer_properties,
            (std::vector<TransportProperty>{{kPropB, {5}}}));

  a = channel_->RequestPeerProperties({{kPropB, {20}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->done, std::vector<bool>{false});
  EXPECT_EQ(a->other, (std::vector<TransportProperty>{{kPropB, {9}}}));

  a = server_->RequestPeerProperties(connection_, {{kPropA, {0xFF}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->done, std::vector<bool>{false});
  EXPECT_TRUE(a->other.empty());
  a = server_->RequestPeerProperties(connection_, {{kPropA, {7}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->done, std::vector<bool>{true});
  EXPECT_EQ(channel_->connection_info().properties,
            (std::vector<TransportProperty>{{kPropA, {7}}}));

  // §5.3.1: what the peer did not state may not be requested.
  EXPECT_EQ(channel_->RequestPeerProperties({{kPropA, {1}}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// §4.1 and §6.2.4: optional messages both ways, answered by the peer's
// handler; a type it does not serve is UNIMPLEMENTED
// (RDMA2_ERR_INVALID_OPTION), a failing handler INTERNAL
// (RDMA2_ERR_SYSTEM), one of Table 2's types INVALID_ARGUMENT.
TEST_P(VersionTwoApiTest, V2Draft_4_1_OptionalMessagesBothWays) {
  auto handler =
      [](ConnectionId,
         const OptionalMessage& m) -> absl::StatusOr<OptionalMessage> {
    if (m.info == std::vector<uint8_t>{0xEE}) {
      return absl::InternalError("the handler fails");
    }
    OptionalMessage answer;
    answer.info = std::vector<uint8_t>(m.info.rbegin(), m.info.rend());
    answer.payload = m.payload;
    answer.payload.push_back(0x99);
    return answer;
  };
  StartServer(V2Config(), VersionTwoOptions{{}, {{kType, handler}}, nullptr});
  Connect(V2Config(), VersionTwoOptions{{}, {{kType, handler}}, nullptr});
  const OptionalMessage message{kType, {1, 2, 3}, {7, 8}};
  for (bool from_channel : {true, false}) {
    SCOPED_TRACE(from_channel);
    auto send = [&](OptionalMessage m) {
      return from_channel ? channel_->SendOptional(std::move(m))
                          : server_->SendOptional(connection_, std::move(m));
    };
    absl::StatusOr<OptionalMessage> answer = send(message);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->type, kType);
    EXPECT_EQ(answer->info, (std::vector<uint8_t>{3, 2, 1}));
    EXPECT_EQ(answer->payload, (std::vector<uint8_t>{7, 8, 0x99}));
    EXPECT_EQ(send({kType + 1, {}, {}}).status().code(),
              absl::StatusCode::kUnimplemented);
    EXPECT_EQ(send({kType, {0xEE}, {}}).status().code(),
              absl::StatusCode::kInternal);
    EXPECT_EQ(send({2, {}, {}}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // The connection carries calls as before.
  EXPECT_TRUE(channel_->BlockingCall(BulkCall(0xD2, 100)).ok());
}

// Each version-two method waits for the peer's answer until its deadline
// (types.h Deadline), as a call does: an optional message (§4.1) whose
// handler has not answered by then is DEADLINE_EXCEEDED once the deadline
// has passed, not before, and the connection goes on carrying calls.
TEST_P(VersionTwoApiTest,
       V2Draft_4_1_AnUnansweredOptionalMessageEndsAtItsDeadline) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  auto held = [gate](
                  ConnectionId,
                  const OptionalMessage& m) -> absl::StatusOr<OptionalMessage> {
    std::unique_lock<std::mutex> lock(gate->mu);
    gate->cv.wait(lock, [&] { return gate->open; });
    return m;
  };
  StartServer(V2Config(), VersionTwoOptions{{}, {{kType, held}}, nullptr});
  Connect(V2Config());
  const Deadline deadline = DeadlineIn(std::chrono::milliseconds(300));
  absl::StatusOr<OptionalMessage> answer =
      channel_->SendOptional({kType, {1}, {}}, deadline);
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDeadlineExceeded)
      << answer.status();
  // A deadline already passed gives up at once, answered or not.
  EXPECT_EQ(
      channel_->SendOptional({kType, {2}, {}}, std::chrono::steady_clock::now())
          .status()
          .code(),
      absl::StatusCode::kDeadlineExceeded);
  {
    std::lock_guard<std::mutex> lock(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  EXPECT_TRUE(channel_->BlockingCall(BulkCall(0xD3, 100)).ok());
}

// Outside version two there are no properties or optional messages; bad
// options are refused by Create, naming them.
TEST_P(VersionTwoApiTest, V2Draft_5_4_2_OptionsCheckedAndVersionOneRefused) {
  config::TransportConfig v1 = V2Config();
  v1.set_version_policy(config::TransportConfig::V1);
  StartServer(v1);
  auto bad = Channel::Create(
      server_->uri(), v1,
      ChannelOptions{nullptr, nullptr, VersionTwoOptions{{{7, {}}}, {}, {}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("version_two.properties[0]"),
            std::string::npos)
      << bad.status();
  ServerOptions options;
  options.version_two.optional_handlers[1] =
      [](ConnectionId, const OptionalMessage& m) { return m; };
  auto bad_server = Server::Create(
      GetParam().listen_uri(), v1, [](IncomingCall, Responder) {}, options);
  EXPECT_EQ(bad_server.status().code(), absl::StatusCode::kInvalidArgument);
  Connect(v1);
  EXPECT_EQ(channel_->UpdateReceiveSize(8192).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(channel_->SendOptional({kType, {}, {}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(server_->SendOptional(connection_, {kType, {}, {}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// §6.2: a session in which every message kind of version two travels
// (interop/xdr_v2/v2_live_session.h) runs over this transport. With
// RPCRDMA_V2_CAPTURE set (api.verbs in the VM) its capture stays there for
// rpcgen's decoders and the Lua dissector (ctest v2.vm_capture.*).
TEST_P(VersionTwoApiTest, V2Draft_6_2_EveryMessageKindTravelsLive) {
  std::string capture = test::V2CaptureFromEnvironment();
  const bool keep = !capture.empty();
  if (!keep) {
    capture =
        ::testing::TempDir() + absl::StrCat("rpcrdma-v2-live-", getpid(), "-",
                                            GetParam().name, ".pcap");
  }
  const absl::Status session =
      test::RunV2LiveSession(GetParam().listen_uri(), capture);
  EXPECT_TRUE(session.ok()) << session;
  struct stat st {};
  ASSERT_EQ(stat(capture.c_str(), &st), 0) << capture;
  EXPECT_GT(st.st_size, 4096) << capture;
  if (!keep) std::remove(capture.c_str());
}

#ifndef RPCRDMA_API_TEST_VERBS
INSTANTIATE_TEST_SUITE_P(
    VersionTwo, VersionTwoApiTest,
    ::testing::Values(
        Transport{"SoftUnix", [] { return test::UniqueUnixUri("v2"); }},
        Transport{"SoftTcp",
                  [] { return std::string("soft+tcp://127.0.0.1:0"); }}),
    TransportName);
#else
INSTANTIATE_TEST_SUITE_P(
    VersionTwo, VersionTwoApiTest,
    ::testing::Values(Transport{
        "Rdma",
        [] { return absl::StrCat("rdma://", test::RdmaTestHost(), ":0"); }}),
    TransportName);
#endif

}  // namespace
}  // namespace rpcrdma
