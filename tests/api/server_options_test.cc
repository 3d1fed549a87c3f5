// What adapters build on besides calls: a Server's connection events
// (ServerOptions::on_connection), closing one connection
// (Server::Disconnect), reply items that lend the handler's memory
// (ReplyItem::Lent with HandlerReply::on_released), what a connection
// settled as either side sees it (Server::connection_info,
// ConnectionInfo::max_inline_reply) and the socket address of a URI
// (rpcrdma/address.h). Over the soft fabric on Unix-domain sockets and on
// TCP (label `soft`).
#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpcrdma/address.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "tests/api/call_stream.h"
#include "tests/testing/byte_vectors.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma {
namespace {

using test::ReplyHeader;

using std::chrono::milliseconds;
using std::chrono::seconds;

// Records every connection event; waits for a given number of them.
class EventLog {
 public:
  void Add(const ServerConnectionEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    cv_.notify_all();
  }
  std::vector<ServerConnectionEvent> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, seconds(10), [&] { return events_.size() >= n; });
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ServerConnectionEvent> events_;
};

std::string UnixUri(absl::string_view what) {
  static std::atomic<int> counter{0};
  return absl::StrCat("soft+unix://@rpcrdma-server-options-", what, "-",
                      ::rpcrdma::test::ProcessTag(), "-", counter++);
}

CallRequest NullCall(uint32_t xid) {
  CallRequest req;
  req.xdr = test::MinimalCallStream(xid);
  req.max_reply_size = 64;
  return req;
}

void EchoNull(IncomingCall call, Responder responder) {
  EXPECT_TRUE(responder.Send(HandlerReply(ReplyHeader(call.xid))).ok());
}

TEST(ServerConnectionEvents, AcceptedBeforeTheFirstCallAndClosedOnce) {
  EventLog log;
  std::mutex mu;
  std::vector<ConnectionId> call_connections;
  size_t events_before_first_call = 0;
  ServerOptions options;
  options.on_connection = [&](const ServerConnectionEvent& e) { log.Add(e); };
  auto server = Server::Create(
      "soft+tcp://127.0.0.1:0", {},
      [&](IncomingCall call, Responder responder) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (call_connections.empty()) {
            events_before_first_call = log.WaitFor(1).size();
          }
          call_connections.push_back(call.connection);
        }
        EchoNull(std::move(call), std::move(responder));
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  ASSERT_TRUE((*channel)->Call(NullCall(7)).get().ok());
  channel->reset();  // an orderly disconnect by the client

  std::vector<ServerConnectionEvent> events = log.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events_before_first_call, 1u);
  EXPECT_EQ(events[0].type, ServerConnectionEvent::Type::kAccepted);
  EXPECT_TRUE(absl::StartsWith(events[0].peer, "soft+tcp://127.0.0.1:"))
      << events[0].peer;
  EXPECT_NE(events[0].peer, (*server)->uri());  // the client's own port
  EXPECT_EQ(events[1].type, ServerConnectionEvent::Type::kClosed);
  EXPECT_EQ(events[1].connection, events[0].connection);
  EXPECT_TRUE(events[1].status.ok()) << events[1].status;
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(call_connections.size(), 1u);
  EXPECT_EQ(call_connections[0], events[0].connection);
}

TEST(ServerConnectionEvents, UnixClientIsKnownByTheServerUri) {
  EventLog log;
  ServerOptions options;
  options.on_connection = [&](const ServerConnectionEvent& e) { log.Add(e); };
  auto server = Server::Create(UnixUri("peer"), {}, EchoNull, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  std::vector<ServerConnectionEvent> events = log.WaitFor(1);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].peer, (*server)->uri());
}

TEST(ServerConnectionEvents, IdleCloseNamesTheTimeout) {
  EventLog log;
  ServerOptions options;
  options.on_connection = [&](const ServerConnectionEvent& e) { log.Add(e); };
  config::TransportConfig server_config;
  server_config.mutable_timeouts()->set_idle_ms(100);
  auto server =
      Server::Create(UnixUri("idle"), server_config, EchoNull, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  // (The Channel connects again at once, channel.h, so a third event, its
  // next accept, may follow.)
  std::vector<ServerConnectionEvent> events = log.WaitFor(2);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[1].type, ServerConnectionEvent::Type::kClosed);
  EXPECT_EQ(events[1].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(events[1].status.message(), "idle for 100 ms"))
      << events[1].status;
}

