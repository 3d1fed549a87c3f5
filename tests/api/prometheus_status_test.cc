// The exporter's /status page (rpcrdma/prometheus.h): a Server and a
// Channel make calls over the soft fabric, and /status?format=json and
// /status, fetched over HTTP, show every documented field with the values
// the API reports, and application strings only as text.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rpcrdma/prometheus.h"
#include "tests/api/http_client.h"
#include "tests/api/status_fixture.h"

namespace rpcrdma {
namespace {

using nlohmann::json;
using test::kHostileLabel;

// The status line and headers of `response`, lower-cased (header names
// are case-insensitive).
std::string Headers(const std::string& response) {
  return absl::AsciiStrToLower(response.substr(0, response.find("\r\n\r\n")));
}

// Every Counters field, by the name /status gives it.
const std::vector<std::string> kCounterNames = {
    "calls",
    "replies",
    "inline_calls",
    "read_chunk_calls",
    "read_chunks",
    "write_chunks",
    "reply_chunks",
    "long_calls",
    "long_replies",
    "remote_invalidations",
    "errors_sent",
    "errors_received",
    "reconnects",
    "backward_calls",
    "backward_replies",
    "protocol_closes",
    "abandoned_call_disconnects",
    "idle_closes",
    "handshake_timeouts",
    "connections_rejected",
    "accept_errors",
    "credits_granted",
    "peak_calls_outstanding",
};

void ExpectHistogram(const json& h, uint64_t count) {
  ASSERT_TRUE(h.is_object()) << h;
  EXPECT_EQ(h.at("count"), count);
  EXPECT_TRUE(h.at("sum_ns").is_number_unsigned());
  const json& buckets = h.at("buckets");
  ASSERT_EQ(buckets.size(), LatencyHistogram::kBuckets);
  uint64_t total = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    total += buckets[i].at("count").get<uint64_t>();
    if (i + 1 < buckets.size()) {
      EXPECT_EQ(buckets[i].at("le_us"), uint64_t{1} << i);
    } else {
      EXPECT_TRUE(buckets[i].at("le_us").is_null());
    }
  }
  EXPECT_EQ(total, count);
}

void ExpectSettled(const json& settled, const ConnectionInfo& info) {
  ASSERT_TRUE(settled.is_object()) << settled;
  EXPECT_EQ(settled.at("version"), info.version);
  EXPECT_EQ(settled.at("offered_version"), info.offered_version);
  EXPECT_EQ(settled.at("peer_version_low"), info.peer_version_low);
  EXPECT_EQ(settled.at("peer_version_high"), info.peer_version_high);
  EXPECT_EQ(settled.at("send_threshold"), info.send_threshold);
  EXPECT_EQ(settled.at("receive_threshold"), info.receive_threshold);
  EXPECT_EQ(settled.at("max_inline_reply"), info.max_inline_reply);
  EXPECT_EQ(settled.at("max_segment_size"), info.max_segment_size);
  EXPECT_EQ(settled.at("remote_invalidation"), info.remote_invalidation);
  EXPECT_EQ(settled.at("peer_private_data"), info.peer_private_data);
  EXPECT_EQ(settled.at("peer_send_size"), info.peer_send_size);
  EXPECT_EQ(settled.at("peer_receive_size"), info.peer_receive_size);
  EXPECT_EQ(settled.at("peer_remote_invalidation"),
            info.peer_remote_invalidation);
  EXPECT_EQ(settled.at("peer_receive_buffer_size"),
            info.peer_receive_buffer_size);
  EXPECT_TRUE(settled.at("properties").is_array());
  EXPECT_TRUE(settled.at("peer_properties").is_array());
}

class PrometheusStatus : public ::testing::Test {
 protected:
  static constexpr uint32_t kCalls = 5;

  void SetUp() override {
    peers_ = test::Connect("unit");
    ASSERT_NE(peers_.channel, nullptr);
    for (uint32_t xid = 1; xid <= kCalls; ++xid) {
      ASSERT_TRUE(test::CallOnce(*peers_.channel, xid));
    }
    ASSERT_TRUE(test::WaitForServerReplies(*peers_.server, kCalls));
    auto exporter = PrometheusExporter::Create("127.0.0.1:0");
    ASSERT_TRUE(exporter.ok()) << exporter.status();
    exporter_ = *std::move(exporter);
    ASSERT_TRUE(exporter_
                    ->Register(*peers_.server,
                               {{"service", kHostileLabel}, {"zone", "a"}})
                    .ok());
    ASSERT_TRUE(exporter_->Register(*peers_.channel, {{"peer", "s1"}}).ok());
  }

