// The Prometheus exporter (rpcrdma/prometheus.h): a Server and a Channel
// make calls over the soft fabric, the exporter is scraped over HTTP on
// loopback, and the counter values and histogram lines match what the
// Channel and Server report through the API.
#include "rpcrdma/prometheus.h"

#include <chrono>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/api/http_client.h"

namespace rpcrdma {
namespace {

// GET /metrics from 127.0.0.1:port; the body, or "" on failure.
std::string HttpGet(uint16_t port) {
  return test::OkBody(test::Get(test::ConnectFrom("127.0.0.1", port)));
}

// Sample lines: "name{labels} value" keyed by "name{labels}".
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(PrometheusExporter, ScrapeOverHttpShowsCountersAndHistograms) {
  config::TransportConfig config;
  auto server = Server::Create(
      "soft+tcp://127.0.0.1:0", config, [](IncomingCall call, Responder r) {
        HandlerReply reply;
        reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
        (void)r.Send(std::move(reply));
      });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  constexpr uint32_t kCalls = 7;
  for (uint32_t xid = 1; xid <= kCalls; ++xid) {
    CallRequest req;
    req.xdr = test::MinimalCallStream(xid);
    req.max_reply_size = 64;
    auto f = (*channel)->Call(std::move(req));
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_TRUE(f.get().ok());
  }
  absl::StatusOr<std::unique_ptr<PrometheusExporter>> exporter =
      PrometheusExporter::Create("127.0.0.1:0");
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  ASSERT_NE((*exporter)->port(), 0);
  ASSERT_TRUE((*exporter)->Register(**channel, {{"peer", "s1"}}).ok());
  ASSERT_TRUE((*exporter)->Register(**server, {{"listener", "main"}}).ok());
  EXPECT_EQ((*exporter)->Register(**server).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*exporter)->Register(**channel, {{"le", "x"}}).code(),
            absl::StatusCode::kInvalidArgument);

  // The server counts a reply when its Send is posted and records its
  // reply time when the Send has completed: wait for both.
  const uint64_t connection =
      (*server)->metrics().connections.at(0).connection.value();
  const std::string server_replies =
      "rpcrdma_replies_total{listener=\"main\",role=\"server\"}";
  const std::string server_reply_times = absl::StrCat(
      "rpcrdma_reply_time_seconds_count{listener=\"main\",role=\"server\","
      "connection=\"",
      connection, "\"}");
  std::string body;
  std::map<std::string, std::string> samples;
  for (int i = 0; i < 200; ++i) {
    body = HttpGet((*exporter)->port());
    samples = Samples(body);
    if (samples[server_replies] == "7" && samples[server_reply_times] == "7") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(body.empty());
  EXPECT_EQ(samples["rpcrdma_calls_total{peer=\"s1\",role=\"channel\"}"], "7")
      << body;
  EXPECT_EQ(samples["rpcrdma_replies_total{peer=\"s1\",role=\"channel\"}"],
            "7");
  EXPECT_EQ(samples["rpcrdma_calls_total{listener=\"main\",role=\"server\"}"],
            "7");
  EXPECT_EQ(samples[server_replies], "7");
  EXPECT_EQ(samples["rpcrdma_inline_calls_total{peer=\"s1\",role=\"channel\"}"],
            "7");
  EXPECT_EQ(samples["rpcrdma_errors_sent_total{peer=\"s1\",role=\"channel\"}"],
            "0");
  EXPECT_EQ(samples["rpcrdma_connections{listener=\"main\",role=\"server\"}"],
            "1");
  EXPECT_EQ(samples["rpcrdma_credits_granted{peer=\"s1\",role=\"channel\"}"],
            absl::StrCat((*channel)->counters().credits_granted));
  // The Channel's call round trips: count, +Inf bucket and a sum.
  const std::string rtt = "rpcrdma_call_rtt_seconds";
  const std::string labels = "peer=\"s1\",role=\"channel\",connection=\"1\"";
  EXPECT_EQ(samples[absl::StrCat(rtt, "_count{", labels, "}")], "7") << body;
  EXPECT_EQ(samples[absl::StrCat(rtt, "_bucket{", labels, ",le=\"+Inf\"}")],
            "7");
  EXPECT_TRUE(samples.count(absl::StrCat(rtt, "_sum{", labels, "}")));
  // Every finite bucket and one +Inf bucket per series.
  size_t inf_lines = 0;
  for (size_t at =
           body.find(absl::StrCat(rtt, "_bucket{", labels, ",le=\"+Inf\"}"));
       at != std::string::npos;
       at = body.find(absl::StrCat(rtt, "_bucket{", labels, ",le=\"+Inf\"}"),
                      at + 1)) {
    ++inf_lines;
  }
  EXPECT_EQ(inf_lines, 1u) << body;
  EXPECT_TRUE(
      samples.count(absl::StrCat(rtt, "_bucket{", labels, ",le=\"1e-06\"}")))
      << body;
  EXPECT_TRUE(
      absl::StrContains(body, "# TYPE rpcrdma_call_rtt_seconds histogram"));
  EXPECT_TRUE(absl::StrContains(body, "# TYPE rpcrdma_calls_total counter"));
  // The server's reply times, on its one connection.
  EXPECT_EQ(samples[server_reply_times], "7") << body;

  // Unregistered: its series are gone.
  (*exporter)->Unregister(**channel);
  EXPECT_FALSE(absl::StrContains((*exporter)->Scrape(), "role=\"channel\""));
  EXPECT_TRUE(absl::StrContains((*exporter)->Scrape(), "role=\"server\""));
}

TEST(PrometheusExporter, MalformedListenAddressIsInvalidArgument) {
  for (const char* address :
       {"256.0.0.1:1", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1:x",
        "[::1:9100", "::1:9100", ":9100", ""}) {
    auto exporter = PrometheusExporter::Create(address);
    EXPECT_EQ(exporter.status().code(), absl::StatusCode::kInvalidArgument)
        << address << ": " << exporter.status();
  }
}

TEST(PrometheusExporter, AddressNotOfThisHostOrInUseIsUnavailable) {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): no interface of this host has it.
  auto elsewhere = PrometheusExporter::Create("192.0.2.1:9100");
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kUnavailable)
      << elsewhere.status();
  auto first = PrometheusExporter::Create("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      PrometheusExporter::Create(absl::StrCat("127.0.0.1:", (*first)->port()));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable)
      << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), "cannot listen"))
      << second.status();
}

}  // namespace
}  // namespace rpcrdma
