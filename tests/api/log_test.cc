// The library's log (rpcrdma/log.h) seen through a sink, end to end over
// the soft fabric: a connection broken by fault injection is reported and
// the reconnect carries its cause; an RDMA_ERROR ERR_CHUNK (a reply larger
// than the write chunk the call offered, RFC 8166 §4.5.2) is reported by
// the side that sends it and by the side that receives it.
#include "rpcrdma/log.h"

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "plugin/api/connection.h"
#include "plugin/fabric/fabric_factory_testing.h"
#include "plugin/log/logging.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"

namespace rpcrdma {
namespace {

using std::chrono::milliseconds;

struct Line {
  LogSeverity severity;
  std::string message;
  std::string file;
  ConnectionId connection;
};

class CapturingSink : public LogSink {
 public:
  void Write(const LogRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({record.severity, std::string(record.message),
                      std::string(record.file), record.connection});
  }
  std::vector<Line> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // Waits up to 20 s for a line containing every one of `parts`.
  std::optional<Line> Await(std::vector<std::string> parts) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      for (const Line& l : lines()) {
        bool all = true;
        for (const std::string& p : parts)
          all &= absl::StrContains(l.message, p);
        if (all) return l;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    return std::nullopt;
  }

 private:
  std::mutex mu_;
  std::vector<Line> lines_;
};

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sink_ = std::make_shared<CapturingSink>();
    SetLogSink(sink_);
    SetMinLogSeverity(LogSeverity::kInfo);
  }
  void TearDown() override {
    fabric::SetSoftFabricOptionsForTesting(std::nullopt);
    SetMinLogSeverity(LogSeverity::kWarning);
    SetLogSink(nullptr);
  }
  std::shared_ptr<CapturingSink> sink_;
};

std::vector<uint8_t> Call(uint32_t xid) { return test::MinimalCallStream(xid); }

config::TransportConfig FastReconnect() {
  config::TransportConfig c;
  c.mutable_timeouts()->set_reconnect_backoff_initial_ms(10);
  c.mutable_timeouts()->set_reconnect_backoff_max_ms(40);
  return c;
}

TEST_F(LogTest, SinkReceivesConnectionLossAndReconnectWithCause) {
  // The server's second Send (the reply to the second call) cuts its
  // connection, as a broken link would; the Channel reconnects.
  fabric::SoftFabricOptions faults;
  faults.break_at_operation = 2;
  fabric::SetSoftFabricOptionsForTesting(faults);
  const config::TransportConfig config = FastReconnect();
  auto server = Server::Create(
      "soft+tcp://127.0.0.1:0", config, [](IncomingCall call, Responder r) {
        HandlerReply reply;
        reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
        (void)r.Send(std::move(reply));
      });
  ASSERT_TRUE(server.ok()) << server.status();
  fabric::SetSoftFabricOptionsForTesting(std::nullopt);
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  ASSERT_TRUE(sink_->Await({"connection up", "version 1"}));

  for (uint32_t xid : {1u, 2u}) {
    CallRequest req;
    req.xdr = Call(xid);
    req.max_reply_size = 64;
    req.retry_on_reconnect = true;
    auto f = (*channel)->Call(std::move(req));
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    // The second call's reply is lost with the connection; it is sent
    // again after the reconnect and its reply then arrives on a fresh
    // connection of the server (whose own second Send is still ahead).
    EXPECT_TRUE(f.get().ok()) << xid;
  }
  std::optional<Line> lost = sink_->Await({"channel to ", "connection lost: "});
  ASSERT_TRUE(lost) << "no loss line";
  EXPECT_EQ(lost->severity, LogSeverity::kWarning);
  EXPECT_EQ(lost->connection, ConnectionId(1));
  std::optional<Line> reconnected = sink_->Await({"reconnected"});
  ASSERT_TRUE(reconnected) << "no reconnect line";
  EXPECT_EQ(reconnected->severity, LogSeverity::kWarning);
  EXPECT_EQ(reconnected->connection, ConnectionId(2));
  // The cause travels with the reconnect line.
  EXPECT_TRUE(absl::StrContains(reconnected->message, "connection event"))
      << reconnected->message;
  EXPECT_EQ(reconnected->file, "channel_connect.cc");
  EXPECT_EQ((*channel)->counters().reconnects, 1u);
}