TEST(ServerConnectionEvents, ServerGoingAwayClosesEveryConnection) {
  EventLog log;
  ServerOptions options;
  options.on_connection = [&](const ServerConnectionEvent& e) { log.Add(e); };
  auto server = Server::Create(UnixUri("away"), {}, EchoNull, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto a = Channel::Create((*server)->uri(), {});
  auto b = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(a.ok() && b.ok());
  log.WaitFor(2);
  server->reset();
  std::vector<ServerConnectionEvent> events = log.WaitFor(4);
  ASSERT_EQ(events.size(), 4u);
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(events[i].type, ServerConnectionEvent::Type::kClosed);
    EXPECT_TRUE(events[i].status.ok()) << events[i].status;
  }
}

// Server::Disconnect closes one connection, as a socket server closes a
// client: its pending call fails at the client, the others go on.
TEST(ServerDisconnect, ClosesOneConnectionNamingTheReason) {
  EventLog log;
  ServerOptions options;
  options.on_connection = [&](const ServerConnectionEvent& e) { log.Add(e); };
  std::mutex mu;
  std::vector<Responder> held;
  std::promise<ConnectionId> held_on;
  auto server = Server::Create(
      UnixUri("disconnect"), {},
      [&](IncomingCall call, Responder responder) {
        if (call.xid != 1)
          return EchoNull(std::move(call), std::move(responder));
        std::lock_guard<std::mutex> lock(mu);
        held.push_back(std::move(responder));
        held_on.set_value(call.connection);
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto closed = Channel::Create((*server)->uri(), {});
  auto other = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(closed.ok() && other.ok());
  std::future<absl::StatusOr<Reply>> pending = (*closed)->Call(NullCall(1));
  const ConnectionId connection = held_on.get_future().get();

  EXPECT_TRUE((*server)->Disconnect(connection, "garbage in a call").ok());
  absl::StatusOr<Reply> failed = pending.get();
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable)
      << failed.status();
  // (The Channel connects again at once, channel.h: its new connection's
  // kAccepted may come before or after.)
  std::optional<ServerConnectionEvent> gone;
  for (size_t n = 3; n <= 4 && !gone; ++n) {
    for (const ServerConnectionEvent& e : log.WaitFor(n)) {
      if (e.type == ServerConnectionEvent::Type::kClosed) gone = e;
    }
  }
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->connection, connection);
  EXPECT_EQ(gone->status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(gone->status.message(),
                                "closed by the server: garbage in a call"))
      << gone->status;
  EXPECT_EQ((*server)->Disconnect(connection, "again").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*server)->Disconnect(ConnectionId(987654), "unknown").code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE((*other)->Call(NullCall(2)).get().ok());
}

// A reply item lending the handler's memory reaches the caller's write
// chunk (RFC 8166 §3.4.7) unchanged, and on_released runs once, after the
// reply was sent.
TEST(BorrowedReplyItems, Rfc8166_3_4_7_LentMemoryIsWrittenThenReleasedOnce) {
  for (const char* base : {"soft+tcp://127.0.0.1:0", "unix"}) {
    SCOPED_TRACE(base);
    std::string uri =
        absl::string_view(base) == "unix" ? UnixUri("view") : base;
    std::vector<uint8_t> lent(200000);
    for (size_t i = 0; i < lent.size(); ++i) {
      lent[i] = static_cast<uint8_t>(i * 13 + 5);
    }
    std::atomic<int> released{0};
    auto server =
        Server::Create(uri, {}, [&](IncomingCall call, Responder responder) {
          std::vector<uint8_t> xdr = ReplyHeader(call.xid);
          const uint32_t position = static_cast<uint32_t>(xdr.size()) + 4;
          test::AppendWord(xdr, static_cast<uint32_t>(lent.size()));
          HandlerReply reply(std::move(xdr), {ReplyItem::Lent(position, lent)},
                             [&released] { ++released; });
          EXPECT_TRUE(responder.Send(std::move(reply)).ok());
        });
    ASSERT_TRUE(server.ok()) << server.status();
    auto channel = Channel::Create((*server)->uri(), {});
    ASSERT_TRUE(channel.ok()) << channel.status();
    std::vector<uint8_t> result(lent.size());
    CallRequest req = NullCall(11);
    req.results.push_back(absl::MakeSpan(result));
    absl::StatusOr<Reply> reply = (*channel)->Call(std::move(req)).get();
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->result_lengths.size(), 1u);
    EXPECT_EQ(reply->result_lengths[0], lent.size());
    EXPECT_TRUE(result == lent);
    for (int i = 0; i < 500 && released.load() == 0; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(released.load(), 1);
    EXPECT_EQ((*server)->counters().write_chunks, 1u);
  }
}

