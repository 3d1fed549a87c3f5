#include "bench/hostile/attacks.h"

#include <thrift/protocol/TBinaryProtocol.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "Store.h"
#include "absl/strings/str_cat.h"
#include "bench/hostile/raw_calls.h"
#include "rpcrdma/thrift/rdma_socket.h"

namespace rpcrdma::bench::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using thrift::wire::Status;

// A call the server must refuse: any answer but THRIFT_OK (an error reply,
// or the connection ended) without a deadline expiring.
bool Refused(RawBridgeClient& client, const absl::StatusOr<Reply>& reply) {
  if (reply.status().code() == absl::StatusCode::kDeadlineExceeded) {
    return false;
  }
  return client.StatusOf(reply) != Status::kOk;
}

// Sends each of `calls` `rounds` times, each on a connection of its own
// (a refusal may end it).
std::string SendRefused(const std::string& uri,
                        const std::vector<std::vector<uint8_t>>& calls,
                        int rounds, const std::function<void()>& underway) {
  int sent = 0, refused = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const std::vector<uint8_t>& call : calls) {
      absl::StatusOr<std::unique_ptr<RawBridgeClient>> client =
          RawBridgeClient::Connect(uri);
      if (!client.ok()) continue;
      ++sent;
      if (Refused(**client, (*client)->Call(call))) ++refused;
    }
    if (round == 0) underway();
  }
  return absl::StrCat(refused, "/", sent, " refused");
}

std::string OversizedBinaryList(const std::string& uri,
                                const std::function<void()>& underway) {
  return SendRefused(uri, {ListHeaderCall("sizes", kThriftString, 0x7fffffffu)},
                     20, underway);
}

std::string TinyMessagesHugeClaims(const std::string& uri,
                                   const std::function<void()>& underway) {
  std::mt19937 random(8166);
  std::vector<std::vector<uint8_t>> calls = {
      ListHeaderCall("make", kThriftI32, 25'000'000u),
      ListHeaderCall("sizes", kThriftString, 26'000'000u)};
  for (int i = 0; i < 5; ++i) {
    std::vector<uint8_t> noise(200);
    for (uint8_t& octet : noise) octet = static_cast<uint8_t>(random());
    calls.push_back(std::move(noise));
  }
  return SendRefused(uri, calls, 10, underway);
}

std::string UnfetchedReplies(const std::string& uri,
                             const std::function<void()>& underway) {
  absl::StatusOr<std::unique_ptr<RawBridgeClient>> client =
      RawBridgeClient::Connect(uri);
  if (!client.ok())
    return absl::StrCat("connect failed: ", client.status().message());
  // As many calls as the server has workers, each answered THRIFT_DEFERRED
  // (no reply fits max_reply 0) and never fetched.
  int deferred = 0;
  const std::vector<uint8_t> small = EchoCall(100);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Reply> reply = (*client)->Call(small, /*max_reply=*/0);
    if ((*client)->StatusOf(reply) == Status::kDeferred) ++deferred;
  }
  underway();
  // Then more kept replies than a connection may hold.
  int kept = 0, refused = 0;
  const std::vector<uint8_t> large = EchoCall(2 << 20);
  for (int i = 0; i < 48; ++i) {
    absl::StatusOr<Reply> reply = (*client)->Call(large, /*max_reply=*/0);
    const std::optional<Status> status = (*client)->StatusOf(reply);
    if (status == Status::kDeferred) ++kept;
    if (status == Status::kRefused) ++refused;
  }
  return absl::StrCat(deferred, "/2 deferred; of 48 x 2 MiB ", kept, " kept, ",
                      refused, " refused");
}

