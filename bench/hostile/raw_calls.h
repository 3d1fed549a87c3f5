// What hostile_figures' attackers send: Thrift messages no Thrift client
// would write (TBinaryProtocol, strict, built octet by octet), carried as
// the bridge's THRIFT_CALL (bridge/README.md) on a raw Channel of the
// public API, and ONC RPC calls written word by word (RFC 5531 §9).
#ifndef RPCRDMA_BENCH_HOSTILE_RAW_CALLS_H_
#define RPCRDMA_BENCH_HOSTILE_RAW_CALLS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bridge/wire/thrift_xdr.h"
#include "rpcrdma/channel.h"
#include "tests/thrift/raw_binary_protocol.h"

namespace rpcrdma::bench::hostile {

// The Thrift messages themselves (tests/thrift's, shared with the bridge's
// hostile tests).
using test::EchoCall;
using test::ListHeaderCall;
inline constexpr uint8_t kThriftI32 = test::kTypeI32;
inline constexpr uint8_t kThriftString = test::kTypeString;

// A client of the bridge's program on a Channel of its own.
class RawBridgeClient {
 public:
  static absl::StatusOr<std::unique_ptr<RawBridgeClient>> Connect(
      const std::string& uri);
  // THRIFT_CALL of `thrift`, accepting a reply of at most `max_reply`
  // octets; waits at most `seconds`.
  absl::StatusOr<Reply> Call(absl::Span<const uint8_t> thrift,
                             uint32_t max_reply = 64 * 1024, int seconds = 60);
  // The thrift_status of the last call's reply; nullopt when it failed.
  std::optional<thrift::wire::Status> StatusOf(
      const absl::StatusOr<Reply>& reply) const;
  // Whether the server has ended a connection of this client (the Channel
  // then connects again on its own, as a hostile peer would).
  bool ended() const {
    return !channel_->connected() || channel_->counters().reconnects > 0;
  }

 private:
  std::unique_ptr<Channel> channel_;
  uint32_t next_xid_ = 1;
};

// An RFC 5531 call of `procedure` of (`program`, `version`) with AUTH_NONE
// and `arguments` after it.
std::vector<uint8_t> OncCall(uint32_t xid, uint32_t program, uint32_t version,
                             uint32_t procedure,
                             const std::vector<uint8_t>& arguments);
// An XDR opaque<> of `length` octets, all `fill`.
std::vector<uint8_t> Opaque(uint32_t length, uint8_t fill);
// Sends `call` and returns the u_int of a successful reply.
absl::StatusOr<uint32_t> CallForUint(Channel& channel,
                                     std::vector<uint8_t> call);

}  // namespace rpcrdma::bench::hostile

#endif  // RPCRDMA_BENCH_HOSTILE_RAW_CALLS_H_
