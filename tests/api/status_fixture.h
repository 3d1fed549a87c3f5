// A Server and a Channel over the soft fabric (soft+unix://, an abstract
// socket) that have made calls, registered with a PrometheusExporter, for
// the tests of its /status page; and an HTTP GET of the exporter.
#ifndef RPCRDMA_TESTS_API_STATUS_FIXTURE_H_
#define RPCRDMA_TESTS_API_STATUS_FIXTURE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/config.pb.h"
#include "rpcrdma/prometheus.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/api/http_client.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

// Labels a hostile or careless application could give: markup, quotes
// and an ampersand, which the page must show as text.
inline const char kHostileLabel[] = "<script>alert('x')</script>&\"";

struct Peers {
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
};

// An echo Server and a Channel connected to it.
inline Peers Connect(const std::string& name) {
  static std::atomic<int> serial{0};
  config::TransportConfig config;
  auto server =
      Server::Create(absl::StrCat("soft+unix://@rpcrdma-status-", name, "-",
                                  test::ProcessTag(), "-", serial++),
                     config, [](IncomingCall call, Responder r) {
                       HandlerReply reply;
                       reply.xdr = test::ReplyHeader(call.xid);
                       (void)r.Send(std::move(reply));
                     });
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return {};
  auto channel = Channel::Create((*server)->uri(), config);
  EXPECT_TRUE(channel.ok()) << channel.status();
  if (!channel.ok()) return {};
  return {*std::move(server), *std::move(channel)};
}

// One call, waited for; false when it failed or took over 30 s.
inline bool CallOnce(Channel& channel, uint32_t xid) {
  CallRequest req;
  req.xdr = test::MinimalCallStream(xid);
  req.max_reply_size = 64;
  auto f = channel.Call(std::move(req));
  return f.wait_for(std::chrono::seconds(30)) == std::future_status::ready &&
         f.get().ok();
}

// The Server counts a reply when its Send is posted and records the reply
// time once the Send has completed: waits for `calls` of both.
inline bool WaitForServerReplies(const Server& server, uint64_t calls) {
  for (int i = 0; i < 500; ++i) {
    const Metrics m = server.metrics();
    if (m.counters.replies >= calls && m.connections.size() == 1 &&
        m.connections[0].reply_time.count() >= calls) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// GET `path` of 127.0.0.1:port: the whole response, "" on failure.
inline std::string HttpGet(uint16_t port, const std::string& path) {
  return test::Get(test::ConnectFrom("127.0.0.1", port), path);
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_API_STATUS_FIXTURE_H_