// A reply that can no longer go anywhere still returns the lent memory.
TEST(BorrowedReplyItems, DroppedRepliesAreReleased) {
  std::promise<Responder> held;
  auto server = Server::Create(UnixUri("dropped"), {},
                               [&](IncomingCall, Responder responder) {
                                 held.set_value(std::move(responder));
                               });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  CallRequest req = NullCall(12);
  req.deadline = std::chrono::steady_clock::now() + seconds(30);
  auto outcome = (*channel)->Call(std::move(req));
  Responder responder = held.get_future().get();
  channel->reset();  // the connection goes before the reply
  server->reset();   // and so does the Server

  std::atomic<int> released{0};
  std::vector<uint8_t> lent(64, 1);
  HandlerReply reply(ReplyHeader(12), {ReplyItem::Lent(28, lent)},
                     [&released] { ++released; });
  EXPECT_EQ(responder.Send(std::move(reply)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(released.load(), 1);  // at once, on this thread
}

// Both sides report the same settlement; the server finds it by the
// connection its calls come on.
TEST(ConnectionInfo, ServerSeesWhatTheChannelSettled) {
  std::promise<ConnectionId> connection;
  std::atomic<bool> once{false};
  auto server = Server::Create(
      UnixUri("info"), {}, [&](IncomingCall call, Responder responder) {
        if (!once.exchange(true)) {
          connection.set_value(call.connection);
        }
        (void)responder.Send(HandlerReply(ReplyHeader(call.xid)));
      });
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create((*server)->uri(), {});
  ASSERT_TRUE(channel.ok()) << channel.status();
  ASSERT_TRUE((*channel)->Call(NullCall(1)).get().ok());
  const ConnectionId id = connection.get_future().get();
  absl::StatusOr<ConnectionInfo> seen = (*server)->connection_info(id);
  ASSERT_TRUE(seen.ok()) << seen.status();
  const ConnectionInfo mine = (*channel)->connection_info();
  EXPECT_EQ(seen->version, mine.version);
  EXPECT_EQ(seen->send_threshold, mine.receive_threshold);
  EXPECT_EQ(seen->receive_threshold, mine.send_threshold);
  EXPECT_EQ((*server)
                ->connection_info(ConnectionId(id.value() + 1000))
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  channel->reset();
  for (int i = 0; i < 500 && (*server)->connections() != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ((*server)->connection_info(id).status().code(),
            absl::StatusCode::kNotFound);
}

// A Server whose replies are `reply_size` octets long at the time of each
// call (the reply header, zero-filled; never shorter than the header).
absl::StatusOr<std::unique_ptr<Server>> SizedReplyServer(
    absl::string_view what, const config::TransportConfig& config,
    const std::atomic<size_t>& reply_size) {
  return Server::Create(UnixUri(what), config,
                        [&reply_size](IncomingCall call, Responder responder) {
                          std::vector<uint8_t> xdr = ReplyHeader(call.xid);
                          xdr.resize(std::max(xdr.size(), reply_size.load()),
                                     0);
                          (void)responder.Send(HandlerReply(std::move(xdr)));
                        });
}

// RFC 8166 §3.5.4: a call whose max_reply_size is max_inline_reply is
// offered no reply chunk, and a reply of exactly that size still comes
// back inline; one octet more needs the reply chunk.
TEST(ConnectionInfo, Rfc8166_3_5_4_MaxInlineReplyIsExactlyWhatFitsInline) {
  for (auto policy :
       {config::TransportConfig::V1, config::TransportConfig::V2}) {
    SCOPED_TRACE(policy);
    config::TransportConfig c;
    c.set_version_policy(policy);
    std::atomic<size_t> reply_size{0};
    auto server = SizedReplyServer("inline", c, reply_size);
    ASSERT_TRUE(server.ok()) << server.status();
    auto channel = Channel::Create((*server)->uri(), c);
    ASSERT_TRUE(channel.ok()) << channel.status();
    const ConnectionInfo info = (*channel)->connection_info();
    // The smallest transport header: 28 octets in version one, 36 in two.
    EXPECT_EQ(info.max_inline_reply,
              info.receive_threshold - (info.version == 2 ? 36u : 28u));
    reply_size = info.max_inline_reply;
    CallRequest fits = NullCall(2);
    fits.max_reply_size = info.max_inline_reply;
    absl::StatusOr<Reply> r = (*channel)->BlockingCall(std::move(fits));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->xdr.size(), info.max_inline_reply);
    EXPECT_EQ((*channel)->counters().reply_chunks, 0u);
    reply_size = info.max_inline_reply + 4;
    CallRequest longer = NullCall(3);
    longer.max_reply_size = info.max_inline_reply + 4;
    r = (*channel)->BlockingCall(std::move(longer));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*channel)->counters().reply_chunks, 1u);
    EXPECT_EQ((*channel)->counters().long_replies, 1u);
  }
}

// A call that leaves max_reply_size unset accepts whatever comes back
// inline (RFC 8166 §3.5.4), so ordinary calls need no sizing; a longer
// reply fails naming the field to set.
TEST(ConnectionInfo, Rfc8166_3_5_4_UnsetMaxReplySizeAcceptsEveryInlineReply) {
  for (auto policy :
       {config::TransportConfig::V1, config::TransportConfig::V2}) {
    SCOPED_TRACE(policy);
    config::TransportConfig c;
    c.set_version_policy(policy);
    std::atomic<size_t> reply_size{0};
    auto server = SizedReplyServer("unset", c, reply_size);
    ASSERT_TRUE(server.ok()) << server.status();
    auto channel = Channel::Create((*server)->uri(), c);
    ASSERT_TRUE(channel.ok()) << channel.status();
    const ConnectionInfo info = (*channel)->connection_info();
    const auto unset = [](uint32_t xid) {
      CallRequest req = NullCall(xid);
      req.max_reply_size = 0;
      return req;
    };
    absl::StatusOr<Reply> r = (*channel)->BlockingCall(unset(2));
    ASSERT_TRUE(r.ok()) << r.status();
    reply_size = info.max_inline_reply;
    r = (*channel)->BlockingCall(unset(3));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->xdr.size(), info.max_inline_reply);
    reply_size = info.max_inline_reply + 4;
    r = (*channel)->BlockingCall(unset(4));
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(absl::StrContains(r.status().message(), "max_reply_size"))
        << r.status();
  }
}

