// The URIs of the public API go through one HOST:PORT parser
// (plugin/fabric/address.h) shared with both fabrics: host names resolve,
// IPv4 and bracketed IPv6 literals work, and every malformed authority is
// INVALID_ARGUMENT naming what is wrong — at Create, before any fabric is
// touched (a bad port used to surface from the fabric as UNAVAILABLE).
#include <unistd.h>

#include <future>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "plugin/api/connection.h"
#include "plugin/fabric/address.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"

namespace rpcrdma {
namespace {

using api_internal::ParsedUri;
using api_internal::ParseUri;

TEST(HostPort, ParsesNamesIpv4AndBracketedIpv6) {
  absl::StatusOr<fabric::HostPort> v4 =
      fabric::ParseHostPort("192.0.2.1:20049");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "192.0.2.1");
  EXPECT_EQ(v4->port, 20049);
  EXPECT_FALSE(v4->ipv6_literal);
  absl::StatusOr<fabric::HostPort> v6 =
      fabric::ParseHostPort("[fe80::1]:20049");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "fe80::1");
  EXPECT_TRUE(v6->ipv6_literal);
  absl::StatusOr<fabric::HostPort> name = fabric::ParseHostPort("localhost:0");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->host, "localhost");
  EXPECT_EQ(name->port, 0);
  EXPECT_EQ(fabric::FormatHostPort("::1", 7), "[::1]:7");
  EXPECT_EQ(fabric::FormatHostPort("host", 7), "host:7");
}

TEST(HostPort, RejectsMalformedAuthoritiesPrecisely) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},
      {"127.0.0.1", "has no port"},
      {"127.0.0.1:", "has an empty port"},
      {"127.0.0.1:http", "port \"http\" is not a number"},
      {"127.0.0.1:-1", "port \"-1\" is not a number"},
      {"127.0.0.1:+5", "port \"+5\" is not a number"},
      {"127.0.0.1:65536", "port 65536 is out of range 0..65535"},
      {"127.0.0.1:99999999999", "out of range 0..65535"},
      {":80", "has no host"},
      {"::1:80", "an IPv6 address needs brackets"},
      {"[::1:80", "no closing ']'"},
      {"[::1]80", "expected :PORT after the bracketed IPv6 address"},
      {"[]:80", "the IPv6 literal is empty"},
      {"[127.0.0.1]:80", "\"127.0.0.1\" is not an IPv6 address"},
      {"bad host:80", "\"bad host\" is neither an IPv4 address nor a host"},
  };
  for (const auto& [text, reason] : cases) {
    absl::StatusOr<fabric::HostPort> r = fabric::ParseHostPort(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(absl::StrContains(r.status().message(), reason))
        << text << ": " << r.status();
  }
}

TEST(HostPort, ResolvesNamesAndLiterals) {
  absl::StatusOr<fabric::ResolvedAddress> v4 =
      fabric::ResolveHostPort({"127.0.0.1", 5, false}, false);
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->family, AF_INET);
  absl::StatusOr<fabric::ResolvedAddress> v6 =
      fabric::ResolveHostPort({"::1", 5, true}, false);
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->family, AF_INET6);
  absl::StatusOr<fabric::ResolvedAddress> name =
      fabric::ResolveHostPort({"localhost", 5, false}, false);
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_TRUE(name->family == AF_INET || name->family == AF_INET6);
}

TEST(ParseUri, OneParserForEveryScheme) {
  absl::StatusOr<ParsedUri> tcp6 = ParseUri("soft+tcp://[::1]:0");
  ASSERT_TRUE(tcp6.ok()) << tcp6.status();
  EXPECT_EQ(tcp6->fabric, config::TransportConfig::SOFT_TCP);
  EXPECT_EQ(tcp6->address, "tcp:[::1]:0");
  absl::StatusOr<ParsedUri> rdma6 = ParseUri("rdma://[fe80::1]:20049");
  ASSERT_TRUE(rdma6.ok()) << rdma6.status();
  EXPECT_EQ(rdma6->fabric, config::TransportConfig::VERBS);
  EXPECT_EQ(rdma6->address, "[fe80::1]:20049");
  absl::StatusOr<ParsedUri> named = ParseUri("soft+tcp://localhost:0");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->address, "tcp:localhost:0");
  absl::StatusOr<ParsedUri> bad = ParseUri("rdma://[fe80::1]:port");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "uri \"rdma://[fe80::1]:port\": address \"[fe80::1]:port\": port "
            "\"port\" is not a number");
}

