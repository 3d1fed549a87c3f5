// The smallest RPC call stream a Server delivers (RFC 5531 §9: XID,
// msg_type CALL, rpcvers 2, program, version, procedure); shorter ones are
// dropped before any handler sees them (engine.h, RFC 8166 §4.1). And the
// accepted, successful reply header that answers it. And a Server with a
// Channel connected to it, as most API tests begin.
#ifndef RPCRDMA_TESTS_API_CALL_STREAM_H_
#define RPCRDMA_TESTS_API_CALL_STREAM_H_

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/server.h"
#include "rpcrdma/types.h"
#include "tests/testing/byte_vectors.h"
#include "tests/testing/process_tag.h"

namespace rpcrdma::test {

inline std::vector<uint8_t> MinimalCallStream(uint32_t xid) {
  return Words({xid, 0u, 2u, 0x20000000u, 1u, 0u});
}

// RFC 5531: XID, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
inline std::vector<uint8_t> ReplyHeader(uint32_t xid) {
  return Words({xid, 1u, 0u, 0u, 0u, 0u});
}

// A void call whose reply fits inline.
inline CallRequest NullCall(uint32_t xid) {
  CallRequest request;
  request.xdr = MinimalCallStream(xid);
  request.max_reply_size = 64;
  return request;
}

// An abstract Unix-domain URI no other test of this process uses.
inline std::string UniqueUnixUri(absl::string_view what) {
  static std::atomic<int> counter{0};
  return absl::StrCat("soft+unix://@rpcrdma-", what, "-",
                      ::rpcrdma::test::ProcessTag(), "-", counter++);
}

// A Server at `uri` answering with `handler`, and a Channel connected to
// it, both with `config`; or the status of the first that failed.
struct ServerAndChannel {
  std::unique_ptr<Server> server;
  std::unique_ptr<Channel> channel;
};
inline absl::StatusOr<ServerAndChannel> ServeAndConnect(
    absl::string_view uri, const config::TransportConfig& config,
    Server::Handler handler, ChannelOptions channel_options = {}) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Create(uri, config, std::move(handler));
  if (!server.ok()) return server.status();
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create((*server)->uri(), config, std::move(channel_options));
  if (!channel.ok()) return channel.status();
  return ServerAndChannel{*std::move(server), *std::move(channel)};
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_API_CALL_STREAM_H_