TEST(ResolveUriAddress, EverySchemeNamesItsSocketAddress) {
  absl::StatusOr<SocketAddress> tcp =
      ResolveUriAddress("soft+tcp://127.0.0.1:2049");
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  ASSERT_EQ(tcp->storage.ss_family, AF_INET);
  EXPECT_EQ(tcp->length, sizeof(sockaddr_in));
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(tcp->get())->sin_port),
            2049);
  absl::StatusOr<SocketAddress> rdma = ResolveUriAddress("rdma://[::1]:20049");
  ASSERT_TRUE(rdma.ok()) << rdma.status();
  EXPECT_EQ(rdma->storage.ss_family, AF_INET6);
  absl::StatusOr<SocketAddress> path =
      ResolveUriAddress("soft+unix:///run/x.sock");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->storage.ss_family, AF_UNIX);
  EXPECT_STREQ(reinterpret_cast<const sockaddr_un*>(path->get())->sun_path,
               "/run/x.sock");
  absl::StatusOr<SocketAddress> abstract =
      ResolveUriAddress("soft+unix://@name");
  ASSERT_TRUE(abstract.ok()) << abstract.status();
  const auto* un = reinterpret_cast<const sockaddr_un*>(abstract->get());
  EXPECT_EQ(un->sun_path[0], '\0');
  EXPECT_EQ(abstract->length, offsetof(sockaddr_un, sun_path) + 5);
  EXPECT_EQ(ResolveUriAddress("tcp://h:1").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveUriAddress("rdma://1.2.3.4:port").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rpcrdma