// A Server over soft+tcp whose replies carry a 200-octet result, and a
// call `xid` that offers it a write chunk of 100 octets and no reply chunk:
// ERR_CHUNK (RFC 8166 §4.5.2). Both ends stay up for the log lines.
struct OversizedResult {
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
  absl::Status status;  // the call's
};
OversizedResult CallWithOversizedResult(uint32_t xid) {
  OversizedResult out;
  const config::TransportConfig config;
  auto server = Server::Create(
      "soft+tcp://127.0.0.1:0", config, [](IncomingCall call, Responder r) {
        HandlerReply reply;
        reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
        reply.xdr.insert(reply.xdr.end(), {0, 0, 0, 200});
        reply.results.push_back({8, std::vector<uint8_t>(200, 7)});
        (void)r.Send(std::move(reply));
      });
  if (!server.ok()) {
    out.status = server.status();
    return out;
  }
  out.server = *std::move(server);
  auto channel = Channel::Create(out.server->uri(), config);
  if (!channel.ok()) {
    out.status = channel.status();
    return out;
  }
  out.channel = *std::move(channel);
  std::vector<uint8_t> result(100);
  CallRequest req;
  req.xdr = Call(xid);
  req.results.push_back(absl::MakeSpan(result));
  req.max_reply_size = 64;
  auto f = out.channel->Call(std::move(req));
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    out.status = absl::DeadlineExceededError("no answer within 30 s");
    return out;
  }
  out.status = f.get().status();
  return out;
}

TEST_F(LogTest, SinkReceivesErrChunkSentAndReceived) {
  const OversizedResult call = CallWithOversizedResult(0xC4);
  ASSERT_NE(call.channel, nullptr) << call.status;
  EXPECT_EQ(call.status.code(), absl::StatusCode::kInvalidArgument);

  std::optional<Line> sent =
      sink_->Await({"sent RDMA_ERROR ERR_CHUNK for XID 0xc4", "does not fit"});
  ASSERT_TRUE(sent) << "no sent line";
  EXPECT_EQ(sent->severity, LogSeverity::kWarning);
  EXPECT_EQ(sent->connection, ConnectionId(1));
  EXPECT_TRUE(absl::StartsWith(sent->message, "server soft+tcp://"))
      << sent->message;
  std::optional<Line> received =
      sink_->Await({"received RDMA_ERROR ERR_CHUNK for XID 0xc4"});
  ASSERT_TRUE(received) << "no received line";
  EXPECT_EQ(received->severity, LogSeverity::kWarning);
  EXPECT_TRUE(absl::StartsWith(received->message, "channel to soft+tcp://"))
      << received->message;
}