  test::Peers peers_;
  std::unique_ptr<PrometheusExporter> exporter_;
};

TEST_F(PrometheusStatus, JsonOverHttpHasEveryFieldAsTheApiReportsIt) {
  const std::string response =
      test::HttpGet(exporter_->port(), "/status?format=json");
  ASSERT_EQ(test::StatusLine(response), "HTTP/1.1 200 OK") << response;
  EXPECT_TRUE(
      absl::StrContains(Headers(response), "content-type: application/json"))
      << Headers(response);
  const json status = json::parse(test::OkBody(response));
  const json& sources = status.at("sources");
  ASSERT_EQ(sources.size(), 2u) << status;

  // Registration order; labels exactly as given, role beside them.
  const json& server = sources[0];
  EXPECT_EQ(server.at("role"), "server");
  EXPECT_EQ(server.at("labels"),
            json({{"service", kHostileLabel}, {"zone", "a"}}));
  EXPECT_EQ(server.at("uri"), peers_.server->uri());
  EXPECT_EQ(server.at("connected"), true);
  const json& channel = sources[1];
  EXPECT_EQ(channel.at("role"), "channel");
  EXPECT_EQ(channel.at("labels"), json({{"peer", "s1"}}));
  EXPECT_TRUE(channel.at("uri").is_null());
  EXPECT_EQ(channel.at("connected"), true);

  for (const json* source : {&server, &channel}) {
    for (const std::string& name : kCounterNames) {
      EXPECT_TRUE(source->at("counters").contains(name)) << name;
    }
    EXPECT_EQ(source->at("counters").at("calls"), kCalls);
    EXPECT_EQ(source->at("counters").at("replies"), kCalls);
    EXPECT_EQ(source->at("unanswered_calls"), 0u);
    ASSERT_EQ(source->at("connections").size(), 1u) << *source;
    const json& connection = source->at("connections")[0];
    for (const std::string& name : kCounterNames) {
      EXPECT_TRUE(connection.at("counters").contains(name)) << name;
    }
    EXPECT_EQ(connection.at("counters").at("calls"), kCalls);
    EXPECT_EQ(connection.at("unanswered_calls"), 0u);
  }
  EXPECT_EQ(channel.at("counters").at("credits_granted"),
            peers_.channel->counters().credits_granted);
  EXPECT_GT(channel.at("counters").at("credits_granted"), 0u);

  const json& channel_connection = channel.at("connections")[0];
  EXPECT_EQ(channel_connection.at("id"), 1u);
  ExpectSettled(channel_connection.at("settled"),
                peers_.channel->connection_info());
  ExpectHistogram(channel_connection.at("call_rtt"), kCalls);
  ExpectHistogram(channel_connection.at("reply_time"), 0);

  const json& server_connection = server.at("connections")[0];
  const ConnectionId id = peers_.server->metrics().connections.at(0).connection;
  EXPECT_EQ(server_connection.at("id"), id.value());
  auto server_info = peers_.server->connection_info(id);
  ASSERT_TRUE(server_info.ok()) << server_info.status();
  ExpectSettled(server_connection.at("settled"), *server_info);
  ExpectHistogram(server_connection.at("call_rtt"), 0);
  ExpectHistogram(server_connection.at("reply_time"), kCalls);
}

TEST_F(PrometheusStatus, HtmlOverHttpShowsSourcesConnectionsAndCharts) {
  const std::string response = test::HttpGet(exporter_->port(), "/status");
  ASSERT_EQ(test::StatusLine(response), "HTTP/1.1 200 OK") << response;
  EXPECT_TRUE(absl::StrContains(Headers(response),
                                "content-type: text/html; charset=utf-8"));
  EXPECT_TRUE(absl::StrContains(Headers(response),
                                "content-security-policy: default-src 'none'; "
                                "style-src 'unsafe-inline'"))
      << Headers(response);
  const std::string html = test::OkBody(response);
  EXPECT_TRUE(absl::StartsWith(html, "<!DOCTYPE html>"));
  EXPECT_TRUE(absl::StrContains(html, "data-role=\"server\"")) << html;
  EXPECT_TRUE(absl::StrContains(html, "data-role=\"channel\""));
  EXPECT_TRUE(absl::StrContains(
      html,
      absl::StrCat("<code class=\"uri\">", peers_.server->uri(), "</code>")));
  EXPECT_TRUE(absl::StrContains(html, "<span class=\"label\">peer=s1</span>"));
  const ConnectionInfo info = peers_.channel->connection_info();
  EXPECT_TRUE(absl::StrContains(
      html,
      absl::StrCat("<tr><th>version</th><td>", info.version, "</td></tr>")));
  EXPECT_TRUE(absl::StrContains(
      html, absl::StrCat("<tr><th>send threshold</th><td>", info.send_threshold,
                         " octets</td></tr>")));
  EXPECT_TRUE(absl::StrContains(
      html,
      absl::StrCat("<tr><th>remote invalidation</th><td>",
                   info.remote_invalidation ? "yes" : "no", "</td></tr>")));
  EXPECT_TRUE(absl::StrContains(html, "<tr><th>peer private data (RFC 8797)"));
  EXPECT_TRUE(absl::StrContains(
      html,
      absl::StrCat("<tr><th>credits_granted</th><td>",
                   peers_.channel->counters().credits_granted, "</td></tr>")));
  EXPECT_TRUE(absl::StrContains(
      html, absl::StrCat("data-counter=\"calls\"><th title=\"Forward calls "
                         "sent (channel) or received (server)\">calls</th><td>",
                         kCalls, "</td>")));
  // The Channel's round trips and the Server's reply times, one chart each
  // per connection, with bars for the buckets that have samples.
  EXPECT_TRUE(absl::StrContains(
      html, absl::StrCat("data-histogram=\"call_rtt\"><figcaption>Call round "
                         "trip (calls this side made): ",
                         kCalls, " calls, mean ")));
  EXPECT_TRUE(absl::StrContains(html, "<svg class=\"histogram\""));
  EXPECT_TRUE(absl::StrContains(html, "<rect class=\"bar\" data-bucket=\""));
}

// An application's labels and URIs are shown as text: markup in them
// never becomes an element or attribute of the page, nor breaks the JSON.
TEST_F(PrometheusStatus, HostileLabelsAreEscapedInHtmlAndJson) {
  const std::string html = exporter_->StatusPage();
  EXPECT_FALSE(absl::StrContains(html, "<script")) << html;
  EXPECT_FALSE(absl::StrContains(html, "alert('x')"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<span class=\"label\">service=&lt;script&gt;alert(&#39;x&#39;)&lt;/"
      "script&gt;&amp;&quot;</span>"))
      << html;

  // Control characters and bytes that are not UTF-8 still give JSON that
  // parses: the former escaped, the latter as U+FFFD.
  exporter_->Unregister(*peers_.channel);
  ASSERT_TRUE(exporter_
                  ->Register(*peers_.channel,
                             {{"raw", std::string("a\n\x01\xff\xc3(b\\", 8)}})
                  .ok());
  const json status = json::parse(exporter_->StatusJson());
  EXPECT_EQ(status.at("sources")[0].at("labels").at("service"), kHostileLabel);
  EXPECT_EQ(status.at("sources")[1].at("labels").at("raw"),
            "a\n\x01\xEF\xBF\xBD\xEF\xBF\xBD(b\\");
}

TEST_F(PrometheusStatus, UnregisteredSourcesLeaveThePage) {
  exporter_->Unregister(*peers_.channel);
  exporter_->Unregister(*peers_.server);
  EXPECT_EQ(json::parse(exporter_->StatusJson()),
            json({{"sources", json::array()}}));
  EXPECT_TRUE(absl::StrContains(exporter_->StatusPage(),
                                "No Channel or Server is registered"));
}

TEST_F(PrometheusStatus, UnknownPathIsNotFoundAndUnknownFormatIsBadRequest) {
  for (const char* path : {"/status/", "/statusx", "/status.json", "/"}) {
    EXPECT_EQ(test::StatusLine(test::HttpGet(exporter_->port(), path)),
              "HTTP/1.1 404 Not Found")
        << path;
  }
  const std::string bad =
      test::HttpGet(exporter_->port(), "/status?format=xml");
  EXPECT_EQ(test::StatusLine(bad), "HTTP/1.1 400 Bad Request");
  EXPECT_TRUE(absl::StrContains(bad, "format must be html or json")) << bad;
  EXPECT_EQ(
      test::StatusLine(test::HttpGet(exporter_->port(), "/status?format=html")),
      "HTTP/1.1 200 OK");
}

// /status is served by the listener that serves /metrics, under its rules:
// GET (or HEAD) only, and a request larger than its buffer is refused.
TEST_F(PrometheusStatus, OnlyGetIsServedAndAnOversizedRequestIsRefused) {
  test::Socket s = test::ConnectFrom("127.0.0.1", exporter_->port());
  const std::string post =
      "POST /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Content-Length: 0\r\n\r\n";
  ASSERT_EQ(write(s.fd(), post.data(), post.size()),
            static_cast<ssize_t>(post.size()));
  char buffer[256] = {};
  pollfd p{s.fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_GT(read(s.fd(), buffer, sizeof buffer - 1), 0);
  EXPECT_EQ(test::StatusLine(buffer), "HTTP/1.1 405 Method Not Allowed");

  const std::string oversized =
      absl::StrCat("/status?format=json&pad=", std::string(64 * 1024, 'a'));
  const std::string response = test::HttpGet(exporter_->port(), oversized);
  EXPECT_EQ(test::StatusLine(response), "HTTP/1.1 414 URI Too Long")
      << response.substr(0, 200);
}

}  // namespace
}  // namespace rpcrdma
