// Echo over an installed rpcrdma: a Server on the software fabric (an
// abstract Unix socket), a Channel that calls it, and a check of the reply.
// Exits 0 when the reply is the echo of the call.
#include <rpcrdma/channel.h>
#include <rpcrdma/server.h>
#include <rpcrdma/xdr.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

// RFC 5531 call header words: xid, CALL, rpcvers 2, prog, vers, proc,
// AUTH_NONE credential and verifier.
constexpr size_t kCallHeaderSize = 40;
constexpr uint32_t kXid = 0x12345678;

}  // namespace

int main() {
  rpcrdma::config::TransportConfig config;
  // The handler answers with an accepted, successful reply (RFC 5531)
  // whose body is the call's arguments.
  auto server = rpcrdma::Server::Create(
      "soft+unix://@rpcrdma-consumer-" + std::to_string(getpid()), config,
      [](rpcrdma::IncomingCall call, rpcrdma::Responder responder) {
        rpcrdma::HandlerReply reply;
        // Appending to a vector, an XdrWriter's writes cannot fail.
        rpcrdma::XdrWriter header(&reply.xdr);
        for (uint32_t word : {call.xid, 1u, 0u, 0u, 0u, 0u}) {
          (void)header.WriteUint32("reply header", word);
        }
        reply.xdr.insert(reply.xdr.end(),
                         call.message.begin() + kCallHeaderSize,
                         call.message.end());
        (void)responder.Send(std::move(reply));
      });
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto channel = rpcrdma::Channel::Create((*server)->uri(), config);
  if (!channel.ok()) {
    std::fprintf(stderr, "channel: %s\n", channel.status().ToString().c_str());
    return 1;
  }

  const std::vector<uint8_t> arguments = {0, 0, 0, 4, 'e', 'c', 'h', 'o'};
  rpcrdma::CallRequest request;
  rpcrdma::XdrWriter call_header(&request.xdr);
  for (uint32_t word : {kXid, 0u, 2u, 0x20000099u, 1u, 1u, 0u, 0u, 0u, 0u}) {
    (void)call_header.WriteUint32("call header", word);
  }
  request.xdr.insert(request.xdr.end(), arguments.begin(), arguments.end());
  request.max_reply_size = 1024;
  absl::StatusOr<rpcrdma::Reply> reply =
      (*channel)->Call(std::move(request)).get();
  if (!reply.ok()) {
    std::fprintf(stderr, "call: %s\n", reply.status().ToString().c_str());
    return 1;
  }
  std::vector<uint8_t> expected;
  rpcrdma::XdrWriter expected_header(&expected);
  for (uint32_t word : {kXid, 1u, 0u, 0u, 0u, 0u}) {
    (void)expected_header.WriteUint32("reply header", word);
  }
  expected.insert(expected.end(), arguments.begin(), arguments.end());
  if (reply->xdr != expected) {
    std::fprintf(stderr, "reply: %zu octets, not the echo of the call\n",
                 reply->xdr.size());
    return 1;
  }
  std::printf("echo over %s: ok\n", (*server)->uri().c_str());
  return 0;
}