// a bad port was UNAVAILABLE from Server::Create.
TEST(ApiUri, BadPortIsInvalidArgumentNotUnavailable) {
  config::TransportConfig c;
  for (const char* uri :
       {"soft+tcp://127.0.0.1:http", "soft+tcp://127.0.0.1:70000",
        "soft+tcp://127.0.0.1:", "soft+tcp://[::1]"}) {
    auto server = Server::Create(uri, c, [](IncomingCall, Responder) {});
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument)
        << uri << ": " << server.status();
    auto channel = Channel::Create(uri, c);
    EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument)
        << uri << ": " << channel.status();
  }
}

// Without an RDMA device rdma:// cannot work at all: the error says so, how
// to check, and which URIs run without one (not UNAVAILABLE, which would
// suggest trying again).
TEST(ApiUri, RdmaWithoutADeviceSaysSoAndWhatRunsWithoutOne) {
  if (access("/dev/infiniband/rdma_cm", F_OK) == 0) {
    GTEST_SKIP() << "this host has RDMA devices";
  }
  config::TransportConfig c;
  auto channel = Channel::Create("rdma://127.0.0.1:20049", c);
  auto server =
      Server::Create("rdma://127.0.0.1:0", c, [](IncomingCall, Responder) {});
  for (const absl::Status& status : {channel.status(), server.status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "no RDMA device"))
        << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "ibv_devices")) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "soft+tcp://")) << status;
  }
}

void ExpectRoundTrip(const std::string& listen, const std::string& uri_prefix,
                     const std::string& connect_host) {
  config::TransportConfig c;
  auto server = Server::Create(listen, c, [](IncomingCall call, Responder r) {
    HandlerReply reply;
    reply.xdr.assign(call.message.begin(), call.message.begin() + 4);
    EXPECT_TRUE(r.Send(std::move(reply)).ok());
  });
  ASSERT_TRUE(server.ok()) << listen << ": " << server.status();
  const std::string uri = (*server)->uri();
  ASSERT_TRUE(absl::StartsWith(uri, uri_prefix)) << uri;
  const std::string port = uri.substr(uri.rfind(':') + 1);
  const std::string target =
      absl::StrCat("soft+tcp://", connect_host, ":", port);
  auto channel = Channel::Create(target, c);
  ASSERT_TRUE(channel.ok()) << target << ": " << channel.status();
  CallRequest req;
  req.xdr = test::MinimalCallStream(0xABCD);
  req.max_reply_size = 64;
  auto f = (*channel)->Call(std::move(req));
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  absl::StatusOr<Reply> r = f.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->xdr, (std::vector<uint8_t>{0, 0, 0xAB, 0xCD}));
}

TEST(ApiUri, SoftTcpOverIpv6Loopback) {
  ExpectRoundTrip("soft+tcp://[::1]:0", "soft+tcp://[::1]:", "[::1]");
}

TEST(ApiUri, SoftTcpByHostName) {
  absl::StatusOr<fabric::ResolvedAddress> local =
      fabric::ResolveHostPort({"localhost", 0, false}, true);
  ASSERT_TRUE(local.ok()) << local.status();
  ExpectRoundTrip(
      "soft+tcp://localhost:0",
      local->family == AF_INET6 ? "soft+tcp://[::1]:" : "soft+tcp://127.0.0.1:",
      "localhost");
}

}  // namespace
}  // namespace rpcrdma
