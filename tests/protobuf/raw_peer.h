// For the hostile tests' calls written by hand: a test server over
// soft+unix with a raw rpcrdma::Channel to it, and the RFC 5531 header of
// a raw call to one of its services.
#ifndef RPCRDMA_TESTS_PROTOBUF_RAW_PEER_H_
#define RPCRDMA_TESTS_PROTOBUF_RAW_PEER_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "rpcrdma/channel.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/rpc_msg.h"
#include "tests/protobuf/echo_service.h"

namespace rpcrdma::test {

// `raw` is null (with the failure reported) when either could not be made.
struct RawPeer {
  std::unique_ptr<TestServer> server;
  std::unique_ptr<::rpcrdma::Channel> raw;
};

inline RawPeer StartRawPeer() {
  RawPeer peer;
  peer.server = StartTestServer(TestUri("unix"));
  EXPECT_NE(peer.server, nullptr);
  if (peer.server == nullptr) return peer;
  absl::StatusOr<std::unique_ptr<::rpcrdma::Channel>> raw =
      ::rpcrdma::Channel::Create(peer.server->server->uri(), {});
  EXPECT_TRUE(raw.ok()) << raw.status();
  if (raw.ok()) peer.raw = *std::move(raw);
  return peer;
}

// A raw call of `procedure` of the service `service_full_name`: its RFC
// 5531 header, the body for the test to write after it.
inline CallRequest RawServiceCall(absl::string_view service_full_name,
                                  uint32_t xid, uint32_t procedure) {
  CallRequest call;
  CallHeader header;
  header.xid = xid;
  header.program = protobuf::ProgramNumberFor(service_full_name);
  header.version = protobuf::kProgramVersion;
  header.procedure = procedure;
  EXPECT_TRUE(EncodeCallHeader(header, call.xdr).ok());
  return call;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_RAW_PEER_H_