std::string OnewayFlood(const std::string& uri,
                        const std::function<void()>& underway) {
  auto socket = std::make_shared<thrift::TRdmaSocket>(uri);
  socket->setRecvTimeout(60000);
  auto protocol =
      std::make_shared<apache::thrift::protocol::TBinaryProtocol>(socket);
  ::rpcrdma::test::StoreClient store(protocol);
  const std::string attachment(1 << 20, 'n');
  const Clock::time_point start = Clock::now();
  int sent = 0;
  try {
    socket->open();
    for (; sent < 500; ++sent) {
      // Each takes the handler 2 ms: they arrive faster than they are
      // served.
      store.note("flood", 2, attachment);
      if (sent == 10) underway();
    }
  } catch (const std::exception& e) {
    underway();
    return absl::StrCat(sent, " sent, then ", e.what());
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  return absl::StrCat(sent, " x 1 MiB sent in ",
                      static_cast<int>(seconds * 10) / 10.0, " s");
}

// `count` connections that never send a call; how many the server ended
// within `wait`.
std::string SilentConnections(const std::string& uri, int count,
                              std::chrono::milliseconds wait,
                              const std::function<void()>& underway) {
  std::vector<std::unique_ptr<RawBridgeClient>> silent;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::unique_ptr<RawBridgeClient>> client =
        RawBridgeClient::Connect(uri);
    if (client.ok()) silent.push_back(*std::move(client));
  }
  underway();
  const Clock::time_point until = Clock::now() + wait;
  int ended = 0;
  while (Clock::now() < until) {
    ended = 0;
    for (const auto& client : silent) ended += client->ended() ? 1 : 0;
    if (ended == std::ssize(silent)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::StrCat(silent.size(), "/", count, " connected, ", ended,
                      " ended by the server within ",
                      std::chrono::duration<double>(wait).count(), " s");
}

std::string SilentOnThreadPool(const std::string& uri,
                               const std::function<void()>& underway) {
  return SilentConnections(uri, 4, std::chrono::seconds(3), underway);
}

std::string SilentOnRdmaServer(const std::string& uri,
                               const std::function<void()>& underway) {
  return SilentConnections(uri, 219, std::chrono::seconds(6), underway);
}

// Two clients whose calls share XIDs and arguments (RFC 5531 §9: a
// client's XIDs identify only its own retransmissions).
std::string SharedXids(const std::string& uri,
                       const std::function<void()>& underway) {
  constexpr uint32_t kProgram = 0x2000816b, kVersion = 1, kCount = 1;
  absl::StatusOr<std::unique_ptr<Channel>> first = Channel::Create(uri, {});
  absl::StatusOr<std::unique_ptr<Channel>> second = Channel::Create(uri, {});
  if (!first.ok() || !second.ok()) return "connect failed";
  const std::vector<uint8_t> argument = Opaque(1000, 'a');
  int executed = 0, calls = 0;
  for (uint32_t xid = 0x5000; xid < 0x5000 + 200; ++xid) {
    absl::StatusOr<uint32_t> a = CallForUint(
        **first, OncCall(xid, kProgram, kVersion, kCount, argument));
    absl::StatusOr<uint32_t> b = CallForUint(
        **second, OncCall(xid, kProgram, kVersion, kCount, argument));
    ++calls;
    // The second call ran (it counted more calls) rather than getting the
    // first client's cached reply (the same count).
    if (a.ok() && b.ok() && *b > *a) ++executed;
    if (xid == 0x5000) underway();
  }
  return absl::StrCat(executed, "/", calls,
                      " second-client calls executed (a cached reply would "
                      "repeat the first's count)");
}

}  // namespace

std::vector<Attack> Attacks() {
  const std::string size_1 =
      absl::StrCat(ListHeaderCall("sizes", kThriftString, 0x7fffffffu).size());
  return {
      {absl::StrCat("1 list<binary> of 2^31-1 (", size_1, " octets) x20"),
       "killed TRdmaServer",
       {"rdma", "4"},
       OversizedBinaryList},
      {"2 tiny calls claiming 100-824 MB, 200 random octets x10",
       "108 MB / 824 MB / 1.2-1.5 GB allocated",
       {"rdma", "4"},
       TinyMessagesHugeClaims},
      {"3 replies deferred and never fetched (2 workers)",
       "both workers blocked",
       {"rdma", "2"},
       UnfetchedReplies},
      {"4 500 oneways of 1 MiB",
       "RSS 11 -> 500 MB in 0.3 s; legit call 4.8 s",
       {"rdma", "4"},
       OnewayFlood},
      {"5 4 silent connections, 4-thread TThreadPoolServer (recv 300 ms)",
       "server wedged",
       {"pool", "4", "300"},
       SilentOnThreadPool},
      {"5 219 silent connections, TRdmaServer (idle_ms 2000)",
       "220-connection limit filled",
       {"rdma", "4", "2000"},
       SilentOnRdmaServer},
      {"8 two ONC RPC clients, same XIDs and arguments",
       "second client got the first's cached reply",
       {"oncrpc"},
       SharedXids},
  };
}

}  // namespace rpcrdma::bench::hostile