// A reply larger than the inline threshold and the reply chunk the call
// offered is answered ERR_CHUNK (RFC 8166 §4.5.2). The server's line names
// the reply's size, what the call offered and what the client raises; the
// call fails saying what it offered and what to raise, and keeps the
// "ERR_CHUNK" token the Thrift bridge looks for.
TEST_F(LogTest, Rfc8166_4_5_2_ErrChunkSaysSizesOfferedAndWhatToRaise) {
  const config::TransportConfig config;
  auto server = Server::Create(
      "soft+tcp://127.0.0.1:0", config, [](IncomingCall call, Responder r) {
        HandlerReply reply;
        reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
        reply.xdr.resize(30000, 9);
        (void)r.Send(std::move(reply));
      });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  // Both sides' inline threshold: the negotiated one (RFC 8797 §4.2).
  const uint32_t threshold = (*channel)->connection_info().receive_threshold;
  ASSERT_LT(threshold, 20000u);
  CallRequest req;
  req.xdr = Call(0xC5);
  req.max_reply_size = 20000;  // a reply chunk of 20000 octets
  auto f = (*channel)->Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const absl::Status status = f.get().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& part :
       {std::string("ERR_CHUNK"),
        absl::StrCat("the server could not send it within what this call "
                     "offered: inline up to ",
                     threshold,
                     " octets (the inline threshold), a reply chunk of 20000 "
                     "octets"),
        std::string("raise CallRequest::max_reply_size"),
        std::string("DDP policy")}) {
    EXPECT_TRUE(absl::StrContains(status.message(), part))
        << part << " not in: " << status.message();
  }

  std::optional<Line> sent = sink_->Await(
      {"sent RDMA_ERROR ERR_CHUNK for XID 0xc5", "does not fit",
       "the reply is 30000 octets",
       absl::StrCat("the call offered inline up to ", threshold,
                    " octets (the inline threshold), a reply chunk of 20000 "
                    "octets, 0 write chunks"),
       "offer room for 30000 octets", "CallRequest::max_reply_size",
       "DDP policy"});
  ASSERT_TRUE(sent) << "no sent line naming the sizes";
  EXPECT_EQ(sent->severity, LogSeverity::kWarning);
}

// A result larger than its write chunk (RFC 8166 §4.5.2): the server's
// line names the result, the write chunk's size and what to raise.
TEST_F(LogTest, Rfc8166_4_5_2_ErrChunkForAWriteChunkNamesItsSize) {
  const OversizedResult call = CallWithOversizedResult(0xC6);
  ASSERT_NE(call.channel, nullptr) << call.status;
  const absl::Status& status = call.status;
  EXPECT_TRUE(absl::StrContains(status.message(),
                                "no reply chunk (max_reply_size 64), 1 write "
                                "chunks of 100 octets"))
      << status.message();
  std::optional<Line> sent = sink_->Await(
      {"sent RDMA_ERROR ERR_CHUNK for XID 0xc6",
       "result 0 of the reply is 200 octets, more than write chunk 0 holds",
       "no reply chunk, 1 write chunks of 100 octets",
       "offer room for 200 octets"});
  ASSERT_TRUE(sent) << "no sent line naming the write chunk";
}

TEST_F(LogTest, RejectedConfigurationIsAnError) {
  config::TransportConfig bad;
  bad.mutable_credits()->set_max_requests(0);
  auto channel = Channel::Create("soft+unix://@rpcrdma-log-test", bad);
  ASSERT_FALSE(channel.ok());
  std::optional<Line> line =
      sink_->Await({"rejected configuration", "credits.max_requests"});
  ASSERT_TRUE(line);
  EXPECT_EQ(line->severity, LogSeverity::kError);
}

TEST_F(LogTest, MinSeverityDropsRecordsBeforeTheSink) {
  SetMinLogSeverity(LogSeverity::kError);
  RPCRDMA_LOG(kWarning, 0, "dropped");
  RPCRDMA_LOG(kError, 7, "kept ", 42);
  std::vector<Line> lines = sink_->lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].message, "kept 42");
  EXPECT_EQ(lines[0].connection, ConnectionId(7));
  EXPECT_EQ(lines[0].file, "log_test.cc");
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kError);
}

TEST_F(LogTest, SetLogSinkReturnsThePreviousSink) {
  auto other = std::make_shared<CapturingSink>();
  EXPECT_EQ(SetLogSink(other), sink_);
  RPCRDMA_LOG(kWarning, 0, "to the other sink");
  EXPECT_EQ(other->lines().size(), 1u);
  EXPECT_TRUE(sink_->lines().empty());
  EXPECT_EQ(SetLogSink(sink_), other);
}

TEST(LogDeathTest, FatalLogsBeforeAbort) {
  EXPECT_DEATH(RPCRDMA_LOG_FATAL("invariant broken: ", 3),
               "ERROR log_test.cc:[0-9]+ invariant broken: 3");
}

}  // namespace
}  // namespace rpcrdma
